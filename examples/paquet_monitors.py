"""The monitors on Paquet's setting on MovieLens.

Paquet's model (fully factorized q(u_mk), q(v_nk), r ~ N(u . v, 1) on the raw ratings), option (b),
C = 1, rho1 = 1: its first steps lower the bound several-fold, then it converges (option (b) sweeps
a user's K coupled coordinates; docs/stochastic.md, "Paquet's pitfall"). Runs it three ways: unmonitored,
with ElboMonitor(action='stop') (ends at the first large fall of the bound, result.diverged is
set), and with DomainMonitor + ElboMonitor(action='backoff') (each rejected step halves the step
sizes). Prints the ELBO, the training RMSE and the monitor events of each.

    python examples/paquet_monitors.py [ratings.csv] [--iterations 100]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from vmp.models import matrix_factorization  # noqa: E402
from _movielens import DEFAULT, load, rmse  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ratings", nargs="?", type=pathlib.Path, default=DEFAULT)
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args(argv)
    users, items, ratings = load(args.ratings)
    runs = {
        "unmonitored": [],
        "ElboMonitor(stop)": [vmp.ElboMonitor(patience=1, action="stop")],
        "Domain+ElboMonitor(backoff)": [vmp.DomainMonitor(action="backoff"), vmp.ElboMonitor(patience=1, action="backoff")],
    }
    for label, monitors in runs.items():
        model = matrix_factorization(users, items, ratings, 10, factorized=True, noise_precision=1.0)
        res = model.fit(method="stochastic", subsample=vmp.PerNode(children=1), update="global",
                        step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=args.iterations,
                        evaluate_every=1, monitors=monitors, seed=0)
        finite = all(np.all(np.isfinite(a)) for n in ("u", "v") for a in model[n].natural)
        print(f"{label:28s} iterations {res.iterations:4d}  diverged {res.diverged!s:5s}  final ELBO "
              f"{res.elbo[-1]:.6g}  RMSE {rmse(model, users, items, ratings):.4g}  finite posteriors {finite}  "
              f"events {len(res.history['events'])}")
        print(f"{'':28s} {res.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
