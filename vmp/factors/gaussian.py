"""Gaussian child given mean and precision (multivariate with Wishart precision; univariate with Gamma).

E[log N(x | mu, Lambda^-1)] = -1/2 tr(E[Lambda] E[x x^T]) + E[x]^T E[Lambda] E[mu]
                              -1/2 tr(E[Lambda] E[mu mu^T]) + 1/2 E[log|Lambda|] - D/2 log(2 pi)
(Winn & Bishop, section 4.1; the univariate case has D = 1 and no event axes.) With a diagonal
precision Lambda = diag(alpha), alpha_d ~ Gamma (automatic relevance determination, Bishop PRML
section 7.2.2; BayesPy's GaussianARD), tr(E[Lambda] E[x x^T]) = sum_d E[alpha_d] E[x x^T]_dd and
E[log|Lambda|] = sum_d E[log alpha_d]. With an isotropic precision Lambda = alpha I, one Gamma
alpha for the D dimensions (Bishop PRML section 10.3's prior on regression weights),
tr(E[Lambda] E[x x^T]) = E[alpha] tr(E[x x^T]) and E[log|Lambda|] = D E[log alpha].
"""
from __future__ import annotations

import numpy as np

from ..families import Gamma, Gaussian, Normal, Wishart
from .base import Conditional
from .terms import Const, Op, Term

LOG2PI = float(np.log(2 * np.pi))


def _gaussian_terms(a: str, b: str, d: int) -> list[Term]:
    return [
        Term(-0.5, (Op("precision", 0, a + b), Op("x", 1, a + b))),
        Term(1.0, (Op("precision", 0, a + b), Op("x", 0, a), Op("mean", 0, b))),
        Term(-0.5, (Op("precision", 0, a + b), Op("mean", 1, a + b))),
        Term(0.5, (Op("precision", 1),)),
        Term(-0.5 * d * LOG2PI),
    ]


class GaussianFactor(Conditional):
    child = Gaussian
    roles = {"mean": Gaussian, "precision": Wishart}

    def terms(self) -> list[Term]:
        return _gaussian_terms("a", "b", self.event_shape[0])

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """A D x D precision for a D-vector child."""
        return tuple(event_shape) * 2 if role == "precision" else tuple(event_shape)


class NormalFactor(Conditional):
    child = Normal
    roles = {"mean": Normal, "precision": Gamma}

    def terms(self) -> list[Term]:
        return _gaussian_terms("", "", 1)


class GaussianARDFactor(Conditional):
    """Gaussian child with precision diag(alpha): one Gamma alpha_d per event dimension."""

    child = Gaussian
    roles = {"mean": Gaussian, "precision": Gamma}

    def __init__(self, event_shape: tuple[int, ...], plate_shape: tuple[int, ...] = ()):
        super().__init__(event_shape)
        d = self.event_shape[0]
        self.eye = np.broadcast_to(np.eye(d), tuple(plate_shape) + (d, d))

    def terms(self) -> list[Term]:
        d, eye = self.event_shape[0], Const(self.eye, "ab")
        return [
            Term(-0.5, (Op("precision", 0, "a"), Op("x", 1, "ab")), (eye,)),
            Term(1.0, (Op("precision", 0, "a"), Op("x", 0, "a"), Op("mean", 0, "a"))),
            Term(-0.5, (Op("precision", 0, "a"), Op("mean", 1, "ab")), (eye,)),
            Term(0.5, (Op("precision", 1, "a"),)),
            Term(-0.5 * d * LOG2PI),
        ]



class GaussianIsotropicFactor(GaussianARDFactor):
    """Gaussian child with precision alpha I: one Gamma alpha shared by the D event dimensions."""

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """A scalar precision for a D-vector child."""
        return () if role == "precision" else tuple(event_shape)

    def terms(self) -> list[Term]:
        d, eye = self.event_shape[0], Const(self.eye, "ab")
        return [
            Term(-0.5, (Op("precision", 0, ""), Op("x", 1, "ab")), (eye,)),
            Term(1.0, (Op("precision", 0, ""), Op("x", 0, "a"), Op("mean", 0, "a"))),
            Term(-0.5, (Op("precision", 0, ""), Op("mean", 1, "ab")), (eye,)),
            Term(0.5 * d, (Op("precision", 1, ""),)),
            Term(-0.5 * d * LOG2PI),
        ]
