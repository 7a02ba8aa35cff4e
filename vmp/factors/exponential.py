"""Exponential child given a rate that is a constant or a Gamma node (Gamma(1, lambda)).

E[log Exp(x | lambda)] = E[log lambda] - E[lambda] E[x].
"""
from __future__ import annotations

from ..families import Exponential, Gamma
from .base import Conditional
from .terms import Op, Term


class ExponentialFactor(Conditional):
    child = Exponential
    roles = {"rate": Gamma}

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("rate", 1),)), Term(-1.0, (Op("rate", 0), Op("x", 0)))]
