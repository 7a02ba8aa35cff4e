"""Reading a fitted Gaussian Markov chain: smoothed and filtered states, forecasts.

- ``smoothed(x)``: q(x_t), the marginals of the chain's q (the smoother given the other q's).
- ``filtered(x)``: q(x_t | the potentials of steps 0..t): the forward pass of q's natural
  parameters less the potentials of the transition out of t (its own factor's transition terms'
  messages to x_t), ``GaussianMarkovChain.filtered``; with constant parameters the Kalman filter.
- ``forecast(model, h)``: h steps past each chain's last step, by ancestral draws from q: the
  parameters (A, the noise, the observation map and precision, a regime chain's transition
  matrix) from their q, x_{L-1} (and s_{L-1}) from its marginal, then the transitions and the
  observations (``Forecast``: means, central intervals, the draws). A constant laid over the time
  plate (a design, a time-varying A_t) is read at its last step; future inputs u are given.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .errors import GraphError
from .graph.draws import align, draw
from .graph.expressions import Constant, Diagonal, Dot, Gate, PlatedConstant, Sum
from .graph.gaussian_chain import Steps
from .graph.linear import Linear, RandomMap
from .graph.matrix import Matrix
from .graph.plate import Plate


@dataclass
class Estimate:
    """Gaussian marginals of each step: ``mean`` (..., T, D), ``covariance`` (..., T, D, D), and
    per coordinate ``sd``, ``lower`` and ``upper`` (the central ``level`` interval)."""

    mean: np.ndarray
    covariance: np.ndarray
    level: float = 0.95

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.diagonal(self.covariance, axis1=-2, axis2=-1))

    def _half(self) -> np.ndarray:
        from scipy.stats import norm

        return norm.ppf(0.5 + self.level / 2) * self.sd

    @property
    def lower(self) -> np.ndarray:
        return self.mean - self._half()

    @property
    def upper(self) -> np.ndarray:
        return self.mean + self._half()


def _chain(node):
    if getattr(node.family, "step_family", None) is None or node.observed:
        raise GraphError(f"node '{node.name}' is not a latent GaussianMarkovChain")
    node._need_posterior()
    return node


def smoothed(node, level: float = 0.95) -> Estimate:
    """q(x_t) of every step (missing and padded steps included: padding is a standard normal)."""
    p = _chain(node).parameters
    return Estimate(p["mean"], p["covariance"], level)


def filtered(node, level: float = 0.95) -> Estimate:
    """q(x_t | potentials up to t) of every step."""
    node = _chain(node)
    mean, cov = node.family.filtered(node.natural, _departure(node))
    return Estimate(mean, cov, level)


def _departure(node) -> tuple:
    """The messages of the chain's own transition terms to x (their parts on x_t's components
    are the potentials of the transition out of t), by the chain's factor with those terms only."""
    from .graph.compiled import CompiledFactor

    factor = copy.copy(node.factor)
    own = node.factor
    factor.terms = lambda: own.transition_terms() + ([] if own.inputs is None else own.input_terms())
    view = copy.copy(node)
    view.factor = factor
    return CompiledFactor(view).messages(view)


@dataclass
class Forecast:
    """Draws of ``name`` at the h steps after each chain's last one: ``draws`` (n, chains...,
    h, ...), their ``mean`` and central ``level`` interval ``lower``/``upper``; ``states`` the
    same for x (draws (n, chains..., h, D))."""

    name: str
    draws: np.ndarray = field(repr=False)
    states: np.ndarray = field(repr=False)
    level: float = 0.95

    @property
    def mean(self) -> np.ndarray:
        return self.draws.mean(0)

    @property
    def lower(self) -> np.ndarray:
        return np.quantile(self.draws, 0.5 - self.level / 2, axis=0)

    @property
    def upper(self) -> np.ndarray:
        return np.quantile(self.draws, 0.5 + self.level / 2, axis=0)

    @property
    def state_mean(self) -> np.ndarray:
        return self.states.mean(0)

    def state_interval(self) -> tuple[np.ndarray, np.ndarray]:
        return tuple(np.quantile(self.states, [0.5 - self.level / 2, 0.5 + self.level / 2], axis=0))


