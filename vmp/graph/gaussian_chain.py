"""The Gaussian Markov chain node (a linear-Gaussian state-space model's states, Beal 2003 ch. 5)
and the glue its parameters and children read it through."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..errors import DataError, GraphError, ShapeError
from ..factors.gaussian_chain import GaussianChainARDFactor, GaussianChainFactor
from .expressions import Diagonal, Expression, PlatedConstant, _plated
from .facades import facade
from .markov_chain import chain_lengths, per_chain
from .matrix import Matrix, _numbers
from .node import Node, raise_hyper
from .nodes import _dim_of


class Steps(Expression):
    """A chain read as one Gaussian per step: E[x_t] and E[x_t x_t^T] over the chain's plates.
    A child of a chain (``vmp.Normal("y", vmp.dot(x, c), r)``, ``vmp.Gaussian("y", x, R)``)
    reads it through this view; its messages land on the chain's first two components."""

    transparent = True

    def __init__(self, chain: Node):
        self.node = chain
        self.family = chain.family.step_family
        self.plates, self.event_shape = chain.plates, chain.event_shape
        self.name = chain.name

    def inputs(self):
        return [self.node]


class NoiseDiagonal(Diagonal):
    """diag(v): Gamma nodes over a plate of the D state dimensions (or such a node gated by a
    regime, ``v[s]``) read as the diagonal of the noise precision."""

    def __init__(self, node: Expression, owner: str, dim: int, family):
        if node.family is not family or not node.plates or node.plates[-1].size != dim:
            raise ShapeError(f"node '{owner}': a Gamma noise precision must be over a plate of the {dim} state "
                             f"dimensions (innermost), got {node!r}")
        self.node, self.dim_plate = node, node.plates[-1]
        self.family, self.plates, self.event_shape = family, node.plates[:-1], (dim,)
        self.name = f"diag({node.name})"


