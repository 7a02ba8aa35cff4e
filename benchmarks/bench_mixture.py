"""Benchmark: batch VMP on the Bayesian Gaussian mixture against scikit-learn.

Synthetic data: N points from K seeded Gaussian clusters in D dimensions. For each D, each
configuration runs in its own subprocess (so peak memory figures do not mix):

* ``vmp``             models.gaussian_mixture(x, K, **FACTORIZED).fit(iterations=I, tol=0) (benchmarks/_bench.py)
* ``sklearn-random``  BayesianGaussianMixture(K, covariance_type='full',
                      weight_concentration_prior_type='dirichlet_distribution',
                      max_iter=I, tol=0, n_init=1, init_params='random')
* ``sklearn-kmeans``  the same with init_params='kmeans'

Timing runs measure wall time of the whole fit (total / iterations, as both libraries include
their initialization in fit; the fastest of --repeat fits in each of --rounds processes per
configuration, the methods alternating, as the machine may be shared) and
peak RSS (resource.getrusage maxrss); separate tracemalloc runs measure the peak of traced
(numpy + Python) allocations during the fit. For vmp, one sweep is
also timed by hand, node by node, after the fit; for scikit-learn the marginal cost of an
iteration is (t(max_iter=I) - t(max_iter=1)) / (I - 1).

The script ends with the ratios against the anchors measured in the same run: vmp's time per
iteration over scikit-learn's (wall and CPU time; goal 0.35), vmp's over the arithmetic floor
(goal at most 5 at D = 8), and the traced peaks (goal at most 1.5). The floor is the flop count
of one iteration, 4NKD^2 (x^T E[Lambda_k] x for every n, k and sum_n r_nk x x^T) + 4NKD
(x^T E[Lambda_k mu_k] and sum_n r_nk x) + 6NK (responsibilities), divided by the rate of a
large matrix product (dgemm, 2n^3 flops per CPU second) timed in the same run on the same BLAS
threads, and compared with vmp's CPU time per iteration (wall time under a shared load would
count the waits). BLAS runs on --threads threads in every process (default 1: on a shared
machine a multithreaded BLAS stalls on descheduled threads).

    python benchmarks/bench_mixture.py                      # N=100000, K=10, D=2 and 8, 20 iterations
    python benchmarks/bench_mixture.py --n 20000 --dims 2 --iterations 10
    python benchmarks/bench_mixture.py --methods vmp --heap   # with the allocator opt-in, vmp.heap_for_arrays()
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _bench import FACTORIZED, best_cpu, limit_threads, mixture_arguments, sweep_by_hand  # noqa: E402

METHODS = ("vmp", "sklearn-random", "sklearn-kmeans")
CPU: list = []  # CPU seconds of each fit of this process, in order


def require_sklearn():
    try:
        import sklearn  # noqa: F401
        from sklearn.mixture import BayesianGaussianMixture
    except ImportError:
        sys.exit("bench_mixture.py: scikit-learn is needed for the comparison; "
                 "install it with `pip install scikit-learn` (or `pip install vmp[bench]`)")
    return BayesianGaussianMixture


def make_data(n: int, k: int, d: int, seed: int):
    """K clusters with centres ~ N(0, 4^2 I), unit-ish random covariances, random weights."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, d))
    weights = rng.dirichlet(np.full(k, 5.0))
    chol = np.eye(d) + 0.3 * rng.normal(size=(k, d, d)) / np.sqrt(d)
    z = rng.choice(k, size=n, p=weights)
    x = centres[z] + np.einsum("nij,nj->ni", chol[z], rng.normal(size=(n, d)))
    return x, centres


def centres_found(centres: np.ndarray, means: np.ndarray, radius: float = 0.5) -> int:
    dist = np.linalg.norm(centres[:, None, :] - means[None, :, :], axis=-1)
    return int(np.sum(dist.min(axis=1) < radius))


def flops_per_iteration(n: int, k: int, d: int) -> float:
    return 4.0 * n * k * d * d + 4.0 * n * k * d + 6.0 * n * k


def gemm_rate(size: int = 1500, repeat: int = 5) -> float:
    """Flops per CPU second of a size x size matrix product (the fastest of ``repeat``)."""
    a = np.random.default_rng(0).normal(size=(size, size))
    b = a.T.copy()
    return 2.0 * size**3 / best_cpu(lambda: a @ b, repeat)


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes


# ------------------------------------------------------------------------------------------
# worker: one configuration in this process
# ------------------------------------------------------------------------------------------

