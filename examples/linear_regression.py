"""Bayesian linear regression with an observed design matrix (models.linear_regression):
q(w) against the closed form with known noise precision, then ARD with unknown noise, where
the inputs that do not matter get E[alpha_d] orders of magnitude larger.

    python examples/linear_regression.py
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import linear_regression  # noqa: E402


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rng = np.random.default_rng(0)
    x = np.c_[np.ones(200), rng.normal(size=(200, 5))]
    w_true = np.array([1.0, 2.0, -1.5, 0.0, 0.0, 0.0])
    y = x @ w_true + 0.3 * rng.normal(size=200)

    model = linear_regression(x, y, noise_precision=1 / 0.09, prior_precision=1.0)
    res = model.fit(iterations=5)
    prec = np.eye(6) + x.T @ x / 0.09
    closed = np.linalg.solve(prec, x.T @ y / 0.09)
    print(f"known noise: max |E[w] - closed form| = {np.abs(model['w'].mean - closed).max():.2e}, "
          f"ELBO = log evidence = {res.final_elbo:.4f}")

    model = linear_regression(x, y, ard=True)
    model.fit(iterations=500)
    print("ARD, unknown noise:")
    print("  E[w]     ", np.round(model["w"].mean, 3))
    print("  E[alpha] ", np.array2string(model["alpha"].mean, precision=3))
    print(f"  E[tau] = {model['tau'].mean:.2f} (true {1 / 0.09:.2f})")


if __name__ == "__main__":
    main()
