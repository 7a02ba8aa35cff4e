"""Poisson child given a rate that is a constant, a Gamma node, a gated Gamma or ``c * lambda``,
times a constant exposure t (per element, default 1).

E[log Poi(y | t lambda)] = y E[log lambda] + y log t - t E[lambda] - log y!
(-log y!, the base measure, enters through ``data_terms`` once the data are observed). The rate
may also be ``vmp.dot(theta, beta)`` of two Gamma nodes (Poisson factorization): E[log lambda]
is then the allocation bound of vmp/graph/allocation.py.
"""
from __future__ import annotations

import numpy as np

from ..families import Gamma, Poisson
from ..families import constraints
from .base import Conditional
from .terms import Const, Op, Term


class PoissonFactor(Conditional):
    child = Poisson
    roles = {"rate": Gamma}
    arg_constraints = {"exposure": constraints.positive}

    def __init__(self, event_shape: tuple[int, ...], exposure: np.ndarray | None = None):
        super().__init__(event_shape)
        self.exposure = None if exposure is None else np.asarray(exposure, float)

    def terms(self) -> list[Term]:
        t = self.exposure
        if self.x is not None and not np.any(self.x):
            # observed zeros only (the zeros of Poisson factorization): y E[log lambda] vanishes
            return [Term(-1.0, (Op("rate", 0),), () if t is None else (Const(t),))]
        if t is None:
            return [Term(1.0, (Op("x", 0), Op("rate", 1))), Term(-1.0, (Op("rate", 0),))]
        return [
            Term(1.0, (Op("x", 0), Op("rate", 1))),
            Term(1.0, (Op("x", 0),), (Const(np.log(t)),)),
            Term(-1.0, (Op("rate", 0),), (Const(t),)),
        ]
