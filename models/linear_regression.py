"""Bayesian linear regression with an observed design matrix (Bishop PRML sections 3.3, 10.3).

w ~ N(0, p^-1 I) (or, with ``ard=True``, w_d ~ N(0, 1/alpha_d), alpha_d ~ Gamma: PRML 7.2.2),
y_n ~ N(w . x_n, 1/tau), tau fixed or ~ Gamma(a, b).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def linear_regression(inputs: np.ndarray, targets: np.ndarray, *, noise_precision: float | None = None,
                      noise_prior: tuple[float, float] = (1.0, 1.0), prior_precision: float = 1.0,
                      ard: bool = False, ard_prior: tuple[float, float] = (1e-3, 1e-3),
                      name: str = "linear_regression") -> vmp.Model:
    """Build the regression of ``targets`` (N) on the rows of ``inputs`` (N x D); add a column of
    ones to ``inputs`` for an intercept. ``noise_precision`` fixes tau; when None,
    tau ~ Gamma(*noise_prior). ``ard`` gives each weight its own Gamma(*ard_prior) precision.
    The inputs are the data input "X": ``model.set_data("X", X_new)`` then ``model.predict("y")``
    predicts held-out targets. NaN targets are missing: they drop out of the fit, and
    ``model.impute("y")`` gives their posterior predictive."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, prior_precision=prior_precision, noise_precision=noise_precision)
    n, d = x.shape
    with vmp.Model(name) as model:
        if ard:
            with vmp.Plate("inputs", d):
                precision = vmp.Gamma("alpha", *ard_prior)
        else:
            precision = prior_precision * np.eye(d)
        w = vmp.Gaussian("w", mean=np.zeros(d), precision=precision)
        tau = noise_precision if noise_precision is not None else vmp.Gamma("tau", *noise_prior)
        with vmp.Plate("data", n):
            vmp.Normal("y", mean=vmp.dot(w, vmp.Data("X", x)), precision=tau, observed=y, mask=seen)
    return model
