"""The Normal-Gamma prior of a joint (mu, tau), and Normal or Gaussian children of one.

Prior, with fixed m0, beta0, a0, b0 (eta0 = ``NormalGamma.natural_from`` of them):

    E[log NG(mu, tau | m0, beta0, a0, b0)] = <eta0, E[u]> - A(eta0),  u = (tau mu, tau mu^2, tau, log tau).

Normal child x ~ N(mu, 1/tau):

    E[log N(x | mu, 1/tau)] = -1/2 E[tau] E[x^2] + E[x] E[tau mu] - 1/2 E[tau mu^2] + 1/2 E[log tau] - 1/2 log 2 pi.

Gaussian child x ~ N(mu, diag(tau)^-1) with one (mu_d, tau_d) per coordinate (the parent's
innermost plate of size D read as the event axis, as an ARD precision; scikit-learn's "diag"):
the sum over d of the Normal child's terms.
"""
from __future__ import annotations

import numpy as np

from ..families import Gaussian, Normal, NormalGamma
from .base import Conditional
from .terms import Const, Op, Term

LOG2PI = float(np.log(2 * np.pi))


class NormalGammaFactor(Conditional):
    child = NormalGamma

    def __init__(self, event_shape: tuple[int, ...], mean: np.ndarray, beta: np.ndarray, shape: np.ndarray,
                 rate: np.ndarray):
        super().__init__(event_shape)
        self.mean, self.beta, self.shape, self.rate = (np.asarray(v, float) for v in (mean, beta, shape, rate))
        self.prior = NormalGamma.natural_from(self.mean, self.beta, self.shape, self.rate)

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("x", i),), (Const(e),)) for i, e in enumerate(self.prior)] + [
            Term(-1.0, (), (Const(NormalGamma.log_normalizer(self.prior)),))]


class NormalJointFactor(Conditional):
    """A Normal x whose mean and precision are one NormalGamma parent (mu, tau)."""

    child = Normal
    roles = {"parameters": NormalGamma}

    def terms(self) -> list[Term]:
        return [
            Term(-0.5, (Op("parameters", 2), Op("x", 1))),
            Term(1.0, (Op("parameters", 0), Op("x", 0))),
            Term(-0.5, (Op("parameters", 1),)),
            Term(0.5, (Op("parameters", 3),)),
            Term(-0.5 * LOG2PI),
        ]


class GaussianDiagonalJointFactor(Conditional):
    """A Gaussian x with mean mu and precision diag(tau), (mu_d, tau_d) one NormalGamma per coordinate."""

    child = Gaussian
    roles = {"parameters": NormalGamma}

    def __init__(self, event_shape: tuple[int, ...], plate_shape: tuple[int, ...] = ()):
        super().__init__(event_shape)
        d = self.event_shape[0]
        self.eye = np.broadcast_to(np.eye(d), tuple(plate_shape) + (d, d))

    def terms(self) -> list[Term]:
        d = self.event_shape[0]
        return [
            Term(-0.5, (Op("parameters", 2, "a"), Op("x", 1, "ab")), (Const(self.eye, "ab"),)),
            Term(1.0, (Op("parameters", 0, "a"), Op("x", 0, "a"))),
            Term(-0.5, (Op("parameters", 1, "a"),)),
            Term(0.5, (Op("parameters", 3, "a"),)),
            Term(-0.5 * d * LOG2PI),
        ]
