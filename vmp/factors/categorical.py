"""Categorical child given probabilities that are a constant or a Dirichlet node.

E[log Cat(z | pi)] = sum_k E[z_k] E[log pi_k].
"""
from __future__ import annotations

from ..families import Categorical, Dirichlet
from .base import Conditional
from .terms import Op, Term


class CategoricalFactor(Conditional):
    child = Categorical
    roles = {"probabilities": Dirichlet}

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("x", 0, "a"), Op("probabilities", 0, "a")))]

