"""Executors: where the sums over the data plate run.

Every message to a node from its children is a sum over their plate elements (Winn & Bishop
eq. (5); Paquet eq. (6) for a draw), and so are a local's update (row by row) and the bound, so
each can be split into pieces of rows, evaluated where the rows are, and added. An ``Executor``
says how, through the operations the engine and the loop ask of it:

- :meth:`Executor.children`: sum over the factors f of a node's children of eta_f->node;
- :meth:`Executor.bound`: the ELBO terms it sums over its pieces;
- :meth:`Executor.local`: a local's update kept where its rows live (a :class:`~vmp.graph.held.Held`);
- :meth:`Executor.local_step`: a minibatch's local step run where its rows live;
- :meth:`Executor.start`, :meth:`Executor.finish`, :meth:`Executor.close`: a fit's start, the
  State handed back at the end of a run, the release of what it holds.

``Serial`` runs everything here in one piece and gives the same bits as a direct call. A new
executor is one new file with a subclass of ``Executor`` (or of
:class:`~vmp.inference.executor_partitioned.Partitioned` over a new kind of workers).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from ..factors.terms import plus

if TYPE_CHECKING:
    from ..graph.held import Held
    from ..graph.leaves import Context
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
    """What an executor provides for the engine and the loop (module docstring)."""

    #: every row of the data lives in this process (a partially observed node's batch update may
    #: then form q at its latent rows only, ``graph/partial.py``)
    rows_here: bool = False
    #: a children sum is one evaluation of each factor over all of its elements in this process
    #: (the factors then keep the messages that the bound at a node's optimum reads)
    sums_here: bool = False
    #: the pieces hold only their rows of observed data, so a plate whose factors read an
    #: observed node at other rows cannot be split (``partition.apart``)
    cuts_data: bool = False

    @abstractmethod
    def children(self, engine, state: "State", node, ctx: "Context") -> tuple | None:
        """sum over the factors f of ``node``'s children of eta_f->node in ``ctx`` (Winn &
        Bishop eq. (5); Paquet eq. (6) for a draw); None when it has no children."""

    @abstractmethod
    def bound(self, engine, state: "State", weights: dict | None = None) -> tuple[set, float]:
        """(names, total): the ELBO terms the executor summed over its pieces (factors named by
        their child, entropies by their node); the engine adds the others."""

    def local(self, engine, state: "State", node, ctx: "Context") -> "Held | None":
        """lambda^temp of a local on the rows the executor holds, kept where they live (a
        handle the State holds); None: the engine computes it here."""
        return None

    def local_step(self, engine, plan, state: "State", rows: np.ndarray, nodes=(), snapshot: bool = False):
        """A minibatch's local step (:func:`~vmp.inference.steps.local_step` on the drawn
        ``rows``) run where the rows live, with the children sums of the stepped ``nodes`` it
        can give at once (all from ``state`` when ``snapshot``, option (b)): an object with the
        Context of the rows for the targets (``ctx``), the observed elements read
        (``accesses``) and per row its local terms (``terms``); None: the loop runs it here."""
        return None

    def start(self, engine, plan) -> None:
        """Told the fit's plan (a :class:`~vmp.inference.subsample.Plan`) once, before its first
        step."""

    def finish(self, state: "State") -> "State":
        """The State handed back at the end of a run, with everything kept elsewhere (a local's
        rows on workers) brought here; the same values."""
        return state

    def close(self) -> None:
        """Release what the executor holds (workers' copies of the model, kept locals)."""


class Serial(Executor):
    """Everything in this process, in one piece: the reference executor."""

    rows_here = True
    sums_here = True

    def children(self, engine, state, node, ctx):
        return engine.children(state, node, ctx)

    def bound(self, engine, state, weights=None) -> tuple[set, float]:
        return set(), 0.0

    def __repr__(self) -> str:
        return "Serial()"
