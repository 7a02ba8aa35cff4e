"""Stick-breaking weights: a truncated Dirichlet process prior (Blei & Jordan 2006)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..factors import ClosedStickBreakingFactor, StickBreakingFactor
from .node import Node, raise_hyper


class StickBreaking(Node):
    """pi_k = v_k prod_{j<k} (1 - v_j) with v_k ~ Beta(1, concentration), k = 1..truncation
    (Sethuraman 1994; Blei & Jordan 2006): weights for ``vmp.Categorical``, the gates of any
    mixture, or the rows of a transition matrix, wherever a Dirichlet node is (its E[log pi] is
    what they read). concentration: a positive constant or a Gamma node (Blei & Jordan's
    hyperprior). All ``truncation`` sticks are random (scikit-learn's "dirichlet_process": the
    weights sum to below 1); ``last_stick_one=True`` fixes v_K = 1 (Blei & Jordan's truncation:
    they sum to 1). ``parameters`` gives each stick's Beta (alpha, beta), ``mean`` E[pi]."""

    family = fam.StickBreaking
    factor_cls = StickBreakingFactor

    def __init__(self, name: str, concentration: Any, truncation: int, *, last_stick_one: bool = False,
                 observed=None, mask=None, weights=None):
        if isinstance(truncation, (bool, np.bool_)) or not isinstance(truncation, (int, np.integer)) \
                or truncation < 2:
            raise_hyper(name, f"truncation must be an integer of at least 2 (the number of sticks), "
                              f"got {truncation!r}")
        self.truncation = int(truncation)
        if last_stick_one:
            self.family, self.factor_cls = fam.ClosedStickBreaking, ClosedStickBreakingFactor
        super().__init__(name, {"concentration": concentration}, observed, mask, weights)

    def _infer_event_shape(self, roles):
        return (self.truncation,)

    def conditional(self, parents):
        """Each stick Beta(1, concentration)."""
        alpha = np.asarray(parents["concentration"], float)[..., None]
        return self.family.natural_from(np.ones_like(alpha), alpha * np.ones(self.truncation))

    def _fill_value(self):
        k = self.truncation
        return np.full(k, 1.0 / k if self.family.closed else 1.0 / (k + 1))
