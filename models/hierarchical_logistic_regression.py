"""Hierarchical logistic regression: a random intercept per group (Gelman & Hill 2007, ch. 14),
through Polya-gamma augmentation:

    w ~ N(0, p^-1 I),   mu ~ N(0, 1/p_mu),   tau ~ Gamma(a, b),
    u_g ~ N(mu, 1/tau)                          for each group g (plate "groups"),
    y_n ~ Bernoulli(sigmoid(w . x_n + u_{g_n})),

the group intercepts gathered by the group of each row (``u[groups]``), one auxiliary per
observation ('y.omega').
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks
from .logistic_regression import weights


def hierarchical_logistic_regression(inputs: np.ndarray, targets: np.ndarray, groups: np.ndarray, *,
                                     n_groups: int | None = None, prior_precision: float = 1.0,
                                     mean_precision: float = 1e-2, group_prior: tuple[float, float] = (1.0, 1.0),
                                     name: str = "hierarchical_logistic_regression") -> vmp.Model:
    """The logistic regression of binary ``targets`` (N; NaN missing) on ``inputs`` (N x D) with
    an intercept u_g per group, ``groups`` (N integers in [0, n_groups)):

        w ~ N(0, I / prior_precision),  mu ~ N(0, 1 / mean_precision),  tau ~ Gamma(group_prior)
        u_g ~ N(mu, 1 / tau),  y_n ~ Bernoulli(sigmoid(w . x_n + u_{g_n}))

    with a Polya-gamma auxiliary per row. Nodes: ``w``, ``mu`` (the intercepts' mean), ``tau``
    (their precision), ``u`` (plate "groups"), ``y``, ``y.omega``; the inputs are the data inputs
    "X" and "groups" (``set_data`` both for held-out rows)."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    g = _checks.indices(name, "groups", groups)
    _checks.same_length(name, inputs=x, targets=y, groups=g)
    _checks.positive(name, prior_precision=prior_precision, mean_precision=mean_precision)
    n_groups = _checks.count(name, "n_groups", int(g.max()) + 1 if n_groups is None else n_groups)
    if g.max() >= n_groups:
        raise vmp.DataError(f"{name}: groups must lie in [0, {n_groups}), got {int(g.max())}")
    with vmp.Model(name) as model:
        w = weights(x.shape[1], prior_precision, False, (1.0, 1.0))
        mu = vmp.Normal("mu", 0.0, mean_precision)
        tau = vmp.Gamma("tau", *group_prior)
        with vmp.Plate("groups", n_groups):
            u = vmp.Normal("u", mu, tau)
        with vmp.Plate("data", x.shape[0]):
            vmp.Bernoulli("y", logit=vmp.dot(w, vmp.Data("X", x)) + u[vmp.Data("groups", g)], observed=y, mask=seen)
    return model
