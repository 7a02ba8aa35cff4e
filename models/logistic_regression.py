"""Bayesian logistic regression through Polya-gamma augmentation (Polson, Scott & Windle 2013):

    w ~ N(0, p^-1 I)   (or, with ``ard=True``, w_d ~ N(0, 1/alpha_d), alpha_d ~ Gamma(a, b)),
    b ~ N(0, 1/p_b)    (the intercept, with ``intercept=True``),
    y_n ~ Bernoulli(sigmoid(w . x_n + b)),

fitted by VMP with one Polya-gamma auxiliary omega_n ~ PG(1, 0) per observation (the node
'y.omega', which the engine declares): at its optimum the bound is the Jaakkola-Jordan bound.
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def logistic_regression(inputs: np.ndarray, targets: np.ndarray, *, prior_precision: float = 1.0,
                        ard: bool = False, ard_prior: tuple[float, float] = (1e-3, 1e-3), intercept: bool = True,
                        intercept_precision: float = 1e-4, name: str = "logistic_regression") -> vmp.Model:
    """The logistic regression of binary ``targets`` (N, in {0, 1}; NaN missing) on the rows of
    ``inputs`` (N x D):

        w ~ N(0, I / prior_precision)   (``ard=True``: w_d ~ N(0, 1/alpha_d), alpha_d ~ Gamma(ard_prior))
        b ~ N(0, 1 / intercept_precision),   y_n ~ Bernoulli(sigmoid(w . x_n + b))

    with a Polya-gamma auxiliary omega_n per row. Nodes: ``w`` (Gaussian over the D weights),
    ``b`` (Normal intercept), ``alpha`` (ARD precisions, a plate of D), ``y`` (Bernoulli,
    ``logit=``), ``y.omega`` (the auxiliary); the inputs are the data input "X". With ``prior_precision = 1 / C`` and a flat intercept this is
    the posterior behind scikit-learn's L2 LogisticRegression(C=C). ``model.predict("y")`` gives
    P(y = 1) (``.probabilities``: both classes) for the rows of "X" (``model.set_data("X",
    X_new)`` for held-out rows)."""
    x = _checks.lazy_matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, prior_precision=prior_precision, intercept_precision=intercept_precision)
    with vmp.Model(name) as model:
        w = weights(x.shape[1], prior_precision, ard, ard_prior)
        b = vmp.Normal("b", 0.0, intercept_precision) if intercept else None
        with vmp.Plate("data", x.shape[0]):
            vmp.Bernoulli("y", logit=linear_predictor(w, vmp.Data("X", x), b), observed=y, mask=seen)
    return model


def weights(d: int, prior_precision: float, ard: bool, ard_prior: tuple[float, float], name: str = "w"):
    """w ~ N(0, p^-1 I), or with ARD w_d ~ N(0, 1/alpha_d), alpha_d ~ Gamma(*ard_prior)."""
    if ard:
        with vmp.Plate("inputs", d):
            precision = vmp.Gamma("alpha", *ard_prior)
    else:
        precision = prior_precision * np.eye(d)
    return vmp.Gaussian(name, mean=np.zeros(d), precision=precision)


def linear_predictor(w, x, b=None):
    """w . x_n, plus the intercept b when given."""
    psi = vmp.dot(w, x)
    return psi if b is None else psi + b
