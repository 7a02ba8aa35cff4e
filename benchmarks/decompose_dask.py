"""Where a Dask worker's batch sweep goes, against Serial on the same rows: the batch mixture
(K components, D dimensions) swept by

1. Serial on the first N/2 rows, in this process;
2. ONE Dask worker holding those N/2 rows (a 1-worker LocalCluster: the same model and data);
3. two workers on all N rows (N/2 each), as ``bench_dask.py``.

Per sweep (a step and its bound, median of ``--sweeps`` after a warm-up sweep): wall seconds,
CPU seconds of this process (Serial) or of the busiest worker (``time.process_time`` there), and
the involuntary context switches of that process, for the workers the compute time of each kind of task from Dask's task stream (the worker's
CPU outside its tasks is Dask's own: messages, heartbeats, (de)serialization), plus the
worker's BLAS threads as its environment sets them.

    OMP_NUM_THREADS=1 python benchmarks/decompose_dask.py --n 10000000 --sweeps 6 --heap
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from bench_dask import data  # noqa: E402  (the same points as bench_dask.py)
from models import gaussian_mixture  # noqa: E402


def _environ() -> dict:
    return {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MALLOC_ARENA_MAX")}


def _usage() -> tuple[float, int]:
    """(CPU seconds, involuntary context switches: times the kernel took the core away) of this
    process."""
    import resource

    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def timed(x: np.ndarray, k: int, count: int, client=None) -> dict:
    """Median wall and CPU seconds per sweep, and per kind of task its median compute seconds per
    sweep on the busiest worker."""
    executor = vmp.DaskExecutor(client) if client else None
    fit = gaussian_mixture(x, k).batch(seed=0, progress=False, executor=executor)
    fit.step()
    fit.evaluate()
    wall, cpu, tasks, switches = [], [], [], []
    for _ in range(count):
        work = client.run(_usage) if client else _usage()
        t0, c0 = time.perf_counter(), time.process_time()
        with (_Stream(client) if client else _Nothing()) as s:
            fit.step()
            fit.evaluate()
        wall.append(time.perf_counter() - t0)
        if client:
            after = client.run(_usage)
            busiest = max(after, key=lambda w: after[w][0] - work[w][0])
            cpu.append(after[busiest][0] - work[busiest][0])
            switches.append(after[busiest][1] - work[busiest][1])
            per = collections.Counter()
            for t in s.data:
                if t.get("worker") != busiest:
                    continue
                for ss in t["startstops"]:
                    key = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
                    per[f"{str(key).split('-')[0]}:{ss['action']}"] += ss["stop"] - ss["start"]
            tasks.append(per)
        else:
            cpu.append(time.process_time() - c0)
            switches.append(_usage()[1] - work[1])
    kinds = sorted({k for p in tasks for k in p})
    return {"wall": float(np.median(wall)), "cpu": float(np.median(cpu)), "switches": float(np.median(switches)),
            "tasks": {k: float(np.median([p.get(k, 0.0) for p in tasks])) for k in kinds}}


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class _Stream:
    """Dask's task stream over a block (``distributed.get_task_stream``)."""

    def __init__(self, client):
        from distributed import get_task_stream

        self._cm = get_task_stream(client)

    def __enter__(self):
        return self._cm.__enter__()

    def __exit__(self, *a):
        return self._cm.__exit__(*a)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, default in (("--n", 10**7), ("--k", 10), ("--d", 4), ("--sweeps", 6)):
        ap.add_argument(flag, type=int, default=default)
    ap.add_argument("--heap", action="store_true", help="as bench_dask.py --heap")
    ap.add_argument("--replace", action="store_true",
                    help="with --heap: the workers' environment is WORKER_ENVIRON alone, replacing Dask's defaults "
                         "(OMP_NUM_THREADS=1 ...), as bench_dask.py did before worker_environ()")
    ap.add_argument("--only", default="serial,one,two", help="which of serial,one,two to run")
    args = ap.parse_args(argv)
    import dask
    from dask.distributed import Client, LocalCluster

    if args.heap:
        from vmp.inference.heap import WORKER_ENVIRON, worker_environ

        print(f"vmp.heap_for_arrays() here: {vmp.heap_for_arrays()}")
        dask.config.set({"distributed.nanny.pre-spawn-environ": WORKER_ENVIRON if args.replace else worker_environ()})
    print(f"N = {args.n:,}, K = {args.k}, D = {args.d}; {args.sweeps} sweeps after a warm-up; this process {_environ()}; "
          f"load average before {os.getloadavg()[0]:.2f}")
    x = data(args.n, args.k, args.d)
    half = x[: args.n // 2].copy()
    rows = []
    only = args.only.split(",")
    if "serial" in only:
        rows.append(("Serial, N/2 rows", timed(half, args.k, args.sweeps)))
    for label, workers, xs in (("one", 1, half), ("two", 2, x)):
        if label not in only:
            continue
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
            env = client.run(_environ)
            rows.append((f"Dask, {workers} worker(s), N/2 rows each", timed(xs, args.k, args.sweeps, client)))
            print(f"{label}: worker environment {next(iter(env.values()))}")
    print("| run | wall s per sweep | CPU s (busiest process) | tasks' compute s on it | its CPU outside tasks "
          "| its involuntary context switches |")
    print("|---|---|---|---|---|---|")
    for label, r in rows:
        busy = sum(v for k, v in r["tasks"].items() if k.endswith(":compute"))
        print(f"| {label} | {r['wall']:.3f} | {r['cpu']:.3f} | {busy:.3f} | {r['cpu'] - busy if r['tasks'] else 0:.3f} "
              f"| {r['switches']:.0f} |")
    for label, r in rows:
        if r["tasks"]:
            print(f"{label}: " + ", ".join(f"{k} {v:.3f}" for k, v in r["tasks"].items() if v > 0.0005))
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
