"""How often a mixture of multinomials loses a component, batch VMP and Minibatch SVI, over seeds.

Data as in tests/test_models_recovery.py: data seed d gives 200 documents of 50 counts over 20
words from 3 profiles ~ Dir(0.5) with weights (0.5, 0.3, 0.2); models.multinomial_mixture(x, 3)
is fitted from fit seeds 0..F-1 by ``model.fit()`` and by ``Minibatch("data", size)`` SVI
(RobbinsMonro(tau, kappa=0.6, rho1), 200 steps). A fit loses a component when, after the
Hungarian match, some true profile is farther than 0.3 in L1 from its estimate. ``--start
pseudo-counts`` starts the components as before seeding.py (prior plus Gamma(100, 0.01)).

    python benchmarks/mixture_seeding.py [--data 10] [--fits 5] [--size 50] [--rho1 1] [--tau 1]
    python benchmarks/mixture_seeding.py --start pseudo-counts
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
import vmp.inference.init as init  # noqa: E402
from vmp import models  # noqa: E402


def count_data(seed: int):
    rng = np.random.default_rng(seed)
    profiles, weights = rng.dirichlet(np.full(20, 0.5), 3), np.array([0.5, 0.3, 0.2])
    z = rng.choice(3, 200, p=weights)
    return np.array([rng.multinomial(50, profiles[k]) for k in z]), profiles


def worst_l1(estimate, truth) -> float:
    rows, cols = linear_sum_assignment(((estimate[:, None, :] - truth[None, :, :]) ** 2).sum(-1))
    return float(np.abs(estimate[rows[np.argsort(cols)]] - truth).sum(1).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=int, default=10)
    ap.add_argument("--fits", type=int, default=5)
    ap.add_argument("--size", type=int, default=50)
    ap.add_argument("--rho1", type=float, default=1.0)
    ap.add_argument("--tau", type=float, default=1.0)
    ap.add_argument("--start", choices=["seeded", "pseudo-counts"], default="seeded")
    a = ap.parse_args()
    if a.start == "pseudo-counts":
        init.seedable = lambda *args: False
    warnings.simplefilter("ignore", vmp.ConvergenceWarning)
    for method in ("batch", "stochastic"):
        tick, lost = time.process_time(), []
        for d in range(a.data):
            x, profiles = count_data(d)
            for s in range(a.fits):
                model = models.multinomial_mixture(x, 3)
                if method == "batch":
                    model.fit(seed=s)
                else:
                    model.fit(method="stochastic", subsample=vmp.Minibatch("data", a.size), seed=s,
                              step=vmp.RobbinsMonro(tau=a.tau, kappa=0.6, rho1=a.rho1))
                if worst_l1(model["p"].mean, profiles) >= 0.3:
                    lost.append((d, s))
        print(f"{method:10s} start={a.start}: lost a component in {len(lost)} of {a.data * a.fits} fits {lost} "
              f"({time.process_time() - tick:.1f} CPU s)")


if __name__ == "__main__":
    main()
