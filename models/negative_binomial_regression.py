"""Negative binomial regression (overdispersed counts) through Polya-gamma augmentation (Polson,
Scott & Windle 2013, section 3; Zhou et al. 2012):

    w ~ N(0, p^-1 I), b ~ N(0, 1/p_b),
    y_n ~ NegativeBinomial(r, sigmoid(w . x_n + b)),   E[y_n] = r e^{w . x_n + b},

with r > 0 known and one auxiliary omega_n ~ PG(y_n + r, 0) per observation ('y.omega').
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks
from .logistic_regression import linear_predictor, weights


def negative_binomial_regression(inputs: np.ndarray, targets: np.ndarray, r: float, *,
                                 prior_precision: float = 1.0, intercept: bool = True,
                                 intercept_precision: float = 1e-4,
                                 name: str = "negative_binomial_regression") -> vmp.Model:
    """The regression of counts ``targets`` (N non-negative integers; NaN missing) on the rows of
    ``inputs`` (N x D) with dispersion ``r`` (Var[y] = E[y] + E[y]^2 / r):

        w ~ N(0, I / prior_precision),  b ~ N(0, 1 / intercept_precision)
        y_n ~ NegativeBinomial(r, logit = w . x_n + b)

    with a Polya-gamma auxiliary per row. Nodes: ``w``, ``b``, ``y`` (NegativeBinomial,
    ``logit=``), ``y.omega``; the inputs are the data input "X"."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, r=r, prior_precision=prior_precision, intercept_precision=intercept_precision)
    with vmp.Model(name) as model:
        w = weights(x.shape[1], prior_precision, False, (1.0, 1.0))
        b = vmp.Normal("b", 0.0, intercept_precision) if intercept else None
        with vmp.Plate("data", x.shape[0]):
            vmp.NegativeBinomial("y", r=r, logit=linear_predictor(w, vmp.Data("X", x), b), observed=y, mask=seen)
    return model
