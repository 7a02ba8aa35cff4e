"""Batch VMP (Winn & Bishop 2005, section 3.2): coordinate ascent, parents first.

    for each hidden node i, in order:   lambda_i <- lambda_i^temp     (every child read; rho = 1)

Each update is the exact optimum of q_i given the others, so the bound never decreases: a fall
is a bug or a numerical breakdown, reported (and the node whose update causes it named), never
taken for convergence. Policies (annealing, tempering) weight every factor of the data plate by
their 1/T; the fit then ascends the tempered objective, and the stopping rule watches it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConvergenceError, VMPError
from ..graph.change import relative_change
from . import steps
from .init import initialize
from .method import Bound, Method, StepInfo, Verdict
from .options import Options
from .state import LoopState, State
from .subsample import BatchPlan, Draw


class ElboDecreaseWarning(UserWarning):
    """The bound fell during batch VMP: a bug or a numerical breakdown, never convergence."""


class ConvergenceWarning(UserWarning):
    """Batch VMP ran out of iterations before its bound met ``tol``: q is not at a fixed point."""


class BatchVMP(Method):
    name = "batch"
    raises = True

    def __init__(self, options: Options, engine):
        self.options = options.batch
        self.policies = options.policies
        self.plan = BatchPlan(engine, data_plate(engine.model, self.options.plate) if self.policies else None)

    def start(self, engine, rng, init) -> tuple[State, int]:
        return initialize(engine, rng, init, self.plan), 0

    def step(self, engine, state: State, draw: Draw) -> tuple[State, StepInfo]:
        """One sweep: each node's coordinate-ascent optimum given the others (with policies,
        the data plate's factors weighted by their 1/T), then the policies' updates."""
        current = state
        try:
            for node in self.plan.stepped:
                ctx = self.plan.contexts(engine, draw, node, draw.weight)
                if engine.coupled_plate(node) is None:
                    new = engine.target(current, node, ctx=ctx)
                else:  # elements that meet in one factor: one slice at a time
                    new = engine.coordinate(current, node, ctx=ctx)[0]
                engine.check_domain(node, new)
                current = current.updated({node.name: (new, engine.moments(node, new))})
        except ConvergenceError as err:
            return state, StepInfo(series=dict(draw.records), error=err)
        loop = state.loop
        if self.policies:
            loop = replace(loop, policies=self._observe(engine, current, loop.policies))
        loop = replace(loop, accesses=loop.accesses + self.plan.per_sweep)
        change = {n.name: relative_change(state.natural[n.name], current.natural[n.name]) for n in self.plan.stepped}
        info = StepInfo(rho={n.name: 1.0 for n in self.plan.stepped}, change=change, series=dict(draw.records))
        return current.updated({}, step=state.step + 1, loop=loop), info

    def _observe(self, engine, state: State, policies: list) -> list:
        """The policies' updates after a sweep, from every row of the data plate."""
        plan = self.plan
        ctx = replace(plan.context(plan.rows), overrides={n.name: state.moments[n.name] for n in plan.local},
                      state=state)
        bound = steps.data_bound(engine, plan, ctx) if any(p.needs_data_bound for p in self.policies) else None
        return [p.observe(engine, plan, ctx, bound, st) for p, st in zip(self.policies, policies)]

    def bound(self, engine, state: State) -> Bound:
        return Bound(engine.elbo(state, cached=True))

    def objective_rows(self):
        return self.plan.rows

    def tempered_bound(self, engine, state: State, rows, weight) -> float:
        return engine.elbo(state, weights=self.plan.weights(engine, weight), cached=False)

    def verdict(self, engine, state: State, evaluations: dict, watched: list, t: int) -> Verdict | None:
        """A bound that is not finite ends the fit; one that fell by more than ``decrease_tol``
        relative is reported (warned or raised) and ends it; one that rose by at most ``tol``
        relative has converged."""
        o = self.options
        if not np.isfinite(evaluations["elbo"][-1]):
            return Verdict("the ELBO is not finite")
        if len(watched) < 2:
            return None
        value, prev = watched[-1], watched[-2]
        change = value - prev
        if change < -o.decrease_tol * max(abs(prev), 1.0):
            if self.policies:
                decrease = {"node": None, "amount": -change, "objective": "tempered"}
                message = f"the tempered objective decreased by {-change:.3g} at iteration {t}"
            else:
                decrease = locate_decrease(engine, state, self.plan.stepped, value)
                message = f"the ELBO decreased by {-change:.3g} at iteration {t}; " + decrease_text(decrease)
            return Verdict(message, decrease=decrease, warning=ElboDecreaseWarning, error=o.on_decrease == "raise")
        if o.tol > 0 and change <= o.tol * abs(value):  # tol <= 0: every sweep
            return Verdict(f"relative ELBO change below {o.tol:g}", converged=True)
        return None

    def diverged(self, loop: LoopState, elbo: np.ndarray) -> bool:
        return not bool(np.all(np.isfinite(elbo)))

    def describe(self) -> dict:
        return {"method": "batch", "bound": "exact"}


def data_plate(model, plate: str | None) -> str:
    """The plate whose factors batch VMP's policies weight: ``plate``, or the one outermost
    plate of every observed node."""
    if plate is not None:
        return plate
    outer = sorted({n.plates[0].name for n in model.nodes.values() if n.has_data and n.plates})
    if len(outer) != 1:
        raise VMPError(f"policies= in batch VMP weight the factors of one data plate: name it with plate= "
                       f"(the observed nodes' outermost plates: {outer})")
    return outer[0]


def locate_decrease(engine, state: State, nodes, start_value: float) -> dict:
    """One more sweep from ``state``, evaluating the bound after each node's update. Names the
    node whose update lowers the bound (the state is left as it was)."""
    worst = {"node": None, "amount": 0.0}
    value = start_value
    for node in nodes:
        try:
            state = state.updated({node.name: engine.coordinate(state, node)})
            new = engine.elbo(state)
        except np.linalg.LinAlgError:  # (a precision no longer positive definite in floating point)
            return {"node": node.name, "amount": float("inf")}
        if value - new > worst["amount"]:
            worst = {"node": node.name, "amount": value - new}
        value = new
    return worst


def decrease_text(decrease: dict) -> str:
    """Where :func:`locate_decrease` found the decrease: a node's update, or none (a change at
    the rounding level of the bound's terms, e.g. under a prior of huge precision); with
    policies no sweep is run: the tempered objective's decrease."""
    if decrease.get("objective") == "tempered":
        return f"the tempered objective decreased by {decrease['amount']:.3g} (with policies no sweep locates it)"
    if decrease.get("node") is None:
        return ("in a diagnostic sweep no single node's update lowered it (a change at the rounding level "
                "of the bound's terms?)")
    if decrease["amount"] == float("inf"):
        return (f"in a diagnostic sweep the update of node '{decrease['node']}' gave a precision matrix that is "
                f"not positive definite in floating point (rescale the inputs)")
    return f"in a diagnostic sweep the update of node '{decrease['node']}' lowered it by {decrease['amount']:.3g}"
