"""The hidden Markov chain node: a structured q over each whole chain (Beal 2003 ch. 3)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..errors import DataError, GraphError, ShapeError
from ..factors import MarkovChainFactor
from ..factors.markov_chain import IMPOSSIBLE
from .expressions import Constant, Rows
from .node import Node
from .nodes import _dim_of


class CategoricalMarkovChain(Node):
    """z_0 ~ Cat(initial), z_{t+1} | z_t ~ Cat(transition[z_t]) over the innermost open plate (time).

    Declared inside the plates of the chains and, innermost, a time plate of T steps:
    ``with vmp.Plate("sequences", S), vmp.Plate("time", T): z = vmp.CategoricalMarkovChain(...)``.
    initial: a K-vector or a Dirichlet node; transition: a K x K matrix (rows sum to 1) or a
    Dirichlet node over a plate of K rows. ``lengths`` (one per chain, at most T; default T)
    pads shorter chains: their steps past the end are uniform states without children (give the
    emissions there ``mask=False``). q(z) is one chain per sequence, from forward-backward on the
    expected log-potentials; children gate by it as by a Categorical (``mu[z]``), reading its
    marginals.
    """

    family = fam.CategoricalMarkovChain
    factor_cls = MarkovChainFactor

    def __init__(self, name: str, initial: Any, transition: Any, *, lengths=None, weights=None, observed=None):
        if observed is not None:
            raise GraphError(f"node '{name}': an observed CategoricalMarkovChain is not supported; observe "
                             f"the states with vmp.Categorical nodes instead")
        self._lengths = lengths
        if isinstance(transition, Node):
            transition = Rows(transition, name, _dim_of(initial, 1) or transition.event_shape[0],
                              MarkovChainFactor.roles["transition"])
        super().__init__(name, {"initial": initial, "transition": transition}, None, None, weights)

    def _infer_event_shape(self, roles):
        k = _dim_of(roles["initial"], 1) or _dim_of(roles["transition"], 2)
        if k is None or k < 2:
            raise ShapeError(f"node '{self.name}': cannot tell the number of states K (at least 2) from "
                             f"initial and transition")
        return (k,)

    def _parent(self, role, value):
        expr = super()._parent(role, value)
        if isinstance(expr, Constant):
            expr.moments = (np.maximum(expr.moments[0], IMPOSSIBLE),)
        return expr

    def _check_weights(self, weights):
        return per_chain(self, super()._check_weights(weights))

    def _make_factor(self):
        if not self.plates:
            raise GraphError(f"node '{self.name}': declare a chain inside a plate of its T time steps "
                             f"(the innermost open plate)")
        self.lengths = chain_lengths(self, self._lengths)
        return MarkovChainFactor(self.event_shape, self.lengths, self.plates[-1].size)

    def _fill_value(self):
        return np.zeros(self.plate_shape[-1:], dtype=int)

    def conditional(self, parents):
        """The chain p(z | pi0, A) at point values: U_0 = log pi0, P_t = log A for t < L-1 (the
        transitions within the chain), zero elsewhere (a padded step: a uniform state, as the
        factor's -log K and its entropy leave it). log 0 is ``IMPOSSIBLE``."""
        with np.errstate(divide="ignore"):
            log_initial = np.maximum(np.log(parents["initial"]), IMPOSSIBLE)
            log_transition = np.maximum(np.log(parents["transition"]), IMPOSSIBLE)
        unary = self.factor.first[..., None] * log_initial
        pairwise = self.factor.transition[..., None, None] * log_transition
        return unary, pairwise

    def live(self, alive: np.ndarray) -> np.ndarray:
        """A chain stays in the bound whole when any of its steps has an observed descendant."""
        return np.broadcast_to(alive.any(axis=-1, keepdims=True), alive.shape)

    @property
    def transitions(self) -> np.ndarray:
        """Expected transition counts sum_{t < L-1} q(z_t = j, z_{t+1} = k) of each chain (plates
        + (K, K)); the padding past a chain's length L counts nothing."""
        self._need_posterior()
        return np.einsum("...t,...tjk->...jk", self.factor.transition, self.moments[1])

    def describe(self, mean: np.ndarray, fmt=str) -> str:
        """The marginals' shape and the expected transition rates over all chains."""
        return self.family.describe_transitions(mean, self.transitions, fmt)

    def to_scipy(self, index: tuple = ()):
        raise GraphError(f"node '{self.name}': a chain has no scipy.stats counterpart; read .mean (marginals) "
                         f"or .parameters")


def per_chain(node, w: np.ndarray | None) -> np.ndarray | None:
    """A chain node's weights, one per chain (equal along its time plate), or a DataError."""
    if w is not None and node.plates and not np.all(w == w[..., :1]):
        raise DataError(f"node '{node.name}': weights must be one per chain (equal along the time "
                        f"plate '{node.plates[-1].name}')")
    return w


def chain_lengths(node, given) -> np.ndarray:
    """The length of each chain (default T, the time plate's size), checked: one per chain,
    integers in [1, T]."""
    steps = node.plates[-1].size
    lengths = np.full(node.plate_shape[:-1], steps) if given is None else np.asarray(given)
    if lengths.shape != node.plate_shape[:-1]:
        raise ShapeError(f"node '{node.name}': lengths has shape {lengths.shape}, expected one per chain "
                         f"{node.plate_shape[:-1]} (the plates outside the time plate '{node.plates[-1].name}')")
    if lengths.dtype.kind not in "iu" or lengths.size and (lengths.min() < 1 or lengths.max() > steps):
        raise DataError(f"node '{node.name}': lengths must be integers in [1, {steps}] (the time plate "
                        f"'{node.plates[-1].name}'), got {given!r}")
    return lengths
