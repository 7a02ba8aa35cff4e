"""Benchmark: a stochastic step's time does not grow with N.

Gaussian mixture (K=10, D=2), Minibatch of 100 data points, at N = 10^4, 10^5, 10^6: median
seconds per step (the ELBO evaluations are outside the step timings). Goal: t(10^6) / t(10^4) <= 1.2.

    python benchmarks/bench_svi_scaling.py [--sizes 10000 100000 1000000] [--steps 200]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from vmp.models import gaussian_mixture  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=100)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=5.0, size=(10, 2))
    times = {}
    for n in args.sizes:
        x = centers[rng.integers(10, size=n)] + rng.normal(size=(n, 2))
        model = gaussian_mixture(x, 10)
        res = model.fit(method="stochastic", subsample=vmp.Minibatch("data", args.batch),
                        step=vmp.RobbinsMonro(tau=1.0, kappa=0.7), iterations=args.steps,
                        evaluate_every=0, progress=False)
        times[n] = float(np.median(res.history["step_seconds"][10:]))
        print(f"N = {n:>9d}: median step {times[n] * 1e3:7.3f} ms over {args.steps} steps "
              f"(final ELBO {res.final_elbo:.6g})", flush=True)
    lo, hi = min(times), max(times)
    print(f"t({hi}) / t({lo}) = {times[hi] / times[lo]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
