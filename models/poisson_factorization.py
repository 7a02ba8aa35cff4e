"""Hierarchical Poisson factorization (Gopalan, Hofman & Blei 2015, section 2, Figure 5).

E[log(theta_u . beta_i)] is bounded by the allocation of the count over the K factors
(vmp/graph/allocation.py; the multinomial auxiliary counts of Gopalan et al. eq. (3)-(5)). Only
the non-zero counts carry an allocation: they are one node over a plate of entries, gathering
theta and beta; the zeros are a second node over the users x items plate whose weight is 1 on
the zero pairs (0 on the given counts and on pairs left out, ``observed_pairs``), and whose only
term is -E[theta_u . beta_i] (a dense U x I weight, no U x I x K array).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def poisson_factorization(users: np.ndarray, items: np.ndarray, counts: np.ndarray, n_factors: int, *,
                          n_users: int | None = None, n_items: int | None = None,
                          observed_pairs: np.ndarray | None = None, shape: float = 0.3,
                          activity: tuple[float, float] | None = (0.3, 1.0), item_shape: float = 0.3,
                          popularity: tuple[float, float] | None = (0.3, 1.0), rate: float = 0.3,
                          name: str = "poisson_factorization") -> vmp.Model:
    """Counts y (> 0) of the pairs (users[r], items[r]); every other pair of the users x items grid
    is a zero, or unobserved where ``observed_pairs`` (a boolean U x I mask) is False:

        xi_u ~ Gamma(a', a'/b'),  theta_uk ~ Gamma(a, xi_u)     user activity, preferences
        eta_i ~ Gamma(c', c'/d'), beta_ik ~ Gamma(c, eta_i)     item popularity, attributes
        y_ui ~ Poisson(theta_u . beta_i)                         every pair (u, i)

    ``shape`` is a, ``activity`` is (a', b') (None: theta's rate fixed at ``rate``), ``item_shape``
    is c and ``popularity`` is (c', d') (None: beta's rate fixed at ``rate``); Gopalan et al.'s
    defaults are a = a' = c = c' = 0.3, b' = d' = 1. Nodes: ``theta`` (plates "users" x
    "factors"), ``beta`` ("items" x "factors"), ``xi`` ("users") and ``eta`` ("items") unless
    fixed, ``y`` (the counts; plate "entries") and ``zeros`` (the zero pairs; "users" x "items").
    """
    rows = _checks.indices(name, "users", users)
    cols = _checks.indices(name, "items", items)
    y = _checks.values(name, "counts", counts, positive=True)
    _checks.same_length(name, users=rows, items=cols, counts=y)
    n_users = int(rows.max()) + 1 if n_users is None else _checks.count(name, "n_users", n_users)
    n_items = int(cols.max()) + 1 if n_items is None else _checks.count(name, "n_items", n_items)
    k = _checks.count(name, "n_factors", n_factors)
    _checks.positive(name, shape=shape, item_shape=item_shape, rate=rate)
    if rows.max() >= n_users or cols.max() >= n_items:
        raise vmp.ShapeError(f"{name}: user or item indices beyond n_users = {n_users}, n_items = {n_items}")
    zeros = np.ones((n_users, n_items)) if observed_pairs is None else _pairs(name, observed_pairs, n_users, n_items)
    if np.any(zeros[rows, cols] == 0):
        raise vmp.DataError(f"{name}: a given count lies on a pair that observed_pairs marks unobserved")
    zeros[rows, cols] = 0.0
    with vmp.Model(name) as model:
        theta_rate, beta_rate = rate, rate
        if activity is not None:
            _checks.positive(name, activity_shape=activity[0], activity_mean=activity[1])
            with vmp.Plate("users", n_users):
                theta_rate = vmp.Gamma("xi", activity[0], activity[0] / activity[1])
        if popularity is not None:
            _checks.positive(name, popularity_shape=popularity[0], popularity_mean=popularity[1])
            with vmp.Plate("items", n_items):
                beta_rate = vmp.Gamma("eta", popularity[0], popularity[0] / popularity[1])
        with vmp.Plate("users", n_users), vmp.Plate("factors", k):
            theta = vmp.Gamma("theta", shape, theta_rate)
        with vmp.Plate("items", n_items), vmp.Plate("factors", k):
            beta = vmp.Gamma("beta", item_shape, beta_rate)
        with vmp.Plate("entries", y.size):
            vmp.Poisson("y", vmp.dot(theta[rows], beta[cols]), observed=y)
        with vmp.Plate("users", n_users), vmp.Plate("items", n_items):
            vmp.Poisson("zeros", vmp.dot(theta, beta), observed=np.zeros((n_users, n_items)), weights=zeros)
    return model


def _pairs(name: str, mask, n_users: int, n_items: int) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.shape != (n_users, n_items) or mask.dtype != bool:
        raise vmp.ShapeError(f"{name}: observed_pairs must be a boolean {n_users} x {n_items} array")
    return mask.astype(float)
