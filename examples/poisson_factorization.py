"""Hierarchical Poisson factorization against Gaussian matrix factorization on MovieLens
(ml-latest-small): held-out log-likelihood of the binary "has rated" matrix.

The counts are y_ui = 1 if user u rated movie i (any rating > 0), 0 otherwise, over every pair
of the users x movies grid (movies with at least ``--min-ratings`` ratings). A random 10% of the
pairs (ones and zeros alike, seeded) is held out. Both models see the same training pairs:

- models.poisson_factorization (Gopalan et al. 2015): the ones are gathered entries, the
  training zeros one weighted users x movies node; held-out log p(y) = log Poi(y | E[theta_u] .
  E[beta_i]);
- models.matrix_factorization on the 0/1 values (centred by the training mean): log N(y | mean,
  1/E[tau]) is a density, not a probability, so it is also reported discretized,
  log P(y - 1/2 < r < y + 1/2), a proper probability of the integer y under the Gaussian.

    python examples/poisson_factorization.py [path/to/ratings.csv] [--k 10] [--iterations 100]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
from scipy import stats

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _movielens import DEFAULT, load  # noqa: E402
from models import matrix_factorization, poisson_factorization  # noqa: E402


def binary_grid(path: pathlib.Path, min_ratings: int) -> np.ndarray:
    users, items, ratings = load(path)
    keep = np.bincount(items) >= min_ratings
    users, items = users[keep[items] & (ratings > 0)], items[keep[items] & (ratings > 0)]
    _, items = np.unique(items, return_inverse=True)
    y = np.zeros((users.max() + 1, items.max() + 1))
    y[users, items] = 1.0
    return y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ratings", nargs="?", type=pathlib.Path, default=DEFAULT)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--min-ratings", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    y = binary_grid(args.ratings, args.min_ratings)
    test = np.random.default_rng(args.seed).uniform(size=y.shape) < 0.1
    train = ~test
    n_users, n_items = y.shape
    print(f"{n_users} users x {n_items} movies, {int(y.sum())} ones ({y.mean():.3%}); {int(test.sum())} "
          f"held-out pairs ({int(y[test].sum())} ones); K = {args.k}, {args.iterations} sweeps")

    rows, cols = np.nonzero(y * train)
    pf = poisson_factorization(rows, cols, y[rows, cols], args.k, n_users=n_users, n_items=n_items,
                               observed_pairs=train)
    start = time.perf_counter()
    res = pf.fit(iterations=args.iterations, tol=0.0, seed=args.seed)
    seconds = time.perf_counter() - start
    rate = (pf["theta"].mean @ pf["beta"].mean.T)[test]
    ll_pf = stats.poisson(rate).logpmf(y[test])
    print(f"Poisson factorization: held-out log-likelihood {ll_pf.mean():.4f} per pair "
          f"(ones {ll_pf[y[test] == 1].mean():.3f}, zeros {ll_pf[y[test] == 0].mean():.4f}); "
          f"ELBO {res.final_elbo:.1f}; {seconds:.1f} s")

    tu, ti = np.nonzero(train)
    centre = float(y[train].mean())
    mf = matrix_factorization(tu, ti, y[tu, ti] - centre, args.k, n_users=n_users, n_items=n_items)
    start = time.perf_counter()
    res = mf.fit(iterations=args.iterations, tol=0.0, seed=args.seed)
    seconds = time.perf_counter() - start
    mean = centre + (mf["u"].mean @ mf["v"].mean.T)[test]
    sd = 1.0 / np.sqrt(mf["tau"].mean)
    ll_density = stats.norm(mean, sd).logpdf(y[test])
    hi, lo = stats.norm.logcdf((y[test] + 0.5 - mean) / sd), stats.norm.logcdf((y[test] - 0.5 - mean) / sd)
    ll_discrete = hi + np.log1p(-np.exp(np.minimum(lo - hi, -1e-300)))
    print(f"Gaussian factorization: held-out log density {ll_density.mean():.4f} per pair, discretized "
          f"log-likelihood {ll_discrete.mean():.4f} (ones {ll_discrete[y[test] == 1].mean():.3f}, zeros "
          f"{ll_discrete[y[test] == 0].mean():.4f}); E[tau] = {mf['tau'].mean:.2f}; ELBO {res.final_elbo:.1f}; "
          f"{seconds:.1f} s")


if __name__ == "__main__":
    main()