def fit_vmp(x, k, iterations, seed):
    import vmp  # noqa: F401
    from vmp.models import gaussian_mixture

    model = gaussian_mixture(x, n_components=k, **FACTORIZED)
    t0, c0 = time.perf_counter(), time.process_time()
    res = model.fit(iterations=iterations, tol=0, seed=seed)
    total = time.perf_counter() - t0
    CPU.append(time.process_time() - c0)
    return model, res, total


def fit_sklearn(x, k, iterations, seed, init):
    BGM = require_sklearn()
    from sklearn.exceptions import ConvergenceWarning

    bgm = BGM(n_components=k, covariance_type="full",
              weight_concentration_prior_type="dirichlet_distribution",
              max_iter=iterations, tol=0, n_init=1, init_params=init, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t0, c0 = time.perf_counter(), time.process_time()
        bgm.fit(x)
        total = time.perf_counter() - t0
    CPU.append(time.process_time() - c0)
    return bgm, total


def worker(args) -> dict:
    x, centres = make_data(args.n, args.k, args.d, args.seed)
    out = {"method": args.method, "d": args.d, "n": args.n, "k": args.k, "measure": args.measure}
    if args.method == "vmp":  # import before measuring: module objects are not the fit's memory
        import vmp  # noqa: F401
        import vmp.models  # noqa: F401
        if args.heap:
            out["heap_for_arrays"] = vmp.heap_for_arrays()
    else:
        require_sklearn()
    rss_before = maxrss_mb()
    if args.measure == "tracemalloc":
        import tracemalloc

        tracemalloc.start()
        if args.method == "vmp":
            fit_vmp(x, args.k, args.iterations, args.seed)
        else:
            fit_sklearn(x, args.k, args.iterations, args.seed, args.method.split("-")[1])
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["tracemalloc_peak_mb"] = peak / 2**20
        return out
    if args.method == "vmp":
        model, res, total = fit_vmp(x, args.k, args.iterations, args.seed)
        totals = [total]
        for _ in range(args.repeat - 1):
            totals.append(fit_vmp(x, args.k, args.iterations, args.seed)[2])
        total = min(totals)
        out["all_totals"] = totals
        out["cpu_s"] = min(CPU)
        out.update(total_s=total, iterations=int(res.iterations), final_bound=float(res.final_elbo),
                   found=centres_found(centres, model["mu"].mean),
                   used=int(np.sum(model["pi"].mean > 1e-3)))
        out["rss_fit_peak_mb"] = maxrss_mb()
        out["sweep"] = sweep_by_hand(model, args.repeat)
    else:
        init = args.method.split("-")[1]
        bgm, total = fit_sklearn(x, args.k, args.iterations, args.seed, init)
        totals = [total]
        for _ in range(args.repeat - 1):
            totals.append(fit_sklearn(x, args.k, args.iterations, args.seed, init)[1])
        total = min(totals)
        out["all_totals"] = totals
        out["cpu_s"] = min(CPU)
        out.update(total_s=total, iterations=int(bgm.n_iter_), final_bound=float(bgm.lower_bound_),
                   found=centres_found(centres, bgm.means_), used=int(np.sum(bgm.weights_ > 1e-3)))
        out["rss_fit_peak_mb"] = maxrss_mb()
        if args.iterations > 1:
            one = min(fit_sklearn(x, args.k, 1, args.seed, init)[1] for _ in range(args.repeat))
            out["marginal_s_per_iter"] = (total - one) / (args.iterations - 1)
    out["rss_before_fit_mb"] = rss_before
    out["s_per_iter"] = out["total_s"] / max(out["iterations"], 1)
    return out


# ------------------------------------------------------------------------------------------
# driver: one subprocess per (D, method, measure)
# ------------------------------------------------------------------------------------------

def run_child(args, method, d, measure) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--method", method, "--d", str(d),
           "--measure", measure, "--n", str(args.n), "--k", str(args.k),
           "--iterations", str(args.iterations), "--seed", str(args.seed), "--repeat", str(args.repeat)]
    cmd += ["--heap"] if args.heap else []
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT), env=thread_env(args.threads))
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"bench_mixture.py: the {method} run (D={d}, {measure}) failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def thread_env(threads: int) -> dict:
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    return env


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mixture_arguments(p)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2, help="timed fits per configuration; the fastest is reported")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--no-tracemalloc", action="store_true", help="skip the tracemalloc runs")
    p.add_argument("--json", help="also write the raw results to this file")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads in every process")
    p.add_argument("--rounds", type=int, default=2,
                   help="timed processes per configuration, the methods alternating; the fastest is reported")
    p.add_argument("--heap", action="store_true",
                   help="vmp.heap_for_arrays() in vmp's processes before the fit (the allocator opt-in)")
    # worker mode (internal)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", choices=METHODS, help=argparse.SUPPRESS)
    p.add_argument("--d", type=int, help=argparse.SUPPRESS)
    p.add_argument("--measure", choices=("time", "tracemalloc"), default="time", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:
        print(json.dumps(worker(args)))
        return

    if any(m.startswith("sklearn") for m in args.methods):
        require_sklearn()
    import sklearn

    os.environ.update(thread_env(args.threads))
    limit_threads(args.threads)
    rate = gemm_rate()
    load = os.getloadavg()
    print(f"Gaussian mixture: N={args.n}, K={args.k}, {args.iterations} iterations, tol=0, seed={args.seed}, "
          f"best of {args.repeat} timed fits; "
          f"numpy {np.__version__}, scikit-learn {sklearn.__version__}, {os.cpu_count()} CPUs, "
          f"BLAS threads {args.threads}; {'vmp.heap_for_arrays() in vmp runs; ' if args.heap else ''}load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"dgemm {rate / 1e9:.1f} GFLOP/s (CPU time)")
    rows = []
    for d in args.dims:
        best: dict = {}
        for _ in range(args.rounds):  # the methods alternate, so that all see the same load
            for method in args.methods:
                r = run_child(args, method, d, "time")
                if method not in best or r["s_per_iter"] < best[method]["s_per_iter"]:
                    best[method] = dict(r, cpu_s=min(r["cpu_s"], best.get(method, r)["cpu_s"]))
                print(f"  done D={d} {method}: {r['total_s']:.2f} s", file=sys.stderr, flush=True)
        for method in args.methods:
            r = best[method]
            if not args.no_tracemalloc:
                r["tracemalloc_peak_mb"] = run_child(args, method, d, "tracemalloc")["tracemalloc_peak_mb"]
            rows.append(r)

    data_mb = {d: args.n * d * 8 / 2**20 for d in args.dims}
    head = (f"{'D':>2} {'method':<15} {'iters':>5} {'total s':>8} {'s/iter':>8} {'marg s/it':>9} "
            f"{'RSS pre MB':>10} {'RSS peak MB':>11} {'traced MB':>9} {'found':>6} {'used':>4}")
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        marg = r.get("marginal_s_per_iter")
        marg_s = f"{marg:9.4f}" if marg is not None else f"{'-':>9}"
        traced = r.get("tracemalloc_peak_mb")
        traced_s = f"{traced:9.1f}" if traced is not None else f"{'-':>9}"
        print(f"{r['d']:>2} {r['method']:<15} {r['iterations']:>5} {r['total_s']:>8.2f} {r['s_per_iter']:>8.4f} "
              f"{marg_s} {r['rss_before_fit_mb']:>10.0f} {r['rss_fit_peak_mb']:>11.0f} {traced_s} "
              f"{r['found']:>3}/{args.k:<2} {r['used']:>4}")
    print()
    print("data array x: " + ", ".join(f"D={d}: {mb:.1f} MB" for d, mb in data_mb.items()))
    print("RSS pre = peak RSS after imports and data generation; RSS peak = peak RSS after the fit "
          "(whole process); traced = tracemalloc peak during fit (separate process).")
    print("found = true centres with an estimated mean within 0.5; used = components with weight > 1e-3.")
    for r in rows:
        if r["method"] == "vmp":
            parts = ", ".join(f"{k} {v:.3f}s" for k, v in r["sweep"].items())
            print(f"vmp sweep by hand, D={r['d']}: {parts}")
    print()
    print(f"ratios against the anchors of this run (load average at the end {os.getloadavg()[0]:.2f}):")
    for d in args.dims:
        by = {r["method"]: r for r in rows if r["d"] == d}
        v = by.get("vmp")
        if v is None:
            continue
        flops = flops_per_iteration(args.n, args.k, d)
        floor = flops / rate
        cpu_per_iter = v["cpu_s"] / max(v["iterations"], 1)
        print(f"  D={d}: floor {flops:.2e} flops / {rate / 1e9:.1f} GFLOP/s = {floor * 1e3:.1f} ms per iteration; "
              f"vmp / floor = {cpu_per_iter / floor:.1f}x in CPU time ({v['s_per_iter'] / floor:.1f}x wall)")
        for ref in ("sklearn-random", "sklearn-kmeans"):
            if ref not in by:
                continue
            r = by[ref]
            mem = ""
            if "tracemalloc_peak_mb" in v and "tracemalloc_peak_mb" in r:
                mem = f"; traced peak {v['tracemalloc_peak_mb'] / r['tracemalloc_peak_mb']:.2f}x"
            print(f"  D={d}: vmp / {ref} = {v['s_per_iter'] / r['s_per_iter']:.2f}x per iteration "
                  f"(CPU time {v['cpu_s'] / r['cpu_s'] * r['iterations'] / v['iterations']:.2f}x){mem}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
