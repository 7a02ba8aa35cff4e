"""The prior of a Polya-Gamma variable, PG(omega | b, c) with a fixed tilt c >= 0, relative to
its base measure PG(b, 0) (``families/polya_gamma.py``), per unit of b (the node's multiplicity
carries b):

    E[log PG(omega | 1, c) / PG(omega | 1, 0)] = -c^2/2 E[omega] + log cosh(c/2).

A logit link's auxiliary has c = 0: both terms vanish, its prior is the base measure.
"""
from __future__ import annotations

import numpy as np

from ..families import PolyaGamma
from ..families._polya_gamma import log_cosh
from .base import Conditional
from .terms import Const, Op, Term


class PolyaGammaFactor(Conditional):
    child = PolyaGamma

    def __init__(self, event_shape: tuple[int, ...], tilt: np.ndarray):
        super().__init__(event_shape)
        self.tilt = np.asarray(tilt, float)

    def terms(self) -> list[Term]:
        c = self.tilt
        return [Term(1.0, (Op("x", 0),), (Const(-0.5 * c * c),)), Term(1.0, (), (Const(log_cosh(0.5 * c)),))]
