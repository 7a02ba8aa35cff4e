"""Gamma child with a fixed shape a and a rate that is a constant or a Gamma node.

E[log Gamma(tau | a, b)] = a E[log b] + (a - 1) E[log tau] - E[b] E[tau] - log Gamma(a).
"""
from __future__ import annotations

import numpy as np
from scipy import special

from ..families import Gamma
from .base import Conditional
from .terms import Const, Op, Term


class GammaFactor(Conditional):
    child = Gamma
    roles = {"rate": Gamma}

    def __init__(self, event_shape: tuple[int, ...], shape: np.ndarray):
        super().__init__(event_shape)
        self.shape = np.asarray(shape, float)

    def terms(self) -> list[Term]:
        a = self.shape
        return [
            Term(1.0, (Op("rate", 1),), (Const(a),)),
            Term(1.0, (Op("x", 1),), (Const(a - 1.0),)),
            Term(-1.0, (Op("rate", 0), Op("x", 0))),
            Term(-1.0, (), (Const(special.gammaln(a)),)),
        ]

