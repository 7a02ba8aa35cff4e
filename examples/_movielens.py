"""MovieLens ml-latest-small ratings for the examples: the file's default place and its reader."""
from __future__ import annotations

import pathlib
import sys

import numpy as np

#: where the examples look for ratings.csv when no path is given: a ``shared/`` folder beside the clone
DEFAULT = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "movielens-small" / "ratings.csv"


def load(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(users, items, ratings) of a MovieLens ratings.csv (columns userId, movieId, rating, ...),
    the ids mapped to 0..M-1 and 0..N-1; exits with a message when the file is missing."""
    if not path.is_file():
        sys.exit(f"ratings file not found: {path}\nGive the path of MovieLens ml-latest-small ratings.csv as the "
                 "first argument (https://grouplens.org/datasets/movielens/).")
    raw = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
    _, users = np.unique(raw[:, 0].astype(np.int64), return_inverse=True)
    _, items = np.unique(raw[:, 1].astype(np.int64), return_inverse=True)
    return users.ravel(), items.ravel(), raw[:, 2].astype(float)


def rmse(model, users: np.ndarray, items: np.ndarray, ratings: np.ndarray) -> float:
    """Root mean squared error of the posterior-mean prediction E[u_m] . E[v_n] of a matrix factorization."""
    pred = np.einsum("rk,rk->r", model["u"].mean[users], model["v"].mean[items])
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean((pred - ratings) ** 2)))
