"""Wishart child with fixed dof n and scale V.

E[log W(Lambda | n, V)] = (n - D - 1)/2 E[log|Lambda|] - 1/2 tr(V^-1 E[Lambda])
                          - n/2 log|V| - nD/2 log 2 - log Gamma_D(n/2).
"""
from __future__ import annotations

import numpy as np

from ..families import Wishart
from ..families._linalg import inv_pd, logdet_pd, multigammaln
from .base import Conditional
from .terms import Const, Op, Term


class WishartFactor(Conditional):
    child = Wishart

    def __init__(self, event_shape: tuple[int, ...], dof: np.ndarray, scale: np.ndarray):
        super().__init__(event_shape)
        self.dof = np.asarray(dof, float)
        self.scale = np.asarray(scale, float)

    def terms(self) -> list[Term]:
        d = self.event_shape[0]
        n, v = self.dof, self.scale
        log_norm = 0.5 * n * logdet_pd(v) + 0.5 * n * d * np.log(2.0) + multigammaln(0.5 * n, d)
        return [
            Term(1.0, (Op("x", 1),), (Const(0.5 * (n - d - 1.0)),)),
            Term(-0.5, (Op("x", 0, "ab"),), (Const(inv_pd(v), "ab"),)),
            Term(-1.0, (), (Const(log_norm),)),
        ]
