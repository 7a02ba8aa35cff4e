"""The Normal-Wishart prior of a joint (mu, Lambda), and a Gaussian child of one.

Prior, with fixed m0, beta0, nu0, W0 (eta0 = ``GaussianWishart.natural_from`` of them):

    E[log NW(mu, Lambda | m0, beta0, nu0, W0)] = <eta0, E[u]> - A(eta0),
    u = (Lambda mu, mu^T Lambda mu, Lambda, log|Lambda|).

Child x ~ N(mu, Lambda^-1) with (mu, Lambda) one GaussianWishart parent (Bishop PRML eq. (10.64)-(10.67)):

    E[log N(x | mu, Lambda^-1)] = -1/2 tr(E[Lambda] E[x x^T]) + E[x]^T E[Lambda mu] - 1/2 E[mu^T Lambda mu]
                                  + 1/2 E[log|Lambda|] - D/2 log 2 pi.
"""
from __future__ import annotations

import numpy as np

from ..families import Gaussian, GaussianWishart
from .base import Conditional
from .terms import Const, Op, Term

LOG2PI = float(np.log(2 * np.pi))


class GaussianWishartFactor(Conditional):
    child = GaussianWishart

    def __init__(self, event_shape: tuple[int, ...], mean: np.ndarray, beta: np.ndarray, dof: np.ndarray,
                 scale: np.ndarray):
        super().__init__(event_shape)
        self.mean, self.beta, self.dof, self.scale = (np.asarray(v, float) for v in (mean, beta, dof, scale))
        self.prior = GaussianWishart.natural_from(self.mean, self.beta, self.dof, self.scale)

    def terms(self) -> list[Term]:
        e1, e2, e3, e4 = self.prior
        return [
            Term(1.0, (Op("x", 0, "a"),), (Const(e1, "a"),)),
            Term(1.0, (Op("x", 1),), (Const(e2),)),
            Term(1.0, (Op("x", 2, "ab"),), (Const(e3, "ab"),)),
            Term(1.0, (Op("x", 3),), (Const(e4),)),
            Term(-1.0, (), (Const(GaussianWishart.log_normalizer(self.prior)),)),
        ]


class GaussianJointFactor(Conditional):
    """A Gaussian x whose mean and precision are one GaussianWishart parent (mu, Lambda)."""

    child = Gaussian
    roles = {"parameters": GaussianWishart}

    def terms(self) -> list[Term]:
        d = self.event_shape[0]
        return [
            Term(-0.5, (Op("parameters", 2, "ab"), Op("x", 1, "ab"))),
            Term(1.0, (Op("parameters", 0, "a"), Op("x", 0, "a"))),
            Term(-0.5, (Op("parameters", 1),)),
            Term(0.5, (Op("parameters", 3),)),
            Term(-0.5 * d * LOG2PI),
        ]
