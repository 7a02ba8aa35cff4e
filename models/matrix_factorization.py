"""Bayesian matrix factorization (Paquet section 3; Paisley et al. section IV-A; biases as Koren
et al. 2009, eq. (3))."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def matrix_factorization(users: np.ndarray, items: np.ndarray, ratings: np.ndarray, n_factors: int, *,
                         n_users: int | None = None, n_items: int | None = None, factorized: bool = False,
                         noise_precision: float | None = None, noise_prior: tuple[float, float] = (1.0, 1.0),
                         prior_precision: float = 1.0, biases: bool = False, bias_precision: float = 1.0,
                         offset_precision: float = 1e-2, name: str = "matrix_factorization") -> vmp.Model:
    """Build the factorization of the ``ratings`` of the pairs (users[r], items[r]) with K =
    ``n_factors`` factors:

        u_m ~ N(0, I / p),  v_n ~ N(0, I / p)       p = prior_precision
        r_mn ~ N(u_m . v_n, 1 / tau)                tau = noise_precision, or ~ Gamma(*noise_prior)

    With ``biases=True`` the mean is u_m . v_n + b_m + c_n + g, with user and item biases
    b_m, c_n ~ N(0, 1 / bias_precision) and a global offset g ~ N(0, 1 / offset_precision).
    ``factorized=True`` uses the fully factorized q(u_mk) q(v_nk) of Paquet eq. (7) (u and v
    Normal over plates "users"/"items" x "factors"); otherwise the structured q(u_m) q(v_n).
    Nodes: ``u`` (plate "users"), ``v`` (plate "items"), ``tau`` when random, ``user_bias``,
    ``item_bias`` and ``offset`` with biases, and ``r`` (observed; plate "ratings").
    The indices are the inputs ``"users"`` and ``"items"``: ``model.set_data({"users": rows,
    "items": cols})`` gives held-out pairs (their ratings masked, to predict)."""
    rows = _checks.indices(name, "users", users)
    cols = _checks.indices(name, "items", items)
    r = _checks.values(name, "ratings", ratings)
    _checks.same_length(name, users=rows, items=cols, ratings=r)
    n_users = int(rows.max()) + 1 if n_users is None else _checks.count(name, "n_users", n_users)
    n_items = int(cols.max()) + 1 if n_items is None else _checks.count(name, "n_items", n_items)
    k = _checks.count(name, "n_factors", n_factors)
    _checks.positive(name, prior_precision=prior_precision, bias_precision=bias_precision,
                     offset_precision=offset_precision, noise_precision=noise_precision)
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
        if biases:
            with vmp.Plate("users", n_users):
                bu = vmp.Normal("user_bias", mean=0.0, precision=bias_precision)
            with vmp.Plate("items", n_items):
                bi = vmp.Normal("item_bias", mean=0.0, precision=bias_precision)
            offset = vmp.Normal("offset", mean=0.0, precision=offset_precision)
        with vmp.Plate("ratings", r.size):
            rows, cols = vmp.Data("users", rows), vmp.Data("items", cols)  # set_data gives held-out ratings
            mean = vmp.dot(u[rows], v[cols])
            if biases:
                mean = mean + bu[rows] + bi[cols] + offset
            vmp.Normal("r", mean=mean, precision=tau, observed=r)
    return model