class GaussianMarkovChain(Node):
    """x_0 ~ N(mean, precision^-1), x_{t+1} | x_t ~ N(A_t x_t + B u_t, noise^-1) over the
    innermost open plate (time), one structured q per chain (the RTS smoother).

    Declared inside the plates of the chains and, innermost, a time plate of T steps.
    mean: a D-vector or a Gaussian node; precision: a D x D matrix or a Wishart node;
    transition: a D x D matrix (or T x D x D: A_t), or a Gaussian node over a plate of the D rows
    (learned dynamics), or one gated by a ``CategoricalMarkovChain`` s over the same plates,
    ``A[s]`` (switching dynamics); noise: a D x D matrix (a D-vector: its diagonal), a Wishart
    node, or Gamma nodes over a plate of the D dimensions (diagonal noise), each may be gated
    ``Q[s]``; inputs: (B, u) with B a D x M matrix or a Gaussian node over the D rows, and u the
    inputs (chains..., T, M) (or (T, M)): u_t enters the step to x_{t+1}. ``lengths`` (one per
    chain, at most T) pads shorter chains: their steps past the end are standard normal states
    without children (give the children there ``mask=False``).

    Children read the chain as one Gaussian per step: ``vmp.Normal("y", vmp.dot(x, c), r)``,
    ``vmp.Gaussian("y", C @ x, R)``, ``vmp.Normal("y", vmp.dot(C, x), r)`` with C a Gaussian
    node over the output plate.
    """

    family = fam.GaussianMarkovChain
    factor_cls = GaussianChainFactor

    def __init__(self, name: str, mean: Any, precision: Any, transition: Any, noise: Any, inputs=None, *,
                 lengths=None, weights=None, observed=None):
        if observed is not None:
            raise GraphError(f"node '{name}': an observed GaussianMarkovChain is not supported; observe the states "
                             f"with a vmp.Gaussian child of known precision instead")
        if isinstance(noise, Expression) and noise.family is GaussianChainARDFactor.roles["noise"]:
            self.factor_cls = GaussianChainARDFactor
        self._lengths, self._inputs = lengths, None
        roles = {"mean": mean, "precision": precision, "transition": transition, "noise": noise}
        if inputs is not None:
            if not isinstance(inputs, tuple) or len(inputs) != 2:
                raise GraphError(f"node '{name}': inputs must be a pair (B, u): the D x M input matrix and the "
                                 f"inputs u (T x M, or chains x T x M)")
            roles["control"], self._inputs = inputs
        super().__init__(name, roles, None, None, weights)

    def _infer_event_shape(self, roles):
        dims = {d for d in (_dim_of(roles["mean"], 1), _dim_of(roles["precision"], 2)) if d is not None}
        if len(dims) != 1:
            raise ShapeError(f"node '{self.name}': cannot tell the state dimension D from mean and precision "
                             f"(found {sorted(dims) or 'none'}); give a D-vector mean or a D x D precision")
        if not self.plates:
            raise GraphError(f"node '{self.name}': declare a chain inside a plate of its T time steps (the "
                             f"innermost open plate)")
        return (dims.pop(),)

    def view(self, family):
        """The chain as one Gaussian per step (``Steps``) where a Gaussian is wanted."""
        return Steps(self) if family is self.family.step_family else self

    def _role_event(self, role):
        if role == "control":
            return (self.event_shape[0], self._input_dim())
        return self.factor_cls.role_event(role, self.event_shape)

    def _input_dim(self) -> int:
        u = np.asarray(self._inputs, float)
        if u.ndim < 2:
            raise ShapeError(f"node '{self.name}': the inputs u must be T x M (or chains x T x M), got shape {u.shape}")
        return u.shape[-1]

    def _parent(self, role, value):
        d = self.event_shape[0]
        family = self.factor_cls.roles[role]
        if isinstance(value, Expression):
            value = value.view(family)
        if role in ("transition", "control"):
            return Matrix(value, self.name, role, self._role_event(role), self.plates, family)
        if role == "noise" and isinstance(value, Expression) and self.factor_cls is GaussianChainARDFactor:
            return NoiseDiagonal(value, self.name, d, family)
        if isinstance(value, Expression):
            self.check_parent(role, value)
            return value
        arr = _numbers(self.name, role, value)
        if role == "noise" and arr.ndim == 1:
            arr = arr[..., :, None] * np.eye(d)  # the diagonal of the noise precision
        return self._constant(role, arr)

    def _constant(self, role: str, arr: np.ndarray) -> PlatedConstant:
        """A constant over the plates its leading axes cover (the chains' for the first step's mean
        and precision; also time for the noise), checked against the role's domain."""
        event = self._role_event(role)
        plates = self.plates if role == "noise" else self.plates[:-1]
        lead = arr.ndim - len(event)
        if lead < 0 or lead > len(plates) or arr.shape[lead:] != event:
            raise ShapeError(f"node '{self.name}': {role} has shape {arr.shape}, expected {event} (or with "
                             f"leading axes over the plates {[p.name for p in plates]})")
        why = self.factor_cls.check(role, arr, self.event_shape)
        if why is not None:
            raise_hyper(self.name, why)
        own = plates[len(plates) - lead:]
        return _plated(arr, self.factor_cls.roles[role], own, event, f"node '{self.name}': {role}")

    def _check_weights(self, weights):
        return per_chain(self, super()._check_weights(weights))

    def _make_factor(self):
        self.lengths = chain_lengths(self, self._lengths)
        return self.factor_cls(self.event_shape, self.lengths, self.plates[-1].size, self._checked_inputs())

    def _checked_inputs(self) -> np.ndarray | None:
        if self._inputs is None:
            return None
        u = _numbers(self.name, "inputs", self._inputs)
        try:
            u = np.broadcast_to(u, self.plate_shape + u.shape[-1:])
        except ValueError:
            raise ShapeError(f"node '{self.name}': the inputs u have shape {u.shape}, which does not broadcast to "
                             f"plates {self.plate_shape} + (M,)") from None
        if not np.all(np.isfinite(u)):
            raise DataError(f"node '{self.name}': the inputs u contain NaN or inf")
        return u

    def _fill_value(self):
        return np.zeros(self.event_shape)

    def live(self, alive: np.ndarray) -> np.ndarray:
        """A chain stays in the bound whole when any of its steps has an observed descendant."""
        return np.broadcast_to(alive.any(axis=-1, keepdims=True), alive.shape)

    def smoothed(self, level: float = 0.95):
        """q(x_t) of every step: means, covariances and central intervals (``vmp.time_series``)."""
        return facade("smoothed")(self, level)

    def filtered(self, level: float = 0.95):
        """q(x_t | the potentials of steps 0..t): the filter (``vmp.time_series``)."""
        return facade("filtered")(self, level)

    def to_scipy(self, index: tuple = ()):
        """q of one chain (``index`` over the chains' plates) as a multivariate normal over its
        T D values."""
        self._need_posterior()
        return self.family.to_scipy(tuple(np.asarray(a)[index] for a in self.natural))
