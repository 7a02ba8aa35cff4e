"""Benchmark: logistic regression by Polya-gamma VMP (``vmp.models.logistic_regression``).

1. SVI at scale: Minibatch("data", 1000), ``--steps`` steps with the default diagnostics, on
   N = 10^4, 10^6 and 10^7 rows x 20 features, the 10^7 design matrix a numpy memmap on disk
   (1.6 GB), each N in a fresh process: wall time per step (the goal: t(10^7) / t(10^4) <= 1.5)
   and peak RSS beyond the file (the goal: <= 1 GB); the held-out log-loss on 10^4 new rows
   against a batch fit on 10^5 rows (the goal: within 1%).
2. Batch VMP on 10^5 x 20 in memory: seconds per sweep and sweeps to converge, against
   scikit-learn's LogisticRegression fit time on the same data, in the same run.

    python benchmarks/bench_logistic.py [--sizes 1e4 1e6 1e7] [--steps 300]
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
D = 20
BLOCK = 1 << 20


def truth() -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(123)
    return rng.normal(scale=0.5, size=D), 0.3


def rows(n: int, seed: int, path: pathlib.Path | None = None):
    """n rows (x, y) of the logistic model, in memory, or x written to a memmap in blocks."""
    w, b = truth()
    rng = np.random.default_rng(seed)
    x = np.empty((n, D)) if path is None else np.memmap(path, dtype=float, mode="w+", shape=(n, D))
    y = np.empty(n)
    for start in range(0, n, BLOCK):
        m = min(BLOCK, n - start)
        block = rng.normal(size=(m, D))
        x[start:start + m] = block
        y[start:start + m] = rng.random(m) < 1.0 / (1.0 + np.exp(-(block @ w + b)))
    if path is not None:
        x.flush()
        del x
        x = np.memmap(path, dtype=float, mode="r", shape=(n, D))
    return x, y


def log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def one_svi(n: int, steps: int, memmap: bool) -> dict:
    """An SVI fit in this process: seconds per step (defaults on), peak RSS, held-out log-loss."""
    import vmp
    from vmp.models import logistic_regression

    tmp = pathlib.Path(tempfile.mkdtemp()) / "x.f8" if memmap else None
    x, y = rows(n, seed=1, path=tmp)
    x_test, y_test = rows(10_000, seed=2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    model = logistic_regression(x, y)
    declared = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 1000), iterations=steps, seed=0,
                       progress=False)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model.set_data("X", x_test)
    out = {"n": n, "memmap": memmap, "declare_s": declared, "step_s": wall / steps, "step_cpu": cpu / steps,
           "peak_rss_mb": peak / 1024, "rss_growth_mb": (peak - before) / 1024,
           "file_mb": n * D * 8 / 2**20 if memmap else 0.0,
           "log_loss": log_loss(y_test, model.predict("y").mean), "diverged": bool(result.diverged)}
    if tmp is not None:
        del x
        tmp.unlink()
    return out


def run_child(n: int, steps: int, memmap: bool) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            f"from bench_logistic import one_svi; print(json.dumps(one_svi({n}, {steps}, {memmap})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def batch_against_sklearn(n: int = 100_000) -> dict:
    """Batch VMP to tol 1e-6 and scikit-learn's LogisticRegression (C = 1, lbfgs) on n x 20."""
    from sklearn.linear_model import LogisticRegression

    from vmp.models import logistic_regression

    x, y = rows(n, seed=1)
    x_test, y_test = rows(10_000, seed=2)
    start, cpu = time.perf_counter(), time.process_time()
    sk = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    sk_s, sk_cpu = time.perf_counter() - start, time.process_time() - cpu
    model = logistic_regression(x, y)
    start, cpu = time.perf_counter(), time.process_time()
    result = model.fit(iterations=500, tol=1e-6, seed=0, progress=False)
    fit_s, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    sweep_s = float(np.median(result.history["step_seconds"]))
    model.set_data("X", x_test)
    return {"sklearn_s": sk_s, "fit_s": fit_s, "sklearn_cpu": sk_cpu, "fit_cpu": fit_cpu,
            "sweeps": result.iterations, "sweep_s": sweep_s,
            "log_loss": log_loss(y_test, model.predict("y").mean),
            "sklearn_log_loss": log_loss(y_test, sk.predict_proba(x_test)[:, 1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e6, 1e7])
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args(argv)
    print(f"logistic regression, D = {D}; load average {os.getloadavg()[0]:.1f} (2 cores)")
    batch = batch_against_sklearn()
    print(f"\nbatch VMP on 10^5 x {D}: {batch['sweep_s'] * 1e3:.1f} ms per sweep, {batch['sweeps']} sweeps to tol 1e-6, "
          f"{batch['fit_s']:.2f} s in all; scikit-learn LogisticRegression fit {batch['sklearn_s']:.2f} s: "
          f"one sweep = {batch['sweep_s'] / batch['sklearn_s']:.2f} x its fit, the fit {batch['fit_s'] / batch['sklearn_s']:.1f} x")
    print(f"CPU time: vmp's fit {batch['fit_cpu']:.2f} s ({batch['fit_cpu'] / batch['sweeps'] * 1e3:.1f} ms per sweep), "
          f"scikit-learn's {batch['sklearn_cpu']:.2f} s: {batch['fit_cpu'] / batch['sklearn_cpu']:.1f} x")
    print(f"held-out log-loss (10^4 rows): batch VMP {batch['log_loss']:.5f}, scikit-learn {batch['sklearn_log_loss']:.5f}")
    print(f"\nSVI, Minibatch 1000, {args.steps} steps, default diagnostics")
    print(f"{'N':>10s} {'source':>7s} {'s/step':>8s} {'ratio':>6s} {'CPU s/step':>11s} {'ratio':>6s} "
          f"{'peak RSS MB':>12s} {'file MB':>8s} "
          f"{'beyond file':>12s} {'log-loss':>9s} {'vs batch 1e5':>13s}")
    base = cpu_base = None
    for size in args.sizes:
        n = int(size)
        r = run_child(n, args.steps, n >= 10**7)
        base, cpu_base = base or r["step_s"], cpu_base or r["step_cpu"]
        print(f"{n:>10d} {'memmap' if r['memmap'] else 'memory':>7s} {r['step_s']:>8.4f} {r['step_s'] / base:>6.2f} "
              f"{r['step_cpu']:>11.4f} {r['step_cpu'] / cpu_base:>6.2f} "
              f"{r['peak_rss_mb']:>12.0f} {r['file_mb']:>8.0f} {r['peak_rss_mb'] - r['file_mb']:>12.0f} "
              f"{r['log_loss']:>9.5f} {r['log_loss'] / batch['log_loss'] - 1:>+13.2%}{'  DIVERGED' if r['diverged'] else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
