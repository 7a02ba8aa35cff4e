"""Bayesian PCA with automatic relevance determination (models.factor_analysis): data with 3
real components, a model with 10; the 7 unneeded columns of W are switched off.

    python examples/factor_analysis.py [--iterations 1500]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import factor_analysis  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=1500)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n, d = 200, 12
    y = rng.normal(size=(n, 3)) @ rng.normal(size=(d, 3)).T + 0.3 * rng.normal(size=(n, d)) + 1.0
    mask = rng.uniform(size=(n, d)) > 0.1  # 10% of the entries missing
    model = factor_analysis(y, 10, mask=mask)
    res = model.fit(iterations=args.iterations, tol=0.0)
    alpha = np.sort(model["alpha"].mean)
    print(f"{res.iterations} sweeps, ELBO {res.final_elbo:.2f}")
    print("E[alpha_k] sorted:", np.array2string(alpha, precision=3))
    print(f"switched off: {np.sum(alpha > 100 * alpha[:3].max())} of 10 (3 real components)")
    print(f"E[tau] = {model['tau'].mean:.2f} (true {1 / 0.09:.2f})")


if __name__ == "__main__":
    main()
