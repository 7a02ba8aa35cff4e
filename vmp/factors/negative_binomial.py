"""NegativeBinomial child (observed counts) with r failures per element, given a success
probability that is a constant in (0, 1) or a Beta node:

E[log NB(y | r, p)] = y E[log p] + r E[log(1 - p)] + log Gamma(y + r) - log Gamma(r) - log y!
(the last three, the base measure, are the observed node's ``data_terms``).
"""
from __future__ import annotations

import numpy as np

from ..families import Beta, NegativeBinomial
from ..families import constraints
from .base import Conditional
from .terms import Const, Op, Term


class NegativeBinomialFactor(Conditional):
    child = NegativeBinomial
    roles = {"probability": Beta}
    arg_constraints = {"probability": constraints.open_unit_interval, "r": constraints.positive}

    def __init__(self, event_shape: tuple[int, ...], r: np.ndarray):
        super().__init__(event_shape)
        self.r = np.asarray(r, float)
        self.child = NegativeBinomial.of(self.r)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "child"}  # NegativeBinomial.of(r) is rebuilt

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.child = NegativeBinomial.of(self.r)

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("x", 0), Op("probability", 0))),
                Term(1.0, (Op("probability", 1),), (Const(self.r),))]
