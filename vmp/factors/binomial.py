"""Binomial child (observed) with n trials per element, given a probability that is a constant
in (0, 1) or a Beta node.

E[log Bin(x | n, p)] = x E[log p] + (n - x) E[log(1 - p)] + log C(n, x);
the last term, the base measure, is the observed node's ``data_terms``.
"""
from __future__ import annotations

import numpy as np

from ..families import Beta, Binomial
from ..families import constraints
from .base import Conditional
from .terms import Const, Op, Term


class BinomialFactor(Conditional):
    child = Binomial
    roles = {"probability": Beta}
    arg_constraints = {"probability": constraints.open_unit_interval, "trials": constraints.nonnegative_integer}

    def __init__(self, event_shape: tuple[int, ...], trials: np.ndarray):
        super().__init__(event_shape)
        self.trials = np.asarray(trials, float)
        self.child = Binomial.of(self.trials)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "child"}  # Binomial.of(n) is rebuilt

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.child = Binomial.of(self.trials)

    def terms(self) -> list[Term]:
        return [
            Term(1.0, (Op("x", 0), Op("probability", 0))),
            Term(-1.0, (Op("x", 0), Op("probability", 1))),
            Term(1.0, (Op("probability", 1),), (Const(self.trials),)),
        ]
