"""Mixture of linear regressions (models.mixture_of_regressions): three lines, weights 0.5, 0.3,
0.2; the gate sits inside vmp.dot(w[z], X). The best of 5 starts (``n_init=5``): a single start
may merge two lines into one with a wide noise (seeds 0, 2, 3 of this data do).

    python examples/mixture_of_regressions.py
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import mixture_of_regressions  # noqa: E402


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    rng = np.random.default_rng(1)
    n = 300
    x = np.c_[np.ones(n), rng.uniform(-2.0, 2.0, size=n)]
    w_true = np.array([[1.0, 2.0], [-1.0, -1.0], [3.0, 0.0]])
    z = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    y = np.sum(x * w_true[z], 1) + 0.2 * rng.normal(size=n)
    model = mixture_of_regressions(x, y, 3, noise_prior=(1e-2, 1e-2))
    res = model.fit(iterations=300, tol=1e-10, n_init=5)
    starts = ", ".join(f"{b:.2f}" for b in res.extra["n_init_bounds"])
    print(f"{res.iterations} sweeps, ELBO {res.final_elbo:.2f} (best of the starts' {starts})")
    for k in np.argsort(-model["pi"].mean):
        print(f"  weight {model['pi'].mean[k]:.2f}  intercept, slope {np.round(model['w'].mean[k], 3)}  "
              f"noise sd {1 / np.sqrt(model['tau'].mean[k]):.3f}")
    print("true: weights 0.5, 0.3, 0.2; (1, 2), (-1, -1), (3, 0); noise sd 0.2")


if __name__ == "__main__":
    main()
