"""A minibatch's local step on the workers that hold its rows, in one round of tasks.

Given the global q, the drawn data-plate elements are independent (Hoffman et al. 2013, Fig. 6
step 5; Paquet Alg. 2): a document's theta and its tokens' z read only that document's words and
the globals. So each partition runs :func:`~vmp.inference.steps.local_step` on the drawn rows it
holds, with the plan of its rows (:meth:`MinibatchPlan.on_part
<vmp.inference.subsample.MinibatchPlan.on_part>`), and in the same task sends back

- per drawn row its local terms (:func:`~vmp.inference.steps.local_terms`: the bound estimate's
  data part, zeros at the other partitions' rows, so the tree sum is their concatenation);
- the observed elements its local step read;
- each requested global's children sum (Paquet eq. (6) with scale N / |S|) over its rows,
  sparse where mostly zero (:mod:`~vmp.inference.sparse`).

The round carries the globals' moments and, for a Gaussian global, its natural parameters with
the root its precision is factorized from (:mod:`~vmp.families._gram`), kept for them again on
the worker; where a global's summed precision is ill-conditioned, each partition's rows of its
sum, compacted to their QR factor, are asked of its worker (:func:`drawn_rows`).

The locals' q stays on the worker (the holder keeps the last step's) and never travels. The
driver's Context of the step has the drawn subsets and, as the locals' moments, :class:`Remote`
handles of them: a global's target under it (``Partitioned.children``) takes the sum of the
round when the globals its factors read are those the round read (the same objects), and
otherwise sends one more round that reads the kept locals (option (a)'s Lambda after mu moved;
a coupled node's slices). A worker that lost the kept locals (recomputed after a failure)
recomputes them from the same rows and globals: the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import VMPError
from ..families import _gram
from ..graph import held
from ..graph.held import Held
from . import steps
from .partitioned_worker import _global_state
from .sparse import sparse
from .state import State
from .subsample import Draw


@dataclass
class Round:
    """One minibatch's local step on the cluster: its key, the drawn rows per partition
    (partition index, rows, offset in the drawn rows), the globals' moments it read, the
    children sums its first round returned, and the Gaussian globals' (natural, root) it read
    (``Partitioned._read``)."""

    key: int
    rows: np.ndarray
    parts: list
    snapshot: dict
    sums: dict = field(default_factory=dict)
    natural: dict = field(default_factory=dict)


class Remote(Held):
    """The moments of a local at the drawn rows of one ``Round``, kept by the workers that ran
    it (read here, they are gathered from them while they still hold that step's locals)."""

    def __new__(cls, executor, round_: Round, name: str, axis: int, size: int):
        obj = super().__new__(cls, (None,) * size)
        obj.executor, obj.round, obj.name, obj.axis, obj._full = executor, round_, name, axis, None
        return obj

    def gathered(self) -> tuple:
        if self._full is None:
            self._full = self.executor.drawn(self.round, self.name, self.axis)
        return self._full

    def pieces(self, where):
        """The Round, for the executor that ran it."""
        return self.round if where is self.executor else None

    def __repr__(self) -> str:
        return f"Remote({self.name}, step {self.round.key})"


@dataclass
class LocalStep:
    """What the driver gets back from a local step run where the rows live: the Context of the
    drawn rows (locals as :class:`Remote`), the observed elements read, per drawn row its local
    terms."""

    ctx: object
    accesses: int
    terms: np.ndarray


def remote_round(ctx, executor) -> Round | None:
    """The Round of ``executor`` whose kept locals ``ctx`` (or one of its factors' Contexts)
    reads, if any."""
    for c in [ctx, *ctx.factors.values()]:
        for value in c.overrides.values():
            found = held.pieces(value, executor)
            if found is not None:
                return found
    return None


def requests(engine, plan, nodes, snapshot: bool) -> list:
    """The stepped nodes whose targets the first round computes: a node whose children are on
    the drawn plates and whose factors read no node stepped before it (all of them under option
    (b), ``snapshot``); a node stepped slice by slice waits for its own rounds."""
    out, before = [], set()
    for node in nodes:
        factors = [f for f in engine.touching[node.name] if f.child is not node]
        reads = {n.name for f in factors for n in f.nodes()}
        if factors and all(plan.on_batch(f) for f in factors) and engine.coupled_plate(node) is None \
                and (snapshot or not reads & before):
            out.append((node.name, None, None, {}, {}))
        before.add(node.name)
    return out


def driver_context(executor, plan, rows: np.ndarray, round_: Round):
    """The step's Context on the driver: the drawn subsets, the locals' moments as Remote
    handles."""
    ctx = plan.context(rows)
    axes = {n.name: next(i for i, p in enumerate(n.plates) if p.name in ctx.subset) for n in plan.local}
    return replace(ctx, overrides={n.name: Remote(executor, round_, n.name, axes[n.name],
                                                  len(n.component_shapes())) for n in plan.local})


def changed(engine, state: State, node, ctx, round_: Round) -> dict | None:
    """The moments that the factors of ``node``'s children read and that differ from the round's
    (None: the round's sum serves as it is)."""
    reads = {n.name for f in engine.below[node.name] for n in f.nodes()} & set(round_.snapshot)
    moved = {k: state.moments[k] for k in reads if state.moments[k] is not round_.snapshot[k]}
    if not moved and ctx.plate is None and ctx.weights is None and node.name in round_.sums:
        return None
    return moved


def local_step(holder, key: int, rows: np.ndarray, offset: int, n: int, snapshot: dict, asked: list,
               natural: dict | None = None) -> dict:
    """On a worker: the local step of the drawn ``rows`` this holder holds (computed once per
    ``key``: the kept locals), their local terms at ``offset`` in a vector of the ``n`` drawn
    rows, the observed elements read, and the children sum of each global in ``asked`` (name,
    plate, index, the globals' moments that moved since ``snapshot`` and the (natural, root) of
    the Gaussians among them); ``natural``: the snapshot's Gaussian globals' (natural, root)
    (``partitioned_worker._global_state``)."""
    engine, plan = holder.engine, holder.plan
    last = holder.last_step
    if last is None or last[0] != key:
        state = _global_state(snapshot, natural)
        ctx, local, accesses = steps.local_step(engine, plan, state, plan.context(np.array(rows)))
        terms = steps.local_terms(engine, plan, ctx, local, rows.size)
        holder.last_step = last = (key, state, ctx, accesses, terms)
    _, _, _, accesses, terms = last
    full = np.zeros(n)
    full[offset:offset + rows.size] = terms
    sums = {ask[0]: sparse(_share(holder, rows, ask)) for ask in asked}
    return {"accesses": accesses, "terms": full, "sums": sums}


def _share(holder, rows: np.ndarray, ask: tuple):
    """The children sum of ``ask``'s global (name, plate, index, moved moments, their (natural,
    root)) over the drawn ``rows`` this holder holds, reading the locals its last step kept."""
    engine, plan = holder.engine, holder.plan
    _, state, ctx, _, _ = holder.last_step
    name, plate, index, moved, natural = ask
    if moved:
        now = _global_state(moved, natural)
        state = State(natural={**state.natural, **now.natural}, moments={**state.moments, **now.moments})
    node = engine.nodes[name]
    ctx = plan.contexts(engine, Draw(rows=rows, ctx=ctx), node).sliced(
        None if plate is None else engine.model.plates[plate], index)
    return engine.children(state, node, ctx)


def drawn_rows(holder, key: int, rows: np.ndarray, ask: tuple):
    """On a worker: the rows (B, z) that its share of ``ask``'s children sum over the drawn
    ``rows`` of step ``key`` declares (``Family.parts``), compacted to their QR factor
    (``_gram.compact``), or None."""
    last = holder.last_step
    if last is None or last[0] != key:
        raise VMPError(f"the locals of step {key} are no longer held (a later step replaced them)")
    total = _share(holder, rows, ask)
    parts = holder.engine.nodes[ask[0]].family.parts(total)
    made = None if parts is None else parts()
    return None if made is None else _gram.compact(made)


def drawn(holder, key: int, name: str) -> tuple:
    """On a worker: the moments of the local ``name`` at the drawn rows of step ``key``."""
    last = holder.last_step
    if last is None or last[0] != key:
        raise VMPError(f"the locals of step {key} are no longer held (a later step replaced them)")
    return last[2].overrides[name]
