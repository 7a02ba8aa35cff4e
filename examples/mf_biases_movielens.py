"""Matrix factorization with and without user/item biases on MovieLens (ml-latest-small):
held-out RMSE of the posterior-mean prediction.

Without biases the ratings are centred by the training mean (the model's mean is u_m . v_n);
with biases the mean is u_m . v_n + b_m + c_n + g (models.matrix_factorization(biases=True)).
A random 10% of the ratings is held out (seeded).

    python examples/mf_biases_movielens.py [path/to/ratings.csv] [--k 10] [--iterations 50]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _movielens import DEFAULT, load  # noqa: E402
from models import matrix_factorization  # noqa: E402


def predict(model, users, items, biases: bool, offset: float) -> np.ndarray:
    pred = offset + np.einsum("rk,rk->r", model["u"].mean[users], model["v"].mean[items])
    if biases:
        pred = pred + model["user_bias"].mean[users] + model["item_bias"].mean[items] + model["offset"].mean
    return pred


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ratings", nargs="?", type=pathlib.Path, default=DEFAULT)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    users, items, ratings = load(args.ratings)
    test = np.random.default_rng(args.seed).uniform(size=ratings.size) < 0.1
    train = ~test
    shape = dict(n_users=int(users.max()) + 1, n_items=int(items.max()) + 1)
    centre = float(ratings[train].mean())
    print(f"{ratings.size} ratings, {shape['n_users']} users, {shape['n_items']} items; "
          f"{test.sum()} held out; K = {args.k}, {args.iterations} sweeps")
    for biases in (False, True):
        offset = 0.0 if biases else centre
        model = matrix_factorization(users[train], items[train], ratings[train] - offset, args.k,
                                     biases=biases, **shape)
        start = time.perf_counter()
        res = model.fit(iterations=args.iterations, tol=0.0, seed=args.seed)
        seconds = time.perf_counter() - start
        err = predict(model, users[test], items[test], biases, offset) - ratings[test]
        fit_err = predict(model, users[train], items[train], biases, offset) - ratings[train]
        print(f"biases={biases!s:5}  held-out RMSE {np.sqrt(np.mean(err ** 2)):.4f}  "
              f"train RMSE {np.sqrt(np.mean(fit_err ** 2)):.4f}  ELBO {res.final_elbo:.1f}  {seconds:.1f} s")


if __name__ == "__main__":
    main()