def forecast(model, steps: int, name: str | None = None, *, inputs=None, draws: int = 1000, seed: int | None = 0,
             level: float = 0.95) -> Forecast:
    """``steps`` steps ahead of observed node ``name`` (default: the one observed child of the
    model's Gaussian chain) by ancestral draws from q (see the module docstring)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise GraphError(f"model '{model.name}': forecast(steps=...) needs a positive integer, got {steps!r}")
    child, x = _target(model, name)
    rng = np.random.default_rng(seed)
    memo: dict = {}
    horizon = Plate.__new__(Plate)
    horizon.name, horizon.size = x.plates[-1].name, int(steps)
    future = _Future(x, horizon, int(draws), rng, memo)
    paths = future.states(inputs)
    parents = {role: future.value(expr, child, paths) for role, expr in child.parents.items()}
    values = child.family.sample(_common(child.family, child.conditional(parents)), rng)
    return Forecast(child.name, values, paths, level)


def _common(family, natural) -> tuple:
    """Natural parameters broadcast to their common plates (a parameter without the horizon's or
    the chains' axes, as a Wishart R's, has length-1 axes there)."""
    arrays = [np.asarray(a, float) for a in natural]
    events = [a.ndim - n for a, n in zip(arrays, family.event_ndims)]
    plates = np.broadcast_shapes(*(a.shape[:k] for a, k in zip(arrays, events)))
    return tuple(np.broadcast_to(a, plates + a.shape[k:]) for a, k in zip(arrays, events))


def _target(model, name):
    """(the observed child to forecast, the chain it reads)."""
    chains = [n for n in model.nodes.values() if getattr(n.family, "step_family", None) is not None]
    if len(chains) != 1:
        raise GraphError(f"model '{model.name}': forecast needs one GaussianMarkovChain, found "
                         f"{[c.name for c in chains]}")
    x = chains[0]
    readers = [n for n in model.nodes.values() if n.observed and any(x in _reads(e) for e in n.parents.values())]
    if name is None:
        if len(readers) != 1:
            raise GraphError(f"model '{model.name}': say which observed node to forecast, among "
                             f"{[n.name for n in readers]}")
        return readers[0], x
    if name not in model or model[name] not in readers:
        raise GraphError(f"model '{model.name}': '{name}' is not an observed node reading the chain '{x.name}'")
    return model[name], x


def _reads(expr) -> list:
    return [expr] + [n for e in expr.inputs() for n in _reads(e)]


class _Future:
    """Draws of the chain's future steps and of the expressions its child reads at them. Every
    array is (n draws, plates..., event); a constant or draw over the time plate is read at its
    last step (its time axis dropped)."""

    def __init__(self, x, horizon: Plate, n: int, rng, memo: dict):
        self.x, self.horizon, self.n, self.rng, self.memo = x, horizon, n, rng, memo
        self.time = x.plates[-1].name
        self.plates = x.plates[:-1] + (horizon,)

    def _untimed(self, values: np.ndarray, plates: tuple) -> tuple[np.ndarray, tuple]:
        """``values`` over ``plates`` with the time plate cut to its last step and dropped."""
        for axis, p in enumerate(plates):
            if p.name == self.time:
                return np.take(values, -1, axis=1 + axis), plates[:axis] + plates[axis + 1:]
        return values, plates

    def _chains(self, values: np.ndarray, plates: tuple) -> np.ndarray:
        """A parameter over the chains (time dropped): (n, chains..., event)."""
        chains = self.x.plates[:-1]
        values, plates = self._untimed(values, plates)
        out = align(values, plates, chains)
        return np.broadcast_to(out, (out.shape[0],) + self.x.plate_shape[:-1] + out.shape[1 + len(chains):])

    def _param(self, expr, regime) -> np.ndarray:
        """A parameter of the chain at a future step: (n, chains..., event)."""
        if isinstance(expr, Matrix) and expr.node is None:
            return np.broadcast_to(self._chains(expr.constant[None], expr.plates), (self.n,) + self.x.plate_shape[:-1]
                                   + expr.constant.shape[-2:])
        if isinstance(expr, (Matrix, Diagonal)):
            values, plates = self._drawn(expr.node, regime)
            rows = align(values, plates, plates[:-1] + (expr.dim_plate,)) if plates[-1] != expr.dim_plate else values
            if isinstance(expr, Diagonal):
                rows = rows[..., :, None] * np.eye(rows.shape[-1])
            return self._chains(rows, plates[:-1])
        values, plates = self._drawn(expr, regime)
        return self._chains(values, plates)

    def _drawn(self, expr, regime) -> tuple[np.ndarray, tuple]:
        """(draws, plates) of a node, a constant, or a node gated by the regime chain (its gated
        plate replaced by the current regime of each chain)."""
        if isinstance(expr, Gate):
            others = tuple(p for p in expr.node.plates if p != expr.gated_plate)
            values = align(draw(expr.node, self.n, self.rng, self.memo), expr.node.plates,
                           (expr.gated_plate,) + others)
            chosen = values[np.arange(self.n)[:, None], regime.reshape(self.n, -1)]
            chains = self.x.plates[:-1]
            return chosen.reshape((self.n,) + self.x.plate_shape[:-1] + chosen.shape[2:]), chains + others
        if isinstance(expr, (Constant, PlatedConstant)):
            return np.asarray(expr.value, float)[None], expr.plates
        if getattr(expr, "random", False):
            return draw(expr, self.n, self.rng, self.memo), expr.plates
        raise GraphError(f"forecast: chain '{self.x.name}': cannot draw its parameter '{expr.name}'")

    def states(self, inputs) -> np.ndarray:
        """Paths (n, chains..., h, D): x_{L-1} from its marginal, then x_{t+1} = A x_t + B u_t + w_t."""
        x, n, h = self.x, self.n, self.horizon.size
        last = x.lengths - 1
        p = x.parameters
        at = tuple(np.indices(last.shape)) + (last,)
        mean, cov = p["mean"][at], p["covariance"][at]
        state = mean + np.einsum("...ij,n...j->n...i", np.linalg.cholesky(cov), self.rng.standard_normal((n,) + mean.shape))
        regimes = _Regimes(x, self, last) if isinstance(getattr(x.parents["transition"], "node", None), Gate) else None
        u = _inputs(x, inputs, h)
        out = np.empty((n,) + mean.shape[:-1] + (h, mean.shape[-1]))
        for t in range(h):
            regime = None if regimes is None else regimes.step()
            a, q = self._param(x.parents["transition"], regime), self._param(x.parents["noise"], regime)
            state = np.einsum("n...ij,n...j->n...i", a, state)
            if u is not None:
                state = state + np.einsum("n...ij,...j->n...i", self._param(x.parents["control"], regime), u[..., t, :])
            root = np.linalg.cholesky(np.linalg.inv(q))
            state = state + np.einsum("n...ij,n...j->n...i", root, self.rng.standard_normal(state.shape))
            out[..., t, :] = state
        return out

    def value(self, expr, child, paths: np.ndarray) -> np.ndarray:
        """A parent expression of the child at the future steps, laid over the child's plates."""
        target = tuple(self.horizon if p.name == self.time else p for p in child.plates)
        return self._laid(expr, paths, target, child)

    def _laid(self, expr, paths, target, child) -> np.ndarray:
        if isinstance(expr, Steps):
            return align(paths, self.plates, target)
        if isinstance(expr, Linear):
            w = np.asarray(expr.weight, float)[None]
            inner = self._laid(expr.node, paths, target, child)
            w, plates = self._untimed(w, expr.weight_plates)
            w = align(w, plates, target)
            return np.einsum("...ij,...j->...i", w, inner) if expr.matrix else w * inner
        if isinstance(expr, RandomMap):
            rows = align(draw(expr.rows.node, self.n, self.rng, self.memo), expr.rows.node.plates,
                         target + (expr.rows.dim_plate,))
            return np.einsum("...ij,...j->...i", rows, self._laid(expr.node, paths, target, child))
        if isinstance(expr, Dot) and expr.shared is None:
            u, v = self._laid(expr.u, paths, target, child), self._laid(expr.v, paths, target, child)
            return np.einsum("...d,...d->...", u, v)
        if isinstance(expr, Sum):
            return sum(self._laid(t, paths, target, child) for t in expr.terms)
        if isinstance(expr, Diagonal):
            return self._diagonal(expr, target)
        if isinstance(expr, (Constant, PlatedConstant)):
            plates = expr.plates if isinstance(expr, PlatedConstant) else child.plates
            values, plates = self._untimed(np.asarray(expr.value, float)[None], plates)
            return align(values, plates, target)
        if getattr(expr, "random", False) and all(p.name != self.time for p in expr.plates):
            return align(draw(expr, self.n, self.rng, self.memo), expr.plates, target)
        raise GraphError(f"forecast: cannot read '{expr.name}' ({type(expr).__name__}) at future steps")

    def _diagonal(self, expr, target) -> np.ndarray:
        """diag(alpha) of a Gamma node over the event dimensions (an ARD precision)."""
        values = align(draw(expr.node, self.n, self.rng, self.memo), expr.node.plates, target + (expr.dim_plate,))
        return values[..., :, None] * np.eye(values.shape[-1])


