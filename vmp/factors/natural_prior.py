"""A prior given by its natural parameters: p(x) = h(x) exp(eta . u(x) - A(eta)).

    E[log p(x)] = sum_j eta_j . E[u_j(x)] - A(eta)          (a latent family: h = 1)

The factor of a node whose prior is a fitted posterior (streaming variational Bayes, Broderick
et al. 2013: the posterior after a chunk is the prior of the next). ``eta`` is one array per
natural-parameter component, shaped plates + that component's event; the message to x is eta.
"""
from __future__ import annotations

import string

import numpy as np

from .base import Conditional
from .terms import Const, Op, Term


class NaturalPrior(Conditional):
    """The prior exp(eta . u(x) - A(eta)) of a node of family ``family`` with fixed ``eta``."""

    roles: dict = {}

    def __init__(self, event_shape: tuple[int, ...], family, natural: tuple[np.ndarray, ...]):
        super().__init__(event_shape)
        self.child = family
        self.natural = tuple(np.asarray(a, float) for a in natural)

    def terms(self) -> list[Term]:
        out = []
        for j, (eta, n) in enumerate(zip(self.natural, self.child.event_ndims)):
            letters = string.ascii_lowercase[:n]
            out.append(Term(1.0, (Op("x", j, letters),), (Const(eta, letters),)))
        out.append(Term(-1.0, (), (Const(np.asarray(self.child.log_normalizer(self.natural), float)),)))
        return out
