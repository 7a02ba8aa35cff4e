"""What two processes on this machine cost each other: the same numpy work timed in one process
alone and in two processes at once (started together behind a barrier), CPU seconds per
repetition (``time.process_time``; one BLAS thread each; ``vmp.heap_for_arrays()`` in each).

- ``cache``: arithmetic on a 16 kB array that stays in each core's L1/L2 cache (no memory
  traffic): slows down only if the two vCPUs share a physical core or the host's time;
- ``bandwidth``: z = x + y over arrays of ``rows`` x K float64 (three streams through memory, one
  addition per element: bounded by memory bandwidth alone);
- ``stream``: a pass over arrays of ``rows`` x K float64 (``rows`` = N/2 = 5 x 10^6, K = 10: the
  size of a Dask worker's q(z) at N = 10^7), exp and a sum per row as in q(z)'s moments;
- ``moments``: q(z)'s moments themselves (``Categorical.moments``) on those rows.

    python benchmarks/contention.py --rows 5000000 --k 10 --reps 5
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402


def _work(kind: str, rows: int, k: int):
    rng = np.random.default_rng(0)
    if kind == "cache":
        a = rng.normal(size=2048)
        out = np.empty_like(a)

        def run():
            for _ in range(20000):
                np.multiply(a, 1.0000001, out=out)
                np.add(out, a, out=out)
        return run
    x = rng.normal(size=(rows, k))
    if kind == "bandwidth":
        y, z = rng.normal(size=(rows, k)), np.empty((rows, k))

        def run():
            np.add(x, y, out=z)  # 3 x rows x K x 8 bytes through memory, one addition each
        return run
    if kind == "stream":
        def run():
            e = np.exp(x)
            return e / e.sum(axis=1, keepdims=True)
        return run
    from vmp.families import categorical

    def run():
        return categorical.Categorical.moments((x,))
    return run


def _timed(kind: str, rows: int, k: int, reps: int, barrier, out) -> None:
    from vmp.inference.heap import heap_for_arrays

    heap_for_arrays()  # freed arrays reused: no page faults in the timings
    run = _work(kind, rows, k)
    run()
    barrier.wait()
    times = []
    for _ in range(reps):
        c = time.process_time()
        run()
        times.append(time.process_time() - c)
    out.put(float(np.median(times)))


def measure(kind: str, rows: int, k: int, reps: int, processes: int) -> list[float]:
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(processes), ctx.Queue()
    ps = [ctx.Process(target=_timed, args=(kind, rows, k, reps, barrier, out)) for _ in range(processes)]
    for p in ps:
        p.start()
    res = [out.get() for _ in ps]
    for p in ps:
        p.join()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kinds", default="cache,bandwidth,stream,moments")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; rows = {a.rows:,}, K = {a.k} ({a.rows * a.k * 8 / 1e6:.0f} MB per array); "
          f"load average before {os.getloadavg()[0]:.2f}")
    print("| work | CPU s per repetition, one process alone | each of two processes at once | ratio |")
    print("|---|---|---|---|")
    for kind in a.kinds.split(","):
        alone = measure(kind, a.rows, a.k, a.reps, 1)[0]
        both = measure(kind, a.rows, a.k, a.reps, 2)
        rate = f" ({3 * a.rows * a.k * 8 / 1e9 / alone:.1f} GB/s alone, {3 * a.rows * a.k * 8 / 1e9 / max(both):.1f} each together)" \
            if kind == "bandwidth" else ""
        print(f"| {kind}{rate} | {alone:.3f} | {both[0]:.3f}, {both[1]:.3f} | {max(both) / alone:.2f}x |")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
