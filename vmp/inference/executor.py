"""Executors: where the sums over the data plate run.

Every message to a node from its children is a sum over their plate elements (Winn & Bishop
eq. (5); Paquet eq. (6) for a draw), so it partitions: an executor splits an evaluation into
partitions, runs ``fn`` on each and adds the results (tuples of arrays, dicts of them, numbers).
``Serial`` runs everything here in one partition and gives the same bits as a direct call. A
new executor (a Dask cluster, a process pool) is one new file with a subclass of ``Executor``.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..factors.terms import plus

if TYPE_CHECKING:
    from .state import State


def add(a: Any, b: Any) -> Any:
    """Sum of two partial results: None is zero; tuples and dicts add elementwise."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, dict):
        return {k: add(a.get(k), b.get(k)) for k in {**a, **b}}
    if isinstance(a, tuple):
        return tuple(add(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return plus(a, b)
    return a + b


class Executor(ABC):
    #: every row of the data lives in this process (a partially observed node's batch update may
    #: then form q at its latent rows only, ``graph/partial.py``)
    rows_here: bool = False

    @abstractmethod
    def partitions(self, ctx) -> list:
        """The pieces of an evaluation over ``ctx`` (a Context)."""

    @abstractmethod
    def map_sum(self, fn: Callable[[Any], Any], partitions: Iterable) -> Any:
        """sum over p in ``partitions`` of fn(p)."""

    def local_target(self, engine, state, node, ctx):
        """lambda^temp of a node whose elements the executor partitions (a local on the data
        plate), kept where its rows live (a tuple-like handle); None: the engine computes it here."""
        return None

    def prepare(self, engine, plan) -> None:
        """Told the fit's plan (a :class:`~vmp.inference.subsample.Plan`) once, before its first
        step."""

    def local_step(self, engine, plan, state: "State", rows, nodes=(), snapshot: bool = False):
        """A minibatch's local step (:func:`~vmp.inference.steps.local_step` on the drawn
        ``rows``) run where the rows live, with the children sums of the stepped ``nodes`` it
        can give at once (all from ``state`` when ``snapshot``, option (b)): an object with the
        Context of the rows for the targets (``ctx``), the observed elements read
        (``accesses``) and per row its local terms (``terms``); None: the loop runs it here."""
        return None

    def finish(self, state):
        """The State handed back at the end of a run, with everything kept elsewhere (a local's
        rows on workers) brought here; the same values."""
        return state

    def bound(self, engine, state, weights=None) -> tuple[set, float]:
        """(names, total): the ELBO terms the executor summed over its partitions (factors named
        by their child, entropies by their node); the engine adds the others."""
        return set(), 0.0


class Serial(Executor):
    """Everything in this process, in one partition: the reference executor."""

    rows_here = True

    def partitions(self, ctx) -> list:
        return [ctx]

    def map_sum(self, fn, partitions):
        total = None
        for p in partitions:
            total = add(total, fn(p))
        return total

    def __repr__(self) -> str:
        return "Serial()"


class Children:
    """sum over the factors f of ``node``'s children of eta_f->node on one partition (Winn &
    Bishop eq. (5); Paquet eq. (6) for a draw): the ``fn`` an executor maps. Calling it runs in
    this process with the engine and State it was made with; ``run`` takes another engine (a
    worker's copy of the model) and State (the moments shipped to it). It pickles without them:
    only the node's name, the factors' weights and the slice travel; each partition is a
    Context of the evaluation (its restriction)."""

    def __init__(self, engine, state: State, node, ctx=None):
        self.engine, self.state, self.node = engine, state, node.name
        self.weights, self.index = (None, None) if ctx is None else (ctx.weights, ctx.index)
        self.plate = None if ctx is None or ctx.plate is None else ctx.plate.name

    def __call__(self, part):
        return self.run(self.engine, self.state, part)

    def factors(self, engine) -> list:
        node = engine.nodes[self.node]
        return [f for f in engine.touching[self.node] if f.child is not node]

    def run(self, engine, state: State, part):
        node = engine.nodes[self.node]
        plate = None if self.plate is None else next(p for p in node.plates if p.name == self.plate)
        part = replace(part, weights=self.weights, plate=plate, index=self.index)
        total = None
        for f in self.factors(engine):
            total = add(total, engine.message(state, node, f, part))
        return total

    def __getstate__(self) -> dict:
        return {**self.__dict__, "engine": None, "state": None}
