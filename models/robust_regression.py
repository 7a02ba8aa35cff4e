"""Robust (Student-t) linear regression: the variational Student-t likelihood as a scale mixture
(Bishop PRML 10.2 and exercise 10.11's t; Archambeau & Verleysen 2007; Tipping & Lawrence 2005)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def robust_regression(inputs: np.ndarray, targets: np.ndarray, *, dof: float = 3.0,
                      noise_prior: tuple[float, float] = (1.0, 1.0), prior_precision: float = 1.0,
                      name: str = "robust_regression") -> vmp.Model:
    """Build the Student-t regression of ``targets`` (N) on the rows x_n of ``inputs`` (N x D)
    with ``dof`` = nu degrees of freedom:

        w ~ N(0, I / prior_precision),  tau ~ Gamma(*noise_prior),  lam_n ~ Gamma(nu/2, nu/2)
        y_n ~ N(w . x_n, 1 / (tau lam_n))

    marginally y_n - w . x_n is Student-t with nu degrees of freedom and scale tau^-1/2, so
    gross outliers get a small E[lam_n] and little weight. Nodes: ``w``, ``tau``, ``lam`` and
    ``y`` (observed; plate "data"). Add a column of ones to ``inputs`` for an intercept.
    ``model["lam"].mean`` is each point's weight E[lam_n] (small for outliers). The inputs are
    the data input "X" (``model.set_data``); NaN targets are missing (their lam_n integrates out)."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, dof=dof, prior_precision=prior_precision)
    n, d = x.shape
    with vmp.Model(name) as model:
        w = vmp.Gaussian("w", mean=np.zeros(d), precision=prior_precision * np.eye(d))
        tau = vmp.Gamma("tau", *noise_prior)
        with vmp.Plate("data", n):
            lam = vmp.Gamma("lam", dof / 2, dof / 2)
            vmp.Normal("y", mean=vmp.dot(w, vmp.Data("X", x)), precision=tau * lam, observed=y, mask=seen)
    return model
