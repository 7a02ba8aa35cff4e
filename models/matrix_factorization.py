"""Bayesian matrix factorization (Paquet section 3; Paisley et al. section IV-A).

u_m ~ N(0, p^-1 I), v_n ~ N(0, p^-1 I), r_mn ~ N(u_m . v_n, 1/tau), tau fixed or ~ Gamma(a, b).
``factorized=True`` uses the fully factorized q(u_mk) q(v_nk) of Paquet eq. (7); otherwise the
structured q(u_m) q(v_n).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def matrix_factorization(users: np.ndarray, items: np.ndarray, ratings: np.ndarray, n_factors: int, *,
                         n_users: int | None = None, n_items: int | None = None, factorized: bool = False,
                         noise_precision: float | None = None, noise_prior: tuple[float, float] = (1.0, 1.0),
                         prior_precision: float = 1.0, name: str = "matrix_factorization") -> vmp.Model:
    """``noise_precision`` fixes tau; when None, tau ~ Gamma(*noise_prior)."""
    rows = _checks.indices(name, "users", users)
    cols = _checks.indices(name, "items", items)
    r = _checks.values(name, "ratings", ratings)
    _checks.same_length(name, users=rows, items=cols, ratings=r)
    n_users = int(rows.max()) + 1 if n_users is None else _checks.count(name, "n_users", n_users)
    n_items = int(cols.max()) + 1 if n_items is None else _checks.count(name, "n_items", n_items)
    k = _checks.count(name, "n_factors", n_factors)
    with vmp.Model(name) as model:
        tau = noise_precision if noise_precision is not None else vmp.Gamma("tau", *noise_prior)
        if factorized:
            with vmp.Plate("users", n_users), vmp.Plate("factors", k):
                u = vmp.Normal("u", mean=0.0, precision=prior_precision)
            with vmp.Plate("items", n_items), vmp.Plate("factors", k):
                v = vmp.Normal("v", mean=0.0, precision=prior_precision)
        else:
            with vmp.Plate("users", n_users):
                u = vmp.Gaussian("u", mean=np.zeros(k), precision=prior_precision * np.eye(k))
            with vmp.Plate("items", n_items):
                v = vmp.Gaussian("v", mean=np.zeros(k), precision=prior_precision * np.eye(k))
        with vmp.Plate("ratings", r.size):
            vmp.Normal("r", mean=vmp.dot(u[rows], v[cols]), precision=tau, observed=r)
    return model
