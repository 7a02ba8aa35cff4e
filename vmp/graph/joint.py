"""Nodes over a mean and a precision together: GaussianWishart (mu, Lambda) and NormalGamma (mu, tau)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..errors import ShapeError
from ..factors import GaussianWishartFactor, NormalGammaFactor
from ..families.gaussian_wishart import join
from .node import Node, fixed
from .nodes import _constant


class GaussianWishart(Node):
    """(mu, Lambda) ~ N(mu | mean, (beta Lambda)^-1) W(Lambda | dof, scale), E[Lambda] = dof * scale
    (Bishop PRML eq. (10.40); scikit-learn's ``mean_prior``, ``mean_precision_prior`` = beta,
    ``degrees_of_freedom_prior`` = dof, ``covariance_prior`` = scale^-1). A Gaussian child takes it
    (or a gate or gather of it) as mean and precision together: ``vmp.Gaussian("x", theta[z])``.
    q(mu, Lambda) is one Normal-Wishart; ``parameters`` gives mean, beta, dof, scale and
    E[Lambda] ("precision"), ``mean`` E[mu]; a value (data, draws) is Lambda's D rows, then mu."""

    family = fam.GaussianWishart
    factor_cls = GaussianWishartFactor

    def __init__(self, name: str, mean: Any, beta: Any, dof: Any, scale: Any, *, observed=None, mask=None,
                 weights=None):
        self._given = {k: fixed(name, type(self), k, v) for k, v in
                       (("mean", mean), ("beta", beta), ("dof", dof), ("scale", scale))}
        super().__init__(name, {}, observed, mask, weights)

    def _infer_event_shape(self, roles):
        scale = _constant(self, "scale", self._given["scale"])
        if scale.ndim < 2 or scale.shape[-1] != scale.shape[-2]:
            raise ShapeError(f"node '{self.name}': scale must be a DxD matrix, got shape {scale.shape}")
        return scale.shape[-1:]

    def _make_factor(self):
        d = self.event_shape
        given = {k: self._hyperparameter(k, v, d if k == "mean" else d * 2 if k == "scale" else ())
                 for k, v in self._given.items()}
        return GaussianWishartFactor(self.event_shape, **given)

    def _data_event_shape(self):
        return (self.event_shape[0] + 1, self.event_shape[0])

    def conditional(self, parents):
        f = self.factor
        return self.family.natural_from(f.mean, f.beta, f.dof, f.scale)

    def _fill_value(self):
        d = self.event_shape[0]
        return join(np.zeros(d), np.eye(d))


class NormalGamma(Node):
    """(mu, tau) ~ N(mu | mean, 1/(beta tau)) Gamma(tau | shape, rate), elementwise over plates
    (E[tau] = shape / rate). A Normal child takes it (or a gate or gather of it) as mean and
    precision together, ``vmp.Normal("x", theta[z])``; a Gaussian child reads one over a plate of
    its D coordinates as mean mu and precision diag(tau) (scikit-learn's "diag" covariance, with
    shape = dof / 2 and rate = covariance_prior / 2). A value (data, draws) is the pair (mu, tau)."""

    family = fam.NormalGamma
    factor_cls = NormalGammaFactor

    def __init__(self, name: str, mean: Any, beta: Any, shape: Any, rate: Any, *, observed=None, mask=None,
                 weights=None):
        self._given = {k: fixed(name, type(self), k, v) for k, v in
                       (("mean", mean), ("beta", beta), ("shape", shape), ("rate", rate))}
        super().__init__(name, {}, observed, mask, weights)

    def _make_factor(self):
        return NormalGammaFactor((), **{k: self._hyperparameter(k, v, ()) for k, v in self._given.items()})

    def _data_event_shape(self):
        return (2,)

    def conditional(self, parents):
        f = self.factor
        return self.family.natural_from(f.mean, f.beta, f.shape, f.rate)

    def _fill_value(self):
        return np.array([0.0, 1.0])
