"""Benchmark: the Dask executor against Serial.

1. Batch VMP on the Gaussian mixture (N points, K components, D dimensions): seconds per sweep
   (a step and its ELBO evaluation, as ``fit.run`` does them), serial vs ``--workers`` local
   worker processes (LocalCluster on 127.0.0.1, one thread each), bytes sent per sweep, the
   one-off costs (sending the model, gathering the locals at the end of a run), and the
   largest relative difference of the globals' natural parameters from Serial; then the same
   sweeps on ``vmp.Processes(--workers)``, a pool of processes without a cluster.
2. Per-step traffic against N: the bytes one batch sweep and one Minibatch step send, at two
   sizes of N (they should not grow with N).
3. With --lda (or --lda-only, which skips 1 and 2): stochastic LDA (Minibatch(--lda-batch) over
   documents) steps per second, serial vs workers, on the news corpus of benchmarks/bench_lda.py
   (or --synthetic): CPU per step in the driver (which hosts the LocalCluster's scheduler) and
   in the busiest worker, rounds of tasks and tasks per step, bytes sent and received per step,
   the one-off bytes sent to start the fit (the holders' models), and the cost of one round of
   empty tasks on this cluster.

    python benchmarks/bench_dask.py [--n 10000000] [--k 10] [--d 4] [--sweeps 3] [--workers 2] [--lda] [--heap]
    python benchmarks/bench_dask.py --lda-only [--synthetic] [--lda-steps 20] [--lda-batch 64]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import pickle
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from models import gaussian_mixture, lda  # noqa: E402
from _bench import FACTORIZED  # noqa: E402


def data(n: int, k: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = 5.0 * rng.normal(size=(k, d))
    return centers[rng.integers(k, size=n)] + rng.normal(size=(n, d))


def dask_cpu(executor) -> dict:
    return executor.client.run(time.process_time)


def processes_cpu(executor) -> dict:
    ask = executor.workers
    return dict(enumerate(ask.get([ask.run(i, time.process_time) for i in range(ask.count())])))


def sweeps(fit, count: int, executor=None, workers_cpu=dask_cpu) -> tuple[list, list, list]:
    """Seconds, bytes sent and CPU seconds (this process; the busiest worker) of each of
    ``count`` sweeps (step + evaluation)."""
    seconds, sent, cpu = [], [], []
    for _ in range(count):
        before = executor.traffic["sent"] if executor else 0
        work = workers_cpu(executor) if executor else {}
        t0, c0 = time.perf_counter(), time.process_time()
        fit.step()
        fit.evaluate()
        seconds.append(time.perf_counter() - t0)
        here = time.process_time() - c0
        if executor:
            after = workers_cpu(executor)
            cpu.append((here, max(after[k] - work[k] for k in after)))
        else:
            cpu.append((here, 0.0))
        sent.append((executor.traffic["sent"] - before) if executor else 0)
    return seconds, sent, cpu


def globals_difference(a, b, names) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))) / np.max(np.abs(y)))
               for n in names for x, y in zip(a.natural[n], b.natural[n]))


def mixture_bench(args, client) -> None:
    x = data(args.n, args.k, args.d)
    print(f"batch mixture: N={args.n:,}, K={args.k}, D={args.d}, {args.sweeps} sweeps after a warm-up sweep")
    model = gaussian_mixture(x, args.k, **FACTORIZED)
    fit = model.batch(seed=0, progress=False)
    sweeps(fit, 1)
    serial, _, serial_cpu = sweeps(fit, args.sweeps)
    serial_state = fit.state
    del fit, model

    model = gaussian_mixture(x, args.k, **FACTORIZED)
    executor = vmp.DaskExecutor(client)
    t0 = time.perf_counter()
    fit = model.batch(seed=0, progress=False, executor=executor)
    setup = time.perf_counter() - t0
    setup_sent = executor.traffic["sent"]
    sweeps(fit, 1, executor)
    dask, sent, dask_cpu = sweeps(fit, args.sweeps, executor)
    t0 = time.perf_counter()
    final = executor.finish(fit.state)
    gather = time.perf_counter() - t0
    diff = globals_difference(final, serial_state, ["pi", "mu", "Lambda"])
    s, w = float(np.median(serial)), float(np.median(dask))
    sc = float(np.median([c[0] for c in serial_cpu]))
    dc, wc = (float(np.median([c[i] for c in dask_cpu])) for i in (0, 1))
    print("| executor | seconds per sweep (median) | CPU s per sweep: driver | CPU s: busiest worker "
          "| bytes sent per sweep |")
    print("|---|---|---|---|---|")
    print(f"| Serial | {s:.2f} | {sc:.2f} | - | 0 |")
    print(f"| Dask, {args.workers} workers | {w:.2f} ({w / s:.2f}x serial) | {dc:.2f} | {wc:.2f} "
          f"| {int(np.median(sent)):,} |")
    print(f"one-off: fit start incl. initialization and the first bound {setup:.2f} s ({setup_sent:,} bytes: "
          f"the pickled model per partition and the initial locals); gathering the locals at the end "
          f"{gather:.2f} s; largest relative difference of the globals from Serial {diff:.1e}")
    del fit, model, final
    with vmp.Processes(args.workers) as pool:
        fit = gaussian_mixture(x, args.k, **FACTORIZED).batch(seed=0, progress=False, executor=pool)
        sweeps(fit, 1, pool, processes_cpu)
        local, _, local_cpu = sweeps(fit, args.sweeps, pool, processes_cpu)
        diff = globals_difference(pool.finish(fit.state), serial_state, ["pi", "mu", "Lambda"])
    p = float(np.median(local))
    pc, pw = (float(np.median([c[i] for c in local_cpu])) for i in (0, 1))
    print(f"| Processes, {args.workers} processes | {p:.2f} ({p / s:.2f}x serial) | {pc:.2f} | {pw:.2f} | - |"
          f" (largest relative difference of the globals from Serial {diff:.1e})")


def traffic_bench(client) -> None:
    print("per-step traffic against N (mixture, K=10, D=4):")
    print("| N | bytes sent per batch sweep | bytes sent per Minibatch(100) step |")
    print("|---|---|---|")
    for n in (10**4, 10**5):
        x = data(n, 10, 4)
        ex = vmp.DaskExecutor(client)
        fit = gaussian_mixture(x, 10, **FACTORIZED).batch(seed=0, progress=False, executor=ex)
        sweeps(fit, 1, ex)
        _, batch, _ = sweeps(fit, 2, ex)
        ex2 = vmp.DaskExecutor(client)
        fit2 = gaussian_mixture(x, 10, **FACTORIZED).stochastic(subsample=vmp.Minibatch("data", 100), evaluate_every=0, seed=0,
                                                  progress=False, executor=ex2)
        fit2.step()
        before = ex2.traffic["sent"]
        for _ in range(3):
            fit2.step()
        print(f"| {n:,} | {int(np.median(batch)):,} | {(ex2.traffic['sent'] - before) // 3:,} |")


def lda_bench(args, client) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_lda import news_corpus, synthetic_corpus, triples

    corpus = (synthetic_corpus(20, 2000, 3000, np.random.default_rng(0)) if args.synthetic
              else news_corpus(2000))
    d, w, c = triples(corpus)
    print(f"stochastic LDA: {corpus.shape[0]} documents, {corpus.shape[1]} words, K=20, Minibatch({args.lda_batch}), "
          f"{args.lda_steps} steps")
    rows, states = [], []
    for name, executor in (("Serial", None), (f"Dask, {args.workers} workers", vmp.DaskExecutor(client))):
        model = lda(d, w, c, 20, n_documents=corpus.shape[0], n_words=corpus.shape[1])
        fit = model.stochastic(subsample=vmp.Minibatch("documents", args.lda_batch), evaluate_every=0, seed=0,
                               progress=False, executor=executor)
        fit.step()
        if executor:
            start = (executor.traffic["sent"], sum(len(b) for b in executor._blobs), len(pickle.dumps(model)))
        before = dict(executor.traffic) if executor else {}
        work = executor.client.run(time.process_time) if executor else {}
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.lda_steps):
            fit.step()
        rate = args.lda_steps / (time.perf_counter() - t0)
        here = (time.process_time() - c0) / args.lda_steps
        busiest = 0.0
        if executor:
            after = executor.client.run(time.process_time)
            busiest = max(after[k] - work[k] for k in after) / args.lda_steps
        sent, received, rounds, tasks = ((executor.traffic.get(k, 0) - before.get(k, 0)) / args.lda_steps
                                         if executor else 0 for k in ("sent", "received", "rounds", "tasks"))
        rows.append(f"| {name} | {rate:.1f} | {1000 * here:.1f} | {1000 * busiest:.1f} | {rounds:g} | {tasks:g} "
                    f"| {int(sent):,} | {int(received):,} |")
        states.append(fit.state)
        if executor:
            overhead = null_round(executor)
    print("| executor | steps per second | CPU ms per step: driver | CPU ms: busiest worker | rounds of tasks "
          "per step | tasks per step | bytes sent per step | bytes received per step |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"largest relative difference of beta from Serial after {args.lda_steps + 1} steps: "
          f"{globals_difference(states[1], states[0], ['beta']):.1e}")
    print(f"one-off: {start[0]:,} bytes sent to start the fit and run its first step, of which the holders' "
          f"models {start[1]:,} (the whole model pickles to {start[2]:,} bytes)")
    print(f"a round of empty tasks (one per partition, reading its holder; gathered): {overhead[0]:.1f} ms wall, "
          f"{overhead[1]:.1f} ms CPU in the driver (median of 20)")


def _nothing(holder) -> int:
    return 0


def null_round(executor) -> tuple[float, float]:
    """Median wall and driver-CPU milliseconds of one round of tasks that do nothing: the cost
    of a round on this cluster, whatever the tasks compute."""
    wall, cpu = [], []
    for _ in range(20):
        t0, c0 = time.perf_counter(), time.process_time()
        executor.client.gather([executor.client.submit(_nothing, h, pure=False) for h in executor._holders])
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return 1000 * float(np.median(wall)), 1000 * float(np.median(cpu))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, default in (("--n", 10**7), ("--k", 10), ("--d", 4), ("--sweeps", 3), ("--workers", 2),
                          ("--lda-steps", 20), ("--lda-batch", 64)):
        ap.add_argument(flag, type=int, default=default)
    for flag in ("--lda", "--synthetic", "--lda-only"):
        ap.add_argument(flag, action="store_true")
    ap.add_argument("--heap", action="store_true",
                    help="vmp.heap_for_arrays() in this process (Serial's sweeps) and its settings in the workers' "
                         "environment from their start (vmp.inference.heap.worker_environ(): Dask's defaults, one "
                         "BLAS thread per worker, kept)")
    args = ap.parse_args(argv)
    if args.heap:
        print(f"vmp.heap_for_arrays() in the driver: {vmp.heap_for_arrays()}")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        sys.exit("dask[distributed] is needed for this benchmark: pip install 'vmp[dask]'")
    print(f"{os.cpu_count()} cores; load average before: {os.getloadavg()[0]:.1f}")
    if args.heap:
        import dask

        from vmp.inference.heap import worker_environ

        dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()})
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client:
        if not args.lda_only:
            mixture_bench(args, client)
            traffic_bench(client)
        if args.lda or args.lda_only:
            lda_bench(args, client)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
