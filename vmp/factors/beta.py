"""Beta child with fixed alpha and beta.

E[log Beta(p | alpha, beta)] = (alpha - 1) E[log p] + (beta - 1) E[log(1 - p)]
                               - log Gamma(alpha) - log Gamma(beta) + log Gamma(alpha + beta).
"""
from __future__ import annotations

import numpy as np

from ..families import Beta
from .base import Conditional
from .terms import Const, Op, Term


class BetaFactor(Conditional):
    child = Beta

    def __init__(self, event_shape: tuple[int, ...], alpha: np.ndarray, beta: np.ndarray):
        super().__init__(event_shape)
        self.alpha, self.beta = np.asarray(alpha, float), np.asarray(beta, float)

    def terms(self) -> list[Term]:
        a, b = self.alpha, self.beta
        return [
            Term(1.0, (Op("x", 0),), (Const(a - 1.0),)),
            Term(1.0, (Op("x", 1),), (Const(b - 1.0),)),
            Term(-1.0, (), (Const(Beta.log_normalizer((a - 1.0, b - 1.0))),)),
        ]
