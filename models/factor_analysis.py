"""Bayesian PCA / factor analysis with automatic relevance determination (Bishop 1999,
"Bayesian PCA"; PRML section 12.2.3; BayesPy's PCA example)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def factor_analysis(data: np.ndarray, n_components: int, *, mask: np.ndarray | None = None,
                    ard_prior: tuple[float, float] = (1e-3, 1e-3), noise_prior: tuple[float, float] = (1e-3, 1e-3),
                    mean_precision: float = 1e-3, name: str = "factor_analysis") -> vmp.Model:
    """Build the model for ``data`` (N x D) with at most ``n_components`` = K components:

        alpha_k ~ Gamma(a, b)              (a, b) = ard_prior, k = 1..K
        W_d ~ N(0, diag(alpha)^-1)         one row of loadings per dimension d
        mu_d ~ N(0, 1 / mean_precision)
        tau ~ Gamma(a', b')                (a', b') = noise_prior
        z_n ~ N(0, I)
        y_nd ~ N(z_n . W_d + mu_d, 1 / tau)

    Columns k of W that the data do not need are switched off: E[alpha_k] grows without bound.
    Nodes: ``alpha`` (plate "components"), ``W``, ``mu`` (plate "dimensions"), ``tau``, ``z``
    (plate "data"), ``y`` (observed, plates "data" x "dimensions"). NaN
    entries, and those where ``mask`` (N x D, booleans) is False, are missing: each y_nd is its
    own element, so a missing one drops out, and ``model.impute("y")`` gives its posterior
    predictive."""
    data = _checks.floats(name, "data", data)
    if data.ndim != 2:
        raise vmp.ShapeError(f"{name}: data must be a 2-D array (N x D), got shape {data.shape}")
    y, mask = _checks.missing(name, "data", data, mask)
    n, d = y.shape
    k = _checks.count(name, "n_components", n_components)
    _checks.positive(name, mean_precision=mean_precision)
    with vmp.Model(name) as model:
        with vmp.Plate("components", k):
            alpha = vmp.Gamma("alpha", *ard_prior)
        with vmp.Plate("dimensions", d):
            w = vmp.Gaussian("W", mean=np.zeros(k), precision=alpha)
            mu = vmp.Normal("mu", mean=0.0, precision=mean_precision)
        tau = vmp.Gamma("tau", *noise_prior)
        with vmp.Plate("data", n):
            z = vmp.Gaussian("z", mean=np.zeros(k), precision=np.eye(k))
            with vmp.Plate("dimensions", d):
                vmp.Normal("y", mean=vmp.dot(z, w) + mu, precision=tau, observed=y, mask=mask)
    return model
