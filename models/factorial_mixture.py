"""Factorial mixture model (Ghahramani 1995; Mandt et al., Variational Tempering, section 5).

The mean is ``vmp.dot(z, mu)`` over the component plate: E[(sum_k z_k mu_k)^2] has the cross
terms E[z_k] E[z_l] E[mu_k] E[mu_l] (k != l) and E[z_k] E[mu_k^2] on the diagonal (z_k^2 = z_k),
so the engine updates q(z_n.) and q(mu_d.) one component at a time (coordinate ascent).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def factorial_mixture(data: np.ndarray, n_components: int, *, pi: float | None = 0.5,
                      pi_prior: tuple[float, float] = (1.0, 1.0), mean_precision: float = 1.0,
                      noise_precision: float | None = None, noise_prior: tuple[float, float] = (1.0, 1.0),
                      mask: np.ndarray | None = None, name: str = "factorial_mixture") -> vmp.Model:
    """Build the model for ``data`` (N x D); each datapoint switches any subset of K components on:

        z_nk ~ Bernoulli(pi_k)                 pi_k = pi, or pi_k ~ Beta(*pi_prior) when pi is None
        mu_dk ~ N(0, 1 / mean_precision)
        x_nd ~ N(sum_k z_nk mu_dk, 1 / tau)    tau = noise_precision, or ~ Gamma(*noise_prior) when None

    Nodes: ``z`` (plates "data" x "components"), ``mu`` ("pixels" x "components"), ``x``
    (observed, "data" x "pixels"), and ``pi`` ("components") and ``tau`` when random. NaN entries of ``data``, and those where ``mask`` (N x D, True where observed)
    is False, are missing: each x_nd is its own element, so a missing one integrates out."""
    x, seen = _checks.missing(name, "data", data, mask)
    if x.ndim != 2:
        raise vmp.ShapeError(f"{name}: data must be a 2-D array (N x D), got shape {x.shape}")
    n, d = x.shape
    k = _checks.count(name, "n_components", n_components)
    _checks.positive(name, mean_precision=mean_precision, noise_precision=noise_precision)
    if pi is not None and not 0.0 < pi < 1.0:
        raise vmp.HyperparameterError(f"{name}: pi must lie in (0, 1), got {pi!r}")
    with vmp.Model(name) as model:
        with vmp.Plate("components", k):
            prob = vmp.Beta("pi", *pi_prior) if pi is None else pi
        with vmp.Plate("pixels", d), vmp.Plate("components", k):
            mu = vmp.Normal("mu", 0.0, mean_precision)
        tau = vmp.Gamma("tau", *noise_prior) if noise_precision is None else noise_precision
        with vmp.Plate("data", n), vmp.Plate("components", k):
            z = vmp.Bernoulli("z", prob)
        with vmp.Plate("data", n), vmp.Plate("pixels", d):
            vmp.Normal("x", vmp.dot(z, mu), tau, observed=x, mask=seen)
    return model
