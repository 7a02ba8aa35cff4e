"""Bernoulli child given a probability that is a constant in (0, 1) or a Beta node.

E[log Bern(x | p)] = E[x] E[log p] + (1 - E[x]) E[log(1 - p)]
                   = E[x] E[log p] - E[x] E[log(1 - p)] + E[log(1 - p)].
"""
from __future__ import annotations

from ..families import Bernoulli, Beta
from ..families import constraints
from .base import Conditional
from .terms import Op, Term


class BernoulliFactor(Conditional):
    child = Bernoulli
    roles = {"probability": Beta}
    #: a constant p of 0 or 1 has log p or log(1 - p) = -inf: the open interval keeps every term finite
    arg_constraints = {"probability": constraints.open_unit_interval}

    def terms(self) -> list[Term]:
        return [
            Term(1.0, (Op("x", 0), Op("probability", 0))),
            Term(-1.0, (Op("x", 0), Op("probability", 1))),
            Term(1.0, (Op("probability", 1),)),
        ]
