"""Dirichlet child with fixed concentration alpha.

E[log Dir(pi | alpha)] = sum_k (alpha_k - 1) E[log pi_k] - sum_k log Gamma(alpha_k) + log Gamma(sum alpha).
"""
from __future__ import annotations

import numpy as np

from ..families import Dirichlet
from .base import Conditional
from .terms import Const, Op, Term


class DirichletFactor(Conditional):
    child = Dirichlet

    def __init__(self, event_shape: tuple[int, ...], alpha: np.ndarray):
        super().__init__(event_shape)
        self.alpha = np.asarray(alpha, float)

    def terms(self) -> list[Term]:
        a = self.alpha
        return [
            Term(1.0, (Op("x", 0, "a"),), (Const(a - 1.0, "a"),)),
            Term(-1.0, (), (Const(Dirichlet.log_normalizer((a - 1.0,))),)),
        ]
