"""The stick-breaking prior: v_k ~ Beta(1, alpha) for each random stick (Blei & Jordan 2006,
eq. (16)), with alpha a constant or a Gamma node (their hyperprior, section 4):

    E[log p(v | alpha)] = sum_k E[log alpha] + (E[alpha] - 1) E[log(1 - v_k)]

over the K random sticks (K - 1 when v_K = 1, whose E[log(1 - v_K)] is 0 by convention).
"""
from __future__ import annotations

from ..families import ClosedStickBreaking, Gamma, StickBreaking, constraints
from .base import Conditional
from .terms import Op, Term


class StickBreakingFactor(Conditional):
    child = StickBreaking
    roles = {"concentration": Gamma}
    arg_constraints = {"concentration": constraints.positive}

    def terms(self) -> list[Term]:
        k = self.event_shape[0]
        sticks = k - 1 if self.child.closed else k
        return [
            Term(float(sticks), (Op("concentration", 1),)),
            Term(1.0, (Op("concentration", 0), Op("x", 1, "a"))),
            Term(-1.0, (Op("x", 1, "a"),)),
        ]

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """One concentration for all the sticks."""
        return () if role == "concentration" else tuple(event_shape)


class ClosedStickBreakingFactor(StickBreakingFactor):
    child = ClosedStickBreaking