def _inputs(x, inputs, h: int):
    if x.factor.inputs is None:
        return None
    if inputs is None:
        raise GraphError(f"forecast: chain '{x.name}' has inputs; give the next {h} steps' (inputs=, h x M)")
    u = np.asarray(inputs, float)
    m = x.factor.inputs.shape[-1]
    try:
        return np.broadcast_to(u, x.plate_shape[:-1] + (h, m))
    except ValueError:
        raise GraphError(f"forecast: inputs have shape {u.shape}, expected ({h}, {m}) or per chain") from None


class _Regimes:
    """A regime chain s run forward: s_{L-1} from its marginal, s_{t+1} ~ Cat(Pi[s_t]) with Pi
    drawn from q; ``step`` gives the regime (n, chains...) that governs the next transition."""

    def __init__(self, x, future: _Future, last: np.ndarray):
        self.s = x.parents["transition"].node.selector
        self.future, self.n = future, future.n
        marginals = self.s.mean[tuple(np.indices(last.shape)) + (last,)]
        self.state = _pick(future.rng, np.broadcast_to(marginals, (self.n,) + marginals.shape))
        self.pi = draw(self.s.parents["transition"].node, self.n, future.rng, future.memo)  # (n, K, K)
        self.first = True

    def step(self) -> np.ndarray:
        if not self.first:
            rows = np.take_along_axis(self.pi, self.state.reshape(self.n, -1, 1), axis=1)
            self.state = _pick(self.future.rng, rows).reshape(self.state.shape)
        self.first = False
        return self.state


def _pick(rng, p: np.ndarray) -> np.ndarray:
    """One category per row of probabilities p (..., K)."""
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum((u > np.cumsum(p, -1)).sum(-1), p.shape[-1] - 1)
