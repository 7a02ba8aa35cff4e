"""What batch and stochastic VMP share as the loop sees them: a method moves q one step at a time.

    draw = method.draw(engine, state, rng)              # the plan's subsets, the policies' weights
    state, info = method.step(engine, state, draw)      # the next State, and what the step did

A step is a function of its arguments: it returns a new State (q, and the loop's own
:class:`~vmp.inference.state.LoopState`) and a :class:`StepInfo` for the history, and leaves the
State it was given as it was. ``bound`` evaluates the ELBO as the method reports it and
``verdict`` reads the evaluations so far: whether the fit ends (converged, or the bound shows
it diverged). ``batch.py`` and ``stochastic.py`` are the two methods.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

import numpy as np

from .state import LoopState, State
from .subsample import Draw, Plan


def combine(a, b):
    """The product of two policies' weights, None standing for 1."""
    if a is None:
        return b
    if b is None:
        return a
    return a * b


class DivergenceWarning(UserWarning):
    """A monitor with action='warn' saw a step or a bound that signals divergence."""


@dataclass(frozen=True)
class Event:
    """Something a monitor, a policy or the stopping rule reported at a step: its source, the
    node (or None), the action taken ('warn', 'stop', 'backoff', 'skip') and what it saw."""

    source: str
    node: str | None
    action: str
    message: str


@dataclass(frozen=True)
class StepInfo:
    """What one step did: each stepped node's rate (its mean when per element; nan for a node
    it skipped) and the relative change of its natural parameters, further series for the
    history (``bound_estimate``, ``adaptive_factor``, the policies' records), and its events.
    ``stopped``: a monitor with action 'stop' ended the fit at this step; ``error``: a node left
    its domain. With either the State returned is the one the step was given."""

    rho: dict = field(default_factory=dict)
    change: dict = field(default_factory=dict)
    series: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    stopped: str | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class Bound:
    """One evaluation of the bound: its value, its standard error (0 when exact), the held-out
    rows' per-element bound (None without held-out rows) and, for an estimate from a subsample,
    the per-row local terms it sums (None when exact)."""

    value: float
    stderr: float = 0.0
    heldout: float | None = None
    terms: np.ndarray | None = None


@dataclass(frozen=True)
class Verdict:
    """Why a fit ends after an evaluation: its message, and the LoopState fields it sets.
    ``warning``: the category to warn with; ``error``: raise a ConvergenceError instead."""

    message: str
    converged: bool = False
    diverged: bool = False
    decrease: dict | None = None
    events: list = field(default_factory=list)
    warning: type | None = None
    error: bool = False


class Method(ABC):
    """Batch or stochastic VMP over one ``plan`` (what a step reads), with the fit's policies."""

    name: str
    plan: Plan
    policies: tuple = ()
    monitors: tuple = ()
    #: steps between evaluations of the bound
    evaluate_every: int = 1
    #: numpy's overflow and invalid-value warnings silenced in its steps (a stochastic step may
    #: overshoot; the monitors judge it)
    quiet: bool = False
    #: whether a ConvergenceError (a node left its domain, ``on_decrease='raise'``) reaches the
    #: caller after the fit has recorded it (else the fit ends as diverged)
    raises: bool = False
    #: whether ``result()`` evaluates the bound at the last step when the fit did not
    closes: bool = False

    def draw(self, engine, state: State, rng: np.random.Generator) -> Draw:
        """The subsets of the next step (``plan.draw``), with the policies' weights of its rows
        and their records, and ``rng`` for the draws the step may add."""
        t = state.step + 1
        draw = self.plan.draw(engine, rng)
        local = weight = None
        records: dict = {}
        for p, st in zip(self.policies, state.loop.policies):
            lw, gw = p.weights(t, draw.rows, rng, st)
            local, weight = combine(local, lw), combine(weight, gw)
            records.update(p.record(t, draw.rows, st))
        return replace(draw, local_weight=local, weight=weight, records=records, rng=rng)

    @abstractmethod
    def start(self, engine, rng: np.random.Generator, init) -> tuple[State, int]:
        """The initial q (``init.initialize``) and the observed elements its start read."""

    def loop_start(self, engine, state: State, rng: np.random.Generator, accesses: int) -> LoopState:
        """The loop's state before the first step (the schedules' states of a warm start kept)."""
        return LoopState(accesses=accesses, backoff={n.name: 1.0 for n in self.plan.stepped},
                         schedules=dict(state.loop.schedules),
                         policies=[p.start(engine, self.plan, state, rng) for p in self.policies],
                         monitors=[m.start() for m in self.monitors], plan=self.plan.saved())

    @abstractmethod
    def step(self, engine, state: State, draw: Draw) -> tuple[State, StepInfo]:
        """The next State and what the step did."""

    @abstractmethod
    def bound(self, engine, state: State) -> Bound:
        """The bound at ``state`` as the fit reports it."""

    @abstractmethod
    def objective_rows(self) -> np.ndarray | None:
        """The rows of the data plate the tempered objective is evaluated on."""

    @abstractmethod
    def tempered_bound(self, engine, state: State, rows, weight) -> float:
        """The bound with the data plate's factors at ``rows`` weighted by ``weight`` (1/T)."""

    def observe(self, loop: LoopState, t: int, bound: Bound) -> LoopState:
        """The loop's state after the evaluation ``bound`` at step t: what the method's stopping
        rule remembers of it (none by default)."""
        return loop

    @abstractmethod
    def verdict(self, engine, state: State, evaluations: dict, watched: list, t: int) -> Verdict | None:
        """After an evaluation at step t: why the fit ends now, or None. ``evaluations`` is the
        history's, ``watched`` the values the stopping rule compares (the bound, or with
        policies the tempered objective's stretch)."""

    @abstractmethod
    def diverged(self, loop: LoopState, elbo: np.ndarray) -> bool:
        """Whether the fit that ended with ``loop`` and evaluations ``elbo`` diverged."""

    @abstractmethod
    def describe(self) -> dict:
        """The method and its options, for ``result.extra``."""
