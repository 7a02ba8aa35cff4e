"""A Markov chain of categorical states given its initial distribution and transition matrix.

    E[log p(z | pi0, A)] = sum_k E[z_0k] E[log pi0_k] + sum_{t < L-1} sum_jk E[z_tj z_{t+1},k] E[log A_jk]
                           - log K * sum_{t >= L} sum_k E[z_tk]

(Beal 2003 eq. (3.52); MacKay 1997). Chains of different lengths L are padded to the plate's T:
a padded step is an extra state with a uniform prior and no children, so its -log K here and its
log K of entropy cancel and the bound is that of the unpadded chains. The three masks are
constants over the chain's plates (first step, transitions within the chain, padding).
"""
from __future__ import annotations

import numpy as np

from ..families import CategoricalMarkovChain, Dirichlet, constraints
from .base import Conditional
from .terms import Const, Op, Term

#: the log-potential of a zero probability in a constant pi0 or A: its exp is exactly 0 (as
#: log 0 = -inf's), a mask's 0 times it is 0 where 0 * -inf would be NaN, and its square (in a
#: relative change) stays finite
IMPOSSIBLE = -1e100


def chain_masks(lengths: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, transition, padding) indicators over plates + (T,) for chains of ``lengths``."""
    t = np.arange(steps)
    lengths = np.asarray(lengths)[..., None]
    first = np.broadcast_to(t == 0, lengths.shape[:-1] + (steps,)).astype(float)
    return first, (t < lengths - 1).astype(float), (t >= lengths).astype(float)


class MarkovChainFactor(Conditional):
    child = CategoricalMarkovChain
    roles = {"initial": Dirichlet, "transition": Dirichlet}
    #: pi0 and each row of A are probability vectors
    arg_constraints = {"initial": constraints.simplex, "transition": constraints.simplex}

    def __init__(self, event_shape: tuple[int, ...], lengths: np.ndarray, steps: int):
        super().__init__(event_shape)
        self.first, self.transition, self.padding = chain_masks(lengths, steps)

    def terms(self) -> list[Term]:
        k = self.event_shape[0]
        return [
            Term(1.0, (Op("x", 0, "a"), Op("initial", 0, "a")), (Const(self.first),)),
            Term(1.0, (Op("x", 1, "ab"), Op("transition", 0, "ab")), (Const(self.transition),)),
            Term(-np.log(k), (Op("x", 0, "a"),), (Const(self.padding),)),
        ]

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The transition matrix is K x K; the initial distribution a K-vector."""
        return tuple(event_shape) * (2 if role == "transition" else 1)
