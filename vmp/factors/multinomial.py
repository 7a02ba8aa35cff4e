"""Multinomial child (count vectors, n = sum_k x_k) given probabilities that are a constant, a
Dirichlet node or a gated Dirichlet (mixtures of count vectors).

E[log Mult(x | n, pi)] = sum_k x_k E[log pi_k] + log n! - sum_k log x_k!
(the multinomial coefficient, the base measure, enters through ``data_terms``).
"""
from __future__ import annotations

from ..families import Dirichlet, Multinomial
from .base import Conditional
from .terms import Op, Term


class MultinomialFactor(Conditional):
    child = Multinomial
    roles = {"probabilities": Dirichlet}

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("x", 0, "a"), Op("probabilities", 0, "a")))]
