"""Benchmark: stochastic VMP costs O(minibatch) with every default on.

Mixture (K = 10, D = 2, Minibatch("data", 100), 200 steps, defaults: evaluations every 10 steps
on a fixed 2,000-point subsample, the per-step noisy bound, DomainMonitor and ElboMonitor) at
N = 10^4, 10^6 (in memory) and 10^7 (a numpy memmap on disk), each in a fresh process: wall
time of ``model.fit`` as a user gets it (with the default diagnostics, and with
evaluate_every=0), and the process's peak RSS. The ratios against N = 10^4 are the goal
(within 1.5x at 10^6, within 2x at 10^7 from a memmap; peak RSS below 1 GB beyond the data).

LDA (news corpus of benchmarks/bench_lda.py, K = 10 and 20, batch 64): seconds per minibatch of a
default ``model.fit`` (wall and CPU time / steps), with evaluate_every=0 and with the defaults, against
scikit-learn's ``partial_fit`` in the same run.

    python benchmarks/bench_scale.py [--sizes 1e4 1e6 1e7] [--steps 200] [--lda]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def mixture_data(n: int, path: pathlib.Path | None, seed: int = 0):
    """n points of 10 clusters in 2-D, in memory or written to a memmap in blocks."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=10.0, size=(10, 2))
    if path is None:
        return centers[rng.integers(10, size=n)] + rng.normal(size=(n, 2))
    out = np.memmap(path, dtype=float, mode="w+", shape=(n, 2))
    for start in range(0, n, 1 << 20):
        m = min(1 << 20, n - start)
        out[start:start + m] = centers[rng.integers(10, size=m)] + rng.normal(size=(m, 2))
    out.flush()
    del out
    return np.memmap(path, dtype=float, mode="r", shape=(n, 2))


def one_mixture(n: int, steps: int, memmap: bool, every: int | None) -> dict:
    import vmp

    tmp = pathlib.Path(tempfile.mkdtemp()) / "x.f8" if memmap else None
    x = mixture_data(n, tmp)
    sample = np.asarray(x[:: max(1, n // 10_000)])  # priors from a subsample, as with data out of core
    prec = np.linalg.inv(np.cov(sample, rowvar=False))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with vmp.Model("mixture") as model:
        pi = vmp.Dirichlet("pi", np.ones(10))
        with vmp.Plate("components", 10):
            mu = vmp.Gaussian("mu", sample.mean(0), 1e-2 * prec)
            lam = vmp.Wishart("Lambda", 2.0, prec / 2.0)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mu[z], lam[z], observed=x)
    declared = time.perf_counter() - start
    kwargs = {} if every is None else {"evaluate_every": every}
    start = time.perf_counter()
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 100), iterations=steps,
                       progress=False, **kwargs)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"n": n, "memmap": memmap, "every": every, "declare_s": declared, "fit_s": wall,
            "steps_s": float(np.sum(result.history["step_seconds"])), "peak_rss_mb": peak / 1024,
            "rss_growth_mb": (peak - before) / 1024, "data_mb": n * 2 * 8 / 2**20,
            "final_bound": float(result.elbo[-1]), "stderr": float(result.history["evaluations"]["stderr"][-1])}


def run_child(n: int, steps: int, memmap: bool, every: int | None) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"from bench_scale import one_mixture; "
            f"print(json.dumps(one_mixture({n}, {steps}, {memmap}, {every})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def lda_rows(topics: int, batches: int) -> list[dict]:
    import vmp
    from bench_lda import news_corpus, triples
    from sklearn.decomposition import LatentDirichletAllocation
    from vmp.models import lda

    x = news_corpus(2000)
    rng = np.random.default_rng(0)
    rows = []
    for k in topics:
        sk = LatentDirichletAllocation(n_components=k, learning_method="online", learning_offset=10.0,
                                       learning_decay=0.7, batch_size=64, total_samples=x.shape[0], random_state=0)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(batches):
            sk.partial_fit(x[np.sort(rng.choice(x.shape[0], size=64, replace=False))])
        sk_s, sk_cpu = (time.perf_counter() - start) / batches, (time.process_time() - cpu) / batches
        d, w, c = triples(x)
        out = {"K": k, "sklearn_s": sk_s, "sklearn_cpu": sk_cpu}
        for label, kwargs in (("vmp_no_eval", {"evaluate_every": 0}), ("vmp_defaults", {})):
            model = lda(d, w, c, k, n_documents=x.shape[0], n_words=x.shape[1], alpha=1.0 / k, eta=1.0 / k)
            start, cpu = time.perf_counter(), time.process_time()
            model.fit(method="stochastic", subsample=vmp.Minibatch("documents", 64), iterations=batches,
                      step=vmp.RobbinsMonro(tau=10.0, kappa=0.7, rho1=11.0 ** -0.7), progress=False, **kwargs)
            out[label + "_s"] = (time.perf_counter() - start) / batches
            out[label + "_cpu"] = (time.process_time() - cpu) / batches
        rows.append(out)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e6, 1e7])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--lda", action="store_true", help="also the news-corpus LDA against scikit-learn")
    ap.add_argument("--lda-batches", type=int, default=100)
    args = ap.parse_args(argv)
    print(f"mixture K=10 D=2, Minibatch 100, {args.steps} steps; load average {os.getloadavg()[0]:.1f}")
    print(f"{'N':>10s} {'source':>7s} {'fit s (defaults)':>17s} {'fit s (eval off)':>17s} {'sum of steps':>13s} "
          f"{'peak RSS MB':>12s} {'data MB':>8s} {'bound (+- se)':>24s}")
    base = None
    for size in args.sizes:
        n = int(size)
        memmap = n >= 10**7
        d = run_child(n, args.steps, memmap, None)
        off = run_child(n, args.steps, memmap, 0)
        base = base or d["fit_s"]
        print(f"{n:>10d} {'memmap' if memmap else 'memory':>7s} {d['fit_s']:>17.2f} {off['fit_s']:>17.2f} "
              f"{d['steps_s']:>13.2f} {d['peak_rss_mb']:>12.0f} {d['data_mb']:>8.0f} "
              f"{d['final_bound']:>14.6g} +- {d['stderr']:<8.3g}  ratio {d['fit_s'] / base:.2f}")
    if args.lda:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        print(f"\nLDA, news corpus, batch 64, {args.lda_batches} minibatches; seconds per minibatch (wall and CPU "
              f"time / steps)")
        print(f"{'K':>3s} {'sklearn':>9s} {'vmp eval off':>13s} {'ratio':>6s} {'vmp defaults':>13s} {'ratio':>6s}")
        for r in lda_rows([10, 20], args.lda_batches):
            for unit in ("s", "cpu"):
                print(f"{r['K']:>3d} {r['sklearn_' + unit]:>9.4f} {r['vmp_no_eval_' + unit]:>13.4f} "
                      f"{r['vmp_no_eval_' + unit] / r['sklearn_' + unit]:>6.2f} {r['vmp_defaults_' + unit]:>13.4f} "
                      f"{r['vmp_defaults_' + unit] / r['sklearn_' + unit]:>6.2f}  {'wall' if unit == 's' else 'CPU'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
