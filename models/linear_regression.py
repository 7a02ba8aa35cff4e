"""Bayesian linear regression with an observed design matrix (Bishop PRML sections 3.3, 3.5, 7.2.2
and 10.3; the evidence framework of scikit-learn's BayesianRidge and ARDRegression, as one
variational posterior)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks

#: shape of the default Gamma hyperpriors (BayesianRidge's alpha_1 = lambda_1 = 1e-6): so weak
#: that the data decide the precisions; their means only set where the fit starts
HYPER_SHAPE = 1e-6


def linear_regression(inputs: np.ndarray, targets: np.ndarray, *, noise_precision: float | None = None,
                      noise_prior: tuple[float, float] | None = None, prior_precision: float | None = None,
                      precision_prior: tuple[float, float] | None = None, ard: bool = False,
                      ard_prior: tuple[float, float] | None = None,
                      name: str = "linear_regression") -> vmp.Model:
    """Build the regression of ``targets`` (N) on the rows x_n of ``inputs`` (N x D):

        alpha ~ Gamma(*precision_prior)        (ard=True: alpha_d ~ Gamma(*ard_prior), d = 1..D)
        w ~ N(0, I / alpha)                    (ard=True: w_d ~ N(0, 1 / alpha_d))
        tau ~ Gamma(*noise_prior)
        y_n ~ N(w . x_n, 1 / tau)

    The precisions are learned, as scikit-learn's BayesianRidge (one alpha) and ARDRegression
    (one alpha_d per input) learn them. The default hyperpriors are Gamma(1e-6, 1e-6 / m) with
    their means m scaled to the data, so raw targets and inputs work: E[tau] = 1 / var(y) and
    E[alpha] = sum_d mean(x_d^2) / mean(y^2), the precision at which the prior's predictive
    E[(w . x)^2] is mean(y^2) (ARD: each input a 1/D share of it). ``prior_precision`` fixes
    alpha and ``noise_precision`` fixes tau; a fixed value more than
    ``_checks.PRIOR_SCALE_LIMIT`` = 4 orders of magnitude from its data-scaled mean (for alpha, an
    input's 1/D share) warns (``PriorScaleWarning``): w ~ N(0, I) against targets near 150 and
    inputs near 0.05 predicts about 0.

    Nodes: ``w``, ``alpha`` (plate "inputs" with ``ard``) unless fixed, ``tau`` unless fixed,
    and ``y`` (observed; plate "data"). Add a column of ones to ``inputs`` for an intercept.
    The inputs are the data input "X": ``model.set_data("X", X_new)`` then
    ``model.predict("y")`` predicts held-out targets. NaN targets are missing: they drop out of
    the fit, and ``model.impute("y")`` gives their posterior predictive."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, prior_precision=prior_precision, noise_precision=noise_precision)
    n, d = x.shape
    noise_mean, weight_means = data_scales(x, y, seen)
    with vmp.Model(name) as model:
        if ard:
            means = d * weight_means
            with vmp.Plate("inputs", d):
                precision = vmp.Gamma("alpha", *_hyper(name, "ard_prior", ard_prior, means))
        elif prior_precision is None:
            precision = vmp.Gamma("alpha", *_hyper(name, "precision_prior", precision_prior, weight_means.sum()))
        else:
            _checks.prior_scale(name, "prior_precision", prior_precision, d * weight_means)
            precision = prior_precision * np.eye(d)
        w = vmp.Gaussian("w", mean=np.zeros(d), precision=precision)
        if noise_precision is None:
            tau = vmp.Gamma("tau", *_hyper(name, "noise_prior", noise_prior, noise_mean))
        else:
            _checks.prior_scale(name, "noise_precision", noise_precision, noise_mean)
            tau = noise_precision
        with vmp.Plate("data", n):
            vmp.Normal("y", mean=vmp.dot(w, vmp.Data("X", x)), precision=tau, observed=y, mask=seen)
    return model


def data_scales(x: np.ndarray, y: np.ndarray, seen: np.ndarray | None) -> tuple[float, np.ndarray]:
    """The data-scaled means of the default hyperpriors: E[tau] = 1 / var(y), and per input d
    mean(x_d^2) / mean(y^2), whose sum is the E[alpha] at which the prior's predictive E[(w . x)^2]
    is mean(y^2) (over the observed targets; a column of zeros gets the smallest positive share)."""
    rows = slice(None) if seen is None else seen
    xs, ys = x[rows], y[rows]
    spread = float(np.var(ys)) if ys.size > 1 else 0.0
    square = float(np.mean(ys ** 2))
    scale = spread if spread > 0 else (square if square > 0 else 1.0)
    share = np.mean(xs ** 2, axis=0) / (square if square > 0 else 1.0)
    tiny = share[share > 0].min() if np.any(share > 0) else 1.0
    return 1.0 / scale, np.maximum(share, tiny)


def _hyper(name: str, what: str, given, mean) -> tuple:
    """``given`` (shape, rate), checked; by default Gamma(HYPER_SHAPE, HYPER_SHAPE / mean)."""
    if given is None:
        return HYPER_SHAPE, HYPER_SHAPE / np.asarray(mean, float)
    if len(given) != 2:
        raise vmp.HyperparameterError(f"{name}: {what} takes (shape, rate), got {given!r}")
    return given
