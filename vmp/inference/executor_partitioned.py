"""An executor over partitions of the data plate, each held by a worker: the sums run where the rows are.

Every message to a global node from its children is a sum over the data plate's elements
(Winn & Bishop eq. (5); Paquet eq. (6) for a draw), so it splits into contiguous row ranges of
that plate, the partitions. Each partition lives on a worker with its own copy of the model
(unpickled once per fit: ``pickle.dumps(model)`` drops compiled caches) holding only the
partition's rows of the observed data and of the other arrays over the plate
(:func:`~vmp.inference.partition_model.partition_blob`), and its evaluation is a
:class:`~vmp.graph.leaves.Context` restricting the data plate to the partition's rows, with the
moments of the nodes on that plate (the locals, e.g. z) as overrides restricted to those rows.
A sum over the children is then, per partition, the same
:meth:`Engine.children <vmp.inference.engine.Engine.children>` that the serial executor runs,
followed by a fixed binary tree of additions (the same tree every run: the same bits for the
same seed).

What travels per message: the task (a node's name), the moments of the nodes off the data plate
that its factors read (the globals: small), with a Gaussian global's natural parameters and the
root its precision is factorized from where it has one (:mod:`~vmp.families._gram`: kept for
them again on the worker, which then reads q as the driver does), the restricted Context of a
draw (its rows, scale and locals: O(|S|)), and back a natural-parameter sum (as the columns it
touches when it is mostly zero: :mod:`~vmp.inference.sparse`). Where the summed precision is
ill-conditioned, each partition's rows of it, compacted to their QR factor, are asked of its
worker and stacked (:meth:`Partitioned.children`). The locals of a batch fit (the nodes on the
data plate) are updated where their rows live (:meth:`Partitioned.local`) and stay there: the
fit's State holds a :class:`Kept` handle, whose moments, domain check, relative change and share
of the bound (:meth:`Partitioned.bound`) are computed on the workers; they are gathered into the
State once, at the end of a run (:meth:`Partitioned.finish`). The initial locals are sent once
per fit. Minibatches are drawn on the driver from the fit's seed and routed by row to the
partitions that hold them, so the same seed draws the same rows as ``Serial``. For a Minibatch
fit (:meth:`Partitioned.start`) the partitions are ranges of the minibatch's plate, each holding
its rows' elements of the linked plates (a document's tokens), and a step is one round of
tasks: the local step of the drawn rows where they are, the globals' sums and the rows' local
terms (:mod:`~vmp.inference.partitioned_step`); the locals never travel.

Limits: a partially observed node with children (masked entries inferred) keeps all its data
and mask on every holder, and so does a plate linked to the data plate whose elements are not
contiguous (tokens not grouped by document); a Minibatch fit with policies, or with a global
whose children are both on and off the drawn plates, runs its local step on the driver.

Faults: a step whose sum fails because the workers lost its work (``Workers.lost``) puts the
holders on the workers again and is sent again (at most ``retries`` times) from the driver's
State, and a batch fit's kept locals lost with a worker are made again from how they were
made (:class:`_Futures`).

Where the workers are is a :class:`Workers`: a Dask cluster (``executor_dask.py``) or a pool
of processes on this machine (``executor_processes.py``).
"""
from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from dataclasses import replace

import numpy as np

from ..errors import VMPError
from ..families import _gram
from ..graph import held
from ..graph.held import Held
from ..graph.leaves import Context
from .executor import Executor, add
from .partition import data_plate, local_names
from .partition_model import compact_part, partition_blob
from .partitioned_step import LocalStep, Round, changed, driver_context, drawn, drawn_rows, remote_round, requests
from .partitioned_step import local_step as _remote_step
from .partitioned_worker import Sum, _bound, _held, _invalid, _local_target, _moments, _partial, _rows, _slice, _squares
from .sparse import dense


class ClusterError(VMPError):
    """The workers lost the work of a step more often than the executor retries."""


class Workers(ABC):
    """Where a partitioned executor's partitions live: partition i's work runs on one worker
    (the same one while it lives), and what a task returns is held there or brought here.

    A reference to a value held by a worker (``put``, ``send``, ``keep``) may be passed to
    later tasks of that worker, also inside a dict, list or tuple; ``get`` brings values here."""

    @abstractmethod
    def count(self) -> int:
        """How many workers there are now (the default number of partitions)."""

    @abstractmethod
    def put(self, i: int, value):
        """``value`` held by partition ``i``'s worker (put there once: not made again when lost)."""

    @abstractmethod
    def send(self, i: int, value):
        """``value`` held by partition ``i``'s worker (a Dask cluster may make it again)."""

    @abstractmethod
    def keep(self, i: int, fn, *args):
        """``fn(*args)`` run by partition ``i``'s worker, its result held there."""

    @abstractmethod
    def run(self, i: int, fn, *args):
        """``fn(*args)`` run by partition ``i``'s worker, its result to be brought here."""

    @abstractmethod
    def get(self, refs: list) -> list:
        """The values of ``refs`` (of ``keep``, ``run``, ``put``, ``send``), here."""

    @abstractmethod
    def alive(self, ref) -> bool:
        """Whether the value of ``ref`` is still held (a lost worker loses it)."""

    @abstractmethod
    def lost(self, err: BaseException) -> bool:
        """Whether ``err`` is the workers losing work (sent again) rather than an error of the
        computation itself."""

    def reduce(self, refs: list) -> list:
        """The values of ``refs`` brought here after the first levels of :func:`tree` ran where
        they are (none, here: every value comes here)."""
        return self.get(refs)

    def recover(self) -> None:
        """Wait, before the holders are put again after a failure, until there are workers to
        put them on (none to wait for, here)."""

    def close(self) -> None:
        """Release the workers this object started."""


def tree(values: list, combine):
    """values[0] + values[1] + ... by a fixed binary tree: neighbours added in pairs, level by
    level, down to the last two (the same additions in the same order every run)."""
    while len(values) > 2:
        values = [combine(values[j], values[j + 1]) if j + 1 < len(values) else values[j]
                  for j in range(0, len(values), 2)]
    return values[0] if len(values) == 1 else add(values[0], values[1])


class _Futures:
    """One reference per partition, each made by ``make(i)``, and made again from the holders of
    the moment when the workers lost it."""

    def __init__(self, workers: Workers, make, n: int):
        self.workers, self.make = workers, make
        self.futures = [make(i) for i in range(n)]

    def future(self, i: int):
        if not self.workers.alive(self.futures[i]):
            self.futures[i] = self.make(i)
        return self.futures[i]


class _Read:
    """What a recomputation reads of one local: the references the workers keep (by a weak
    reference: a recomputation must not hold the earlier versions of the locals on the workers), or the
    arrays to send."""

    def __init__(self, executor: "Partitioned", name: str, value):
        slices = held.pieces(value, executor)
        self.name, self.slices = name, None if slices is None else weakref.ref(slices)
        self.value = value if slices is None else None

    def future(self, executor: "Partitioned", engine, i: int):
        if self.slices is None:
            return executor._sent(engine, self.name, self.value, i, "moments")
        slices = self.slices()
        if slices is None:
            raise ClusterError(f"{executor.who}: the workers lost the rows of '{self.name}', and the locals "
                               f"they were computed from are no longer held: they cannot be recomputed")
        return slices.future(i)


class Kept(Held):
    """A local's natural parameters or moments kept on the workers, one slice per partition of
    the data plate (``futures``, each made by ``make(i)``: made again, from the holders of the
    moment, when a worker that held it was lost). Reading it (indexing, iterating, saving)
    gathers the rows here; the fit itself only passes it back to the executor."""

    def __new__(cls, executor: "Partitioned", name: str, make, axis: int, size: int):
        obj = super().__new__(cls, (None,) * size)
        obj.executor, obj.name, obj.axis, obj._full = executor, name, axis, None
        obj.bounds = executor.bounds
        obj.slices = _Futures(executor.workers, make, len(obj.bounds) - 1)
        return obj

    @property
    def futures(self) -> list:
        return self.slices.futures

    def future(self, i: int):
        return self.slices.future(i)

    def gathered(self) -> tuple:
        if self._full is None:
            parts = self.executor._retried(lambda: self.executor.workers.get(
                [self.future(i) for i in range(len(self.futures))]))
            self._full = tuple(np.concatenate([p[c] for p in parts], axis=self.axis) for c in range(len(self)))
            self.executor.traffic["received"] += _nbytes(self._full)
        return self._full

    def pieces(self, where):
        """The references of its slices, for the executor that made it in this partitioning."""
        return self.slices if where is self.executor and where.bounds is self.bounds else None

    def moments(self) -> "Kept":
        ex, natural = self.executor, self

        def make(i):
            return ex.workers.keep(i, _moments, ex._holders[i], natural.name, natural.future(i))

        return Kept(ex, self.name, make, self.axis, len(ex._model.nodes[self.name].component_shapes()))

    def invalid(self) -> int:
        ex = self.executor
        return int(sum(ex._retried(lambda: ex.workers.get([ex.workers.run(i, _invalid, h, self.name, self.future(i))
                                                           for i, h in enumerate(ex._holders)]))))

    def relative_change(self, old) -> float:
        ex = self.executor
        parts = range(len(self.bounds) - 1)
        slices = held.pieces(old, ex)
        sent = None if slices is not None else \
            [_slice(old, self.axis, int(self.bounds[i]), int(self.bounds[i + 1])) for i in parts]

        def squares():
            if slices is not None:
                olds = [slices.future(i) for i in parts]
            else:  # the first sweep's old locals were initialized here: sent once per try
                ex.traffic["sent"] += _nbytes(sent)
                olds = [ex.workers.send(i, piece) for i, piece in zip(parts, sent)]
            return ex.workers.get([ex.workers.run(i, _squares, self.future(i), o) for i, o in zip(parts, olds)])

        num, den = np.sum(ex._retried(squares), axis=0)
        return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))


class Partitioned(Executor):
    """Sums over the data plate on ``workers`` (a :class:`Workers`), one partition per row range.

    ``plate``: the data plate to partition (default: the largest plate of an observed node that
    can be split, :func:`~vmp.inference.partition.apart`); ``partitions``: how many row ranges
    (default: the number of workers); ``retries``: how many times a step the workers lost is
    sent again. ``traffic`` counts the bytes sent to the workers and received from them (the
    bytes of their arrays), the tasks and the rounds of tasks.
    """

    cuts_data = True

    def __init__(self, workers: Workers, plate: str | None = None, partitions: int | None = None, retries: int = 3):
        self.workers = workers
        self.plate_name = plate
        self.n_partitions = partitions
        self.retries = int(retries)
        self.traffic = {"sent": 0, "received": 0, "tasks": 0, "rounds": 0}
        self._model = self._plan = None
        self._holders: list = []
        self._slices: dict = {}
        self._steps = 0

    @property
    def who(self) -> str:
        return type(self).__name__

    def __getstate__(self):
        raise VMPError(f"a {self.who} holds live workers and cannot be pickled or copied")

    # ----- the partitions -------------------------------------------------------------------
    def start(self, engine, plan) -> None:
        """A Minibatch fit whose locals can stay where their rows are (every stepped node's
        children all drawn or all off the drawn plates) partitions the minibatch's plate, each
        holder with its rows' elements of the linked plates (a document's tokens), and runs each
        step's local step there (:meth:`local_step`). Each fit puts its own holders on the
        workers: the model's data may have changed since the last (``model.set_data``)."""
        mine = plan.local_step and bool(plan.local) and self.plate_name in (None, plan.plate_name)
        for node in plan.stepped if mine else ():
            drawn = [plan.on_batch(f) for f in engine.below[node.name]]
            mine = mine and (all(drawn) or not any(drawn))
        self._plan, self._model = plan if mine else None, None

    def _bind(self, engine) -> None:
        """Partition the data plate of ``engine``'s model and put one holder per partition on
        the workers (once per fit; again after a failure)."""
        model = engine.model
        if self._model is model:
            return
        plan = self._plan if self._plan is not None and self._plan.plate is model.plates.get(self._plan.plate_name) \
            else None
        plate = plan.plate if plan is not None else data_plate(engine, self.plate_name, self.who, self.cuts_data)
        n = self.n_partitions or max(self.workers.count(), 1)
        n = max(1, min(int(n), plate.size))
        self.plate = plate
        self.bounds = np.linspace(0, plate.size, n + 1).round().astype(np.int64)
        self.local_nodes = local_names(engine, plate)
        ranges = [(int(lo), int(hi)) for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self._blobs = [partition_blob(model, plan.spans(lo, hi) if plan else {plate.name: (lo, hi)})
                       for lo, hi in ranges]
        self._parts = [compact_part(plan.part(lo, hi) if plan else None) for lo, hi in ranges]
        self._model = model
        self._retried(self._start, "putting the holders on the workers", restart=False)

    def _start(self) -> None:
        """A holder per partition on its worker: the partition's model and plan put there (not
        in a task graph), and put again after a failure."""
        self._holders = [self.workers.keep(i, self.holder, self.workers.put(i, (self._blobs[i], self._parts[i])),
                                           self.plate.name) for i in range(len(self.bounds) - 1)]
        self.traffic["sent"] += sum(len(b) for b in self._blobs) + _nbytes(self._parts)
        self._slices = {}

    #: what makes a partition's holder on its worker from (model bytes, plan) and the plate name
    holder = staticmethod(_held)

    def close(self) -> None:
        """Release the workers' copies of the model and the locals."""
        self._holders, self._slices, self._model = [], {}, None
        self.workers.close()

    # ----- one sum --------------------------------------------------------------------------
    def children(self, engine, state, node, ctx):
        """A global's children sum: each partition's share on its worker, tree-reduced (a
        local's, or one whose children are off the data plate, here in one piece)."""
        self._bind(engine)
        round_ = remote_round(ctx, self)
        if round_ is not None:
            return self._remote_sum(engine, state, node, ctx, round_)
        factors = engine.below[node.name]
        if self.plate in node.plates or not factors or any(self.plate not in f.child.plates for f in factors):
            return engine.children(state, node, ctx)
        contexts = {f.child.name: ctx.of(f.child.name) for f in factors}
        if any(node.name in c.overrides or c.scale is not None and np.ndim(c.scale) and k not in ctx.factors
               for k, c in contexts.items()):
            return engine.children(state, node, ctx)  # a minibatch's local being optimized: O(|S|), here
        moments, natural = self._globals(state, factors), self._read(engine, state, factors)
        task = Sum.of(node, ctx)

        def submit(fn=_partial):
            futures = []
            for i in range(len(self.bounds) - 1):
                part, spans, local = self._restrict(engine, state, contexts, i)
                if part is not None:
                    self._count((task, part, spans, moments, natural))
                    futures.append(self.workers.run(i, fn, self._holders[i], task, part, spans, self.plate.name,
                                                    moments, local, natural))
            return futures

        total = dense(self._reduce(submit))
        node.family.declare_parts(total, [lambda: self._stacked(lambda: submit(_rows))])
        return total

    def _stacked(self, submit):
        """The rows the partitions' shares of a children sum declare, each compacted on its
        worker (``partitioned_worker._rows``), stacked in partition order; None unless every
        partition declares rows of the same plates."""
        def once():
            parts = self.workers.get(submit())
            self.traffic["received"] += _nbytes(parts)
            return parts

        return _gram.stacked(self._retried(once, "a step"))

    # ----- a minibatch's local step where its rows are -----------------------------------------
    def local_step(self, engine, plan, state, rows, nodes=(), snapshot: bool = False):
        """The local step of the drawn ``rows`` on the partitions that hold them, with the
        children sums of ``nodes`` that it can give (:mod:`~vmp.inference.partitioned_step`):
        one round of tasks; the locals stay on the workers."""
        if self._plan is not plan:
            return None
        self._bind(engine)
        self._steps += 1
        local = {n.name for n in plan.local}
        edges = np.searchsorted(rows, self.bounds)
        parts = [(i, rows[a:b], int(a)) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])) if b > a]
        round_ = Round(self._steps, rows, parts, {k: v for k, v in state.moments.items() if k not in local},
                       natural={k: v for k, v in self._read(engine, state).items() if k not in local})
        total = self._round(round_, requests(engine, plan, nodes, snapshot))
        round_.sums = total["sums"]
        return LocalStep(driver_context(self, plan, rows, round_), int(total["accesses"]), total["terms"])

    def _round(self, round_: Round, asked: list) -> dict:
        """One task per partition holding drawn rows, tree-reduced."""
        def submit():
            futures = []
            for i, rows, offset in round_.parts:
                payload = (round_.key, rows, offset, round_.rows.size, round_.snapshot, asked, round_.natural)
                self._count(payload)
                futures.append(self.workers.run(i, _remote_step, self._holders[i], *payload))
            return futures

        self.traffic["rounds"] += 1
        return self._reduce(submit)

    def _remote_sum(self, engine, state, node, ctx, round_: Round):
        """A global's children sum over the drawn rows: the round's, or one more round reading
        the locals the workers keep (with the globals' moments that moved, and the Gaussians'
        (natural, root) among them); declares the partitions' rows (``drawn_rows``), asked of
        the workers where the precision is ill-conditioned."""
        moved = changed(engine, state, node, ctx, round_)
        plate = None if ctx.plate is None else ctx.plate.name
        natural = {k: v for k, v in self._read(engine, state).items() if k in (moved or {})}
        ask = (node.name, plate, ctx.index, moved or {}, natural)
        total = dense(round_.sums[node.name] if moved is None else self._round(round_, [ask])["sums"][node.name])
        node.family.declare_parts(total, [lambda: self._stacked(lambda: [
            self.workers.run(i, drawn_rows, self._holders[i], round_.key, rows, ask) for i, rows, _ in round_.parts])])
        return total

    def drawn(self, round_: Round, name: str, axis: int) -> tuple:
        """The moments of the local ``name`` at the drawn rows of ``round_``, from its workers."""
        parts = self._retried(lambda: self.workers.get([self.workers.run(i, drawn, self._holders[i], round_.key, name)
                                                         for i, _, _ in round_.parts]))
        self.traffic["received"] += _nbytes(parts)
        return tuple(np.concatenate([p[c] for p in parts], axis=axis) for c in range(len(parts[0])))

    def _globals(self, state, factors=None) -> dict:
        """The moments of the nodes off the data plate (those ``factors`` read, if given)."""
        read = None if factors is None else {n.name for f in factors for n in f.nodes()}
        return {k: v for k, v in state.moments.items()
                if k not in self.local_nodes and (read is None or k in read)}

    def _read(self, engine, state, factors=None) -> dict:
        """{name: (natural, root)} of the globals (those ``factors`` read, if given) that a
        factor reads through the factorization of their precision (``Family.spreads``: a
        Gaussian's c^T Sigma c), root the (R, t) kept for it (``_gram.kept_root``) or None:
        a worker reads that q as this process does."""
        read = None if factors is None else {n.name for f in factors for n in f.nodes()}
        return {k: (tuple(v), _gram.kept_root(v)) for k, v in state.natural.items()
                if k not in self.local_nodes and (read is None or k in read) and k in engine.nodes
                and engine.nodes[k].family.spreads and isinstance(v, tuple)}

    def _count(self, payload) -> None:
        self.traffic["sent"] += _nbytes(payload)
        self.traffic["tasks"] += 1

    def _reduce(self, submit):
        """sum of the values of the tasks ``submit()`` sends, by a fixed binary tree (the same
        order of additions every run); the whole step sent again when the workers lose it."""
        def once():
            futures = submit()
            if not futures:
                return None
            parts = self.workers.reduce(futures)
            self.traffic["received"] += _nbytes(parts)
            return tree(parts, add)

        return self._retried(once, "a step")

    def _retried(self, call, what: str = "a gather", restart: bool = True):
        """``call()``, sent again after the holders are put anew (``restart``) when the workers
        lose its work (the lost references it reads are made again from them), at most
        ``retries`` times."""
        for attempt in range(self.retries + 1):
            try:
                if attempt:
                    self.workers.recover()
                    if restart:
                        self._start()
                return call()
            except Exception as err:  # noqa: BLE001 - only the workers' failures are retried
                if not self.workers.lost(err):
                    raise
                if attempt == self.retries:
                    raise ClusterError(f"{self.who}: {what} failed {attempt + 1} times on the workers: "
                                       f"{err!r}") from err

    def _restrict(self, engine, state, contexts: dict, i: int):
        """Partition ``i``'s contexts (rows lo..hi of the data plate; a draw's rows routed to it),
        the spans the worker fills in, and the references of the locals' slices it reads;
        (None, ...) when the draw has no row there."""
        name = self.plate.name
        lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
        out, spans, local = {}, {}, {}
        for child, c in contexts.items():
            axis = [p.name for p in engine.nodes[child].plates].index(name)
            rows = c.subset.get(name)
            if rows is None:
                if any(k in self.local_nodes for k in c.overrides):
                    raise VMPError(f"{self.who}: overrides of the data plate's nodes without its subset")
                out[child] = replace(c, state=None, factors={}, weights=None, plate=None, index=None)
                spans[child] = (lo, hi, axis)
                local = self._local_slices(engine, state, i)
                continue
            keep = np.flatnonzero((rows >= lo) & (rows < hi))
            if keep.size:
                out[child] = self._drawn_rows(engine, state, c, rows, keep, axis)
        if not out:
            return None, None, None
        return out, spans, local

    def _drawn_rows(self, engine, state, c: Context, rows: np.ndarray, keep: np.ndarray, axis: int) -> Context:
        """``c`` (a draw's Context) at the drawn rows ``rows[keep]`` of one partition, with the
        locals' moments there as overrides."""
        name = self.plate.name
        overrides = {}
        for k in self.local_nodes:
            ax = engine.nodes[k].plates.index(self.plate)
            own = c.overrides.get(k)
            overrides[k] = tuple(np.take(m, keep if own is not None else rows[keep], axis=ax)
                                 for m in (own if own is not None else state.moments[k]))
        overrides.update({k: v for k, v in c.overrides.items() if k not in self.local_nodes})
        owner = {**c.owner}
        if name in owner:
            owner[name] = owner[name][keep]
        scale = c.scale
        if scale is not None and np.ndim(scale) and np.shape(scale)[axis] > 1:
            scale = np.take(scale, keep, axis=axis)
        return Context(subset={**c.subset, name: rows[keep]}, overrides=overrides, scale=scale, owner=owner)

    def _local_slices(self, engine, state, i: int, which: str = "moments") -> dict:
        """References of partition ``i``'s slice of each local's moments (or natural
        parameters): those the workers keep, else sent once per new array."""
        out = {}
        for k in self.local_nodes:
            value = getattr(state, which)[k]
            slices = held.pieces(value, self)
            if slices is not None:
                self._slices.pop((which, k), None)  # the sent initial locals: no longer read
                out[k] = slices.future(i)
            else:
                out[k] = self._sent(engine, k, value, i, which)
        return out

    def _sent(self, engine, k: str, value, i: int, which: str):
        """The reference of partition ``i``'s slice of ``value`` (the local ``k``'s moments or
        natural parameters, arrays here), sent once per array."""
        sent = self._slices.get((which, k))
        if sent is None or sent[0] is not value:
            sent = (value, {})
            self._slices[(which, k)] = sent
        if i not in sent[1]:
            ax = engine.nodes[k].plates.index(self.plate)
            piece = _slice(value, ax, int(self.bounds[i]), int(self.bounds[i + 1]))
            self.traffic["sent"] += sum(a.nbytes for a in piece)
            sent[1][i] = self.workers.send(i, piece)
        return sent[1][i]

    # ----- the locals, kept on the workers ----------------------------------------------------
    def finish(self, state):
        """The locals' rows gathered into the State (once per run: O(N) then, not per step)."""
        gathered = {k: (tuple(v), tuple(state.moments[k])) for k, v in state.natural.items()
                if held.pieces(v, self) is not None or held.pieces(state.moments.get(k), self) is not None}
        return state.updated(gathered, loop=state.loop.mapped(_gathered)) if gathered else state

    def local(self, engine, state, node, ctx):
        """A batch update of a local on the data plate (every factor whole, no extra weights, no
        coupled slice): each partition computes lambda^temp of its rows where it lives and keeps
        it; the fit holds a :class:`Kept` handle."""
        if not ctx.whole or ctx.weights is not None or ctx.plate is not None:
            return None
        self._bind(engine)
        if node.name not in self.local_nodes \
                or any(self.plate not in f.child.plates for f in engine.touching[node.name]):
            return None
        moments, natural = self._globals(state, engine.touching[node.name]), self._read(engine, state,
                                                                                          engine.touching[node.name])
        reads = [_Read(self, k, state.moments[k]) for k in self.local_nodes if k != node.name]

        def make(i):
            lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
            local = {r.name: r.future(self, engine, i) for r in reads}
            self._count((node.name, lo, hi, moments, natural))
            return self.workers.keep(i, _local_target, self._holders[i], node.name, self.plate.name, lo, hi,
                                     moments, local, natural)

        return Kept(self, node.name, make, node.plates.index(self.plate), len(state.natural[node.name]))

    def bound(self, engine, state, weights=None) -> tuple[set, float]:
        """The factors on the data plate and the locals' entropies, summed per partition and
        tree-reduced (a bound is a sum over the plate's elements)."""
        if weights is not None:
            return set(), 0.0
        self._bind(engine)
        moments, read = self._globals(state), self._read(engine, state)

        def submit():
            futures = []
            for i in range(len(self.bounds) - 1):
                lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
                local = self._local_slices(engine, state, i)
                natural = self._local_slices(engine, state, i, "natural")
                self._count((lo, hi, moments, read))
                futures.append(self.workers.run(i, _bound, self._holders[i], self.plate.name, lo, hi, moments, local,
                                                natural, read))
            return futures

        total = self._reduce(submit)
        names = {f.child.name for f in engine.factors.values() if self.plate in f.child.plates}
        return names | set(self.local_nodes), float(total)


def _gathered(value):
    """``value`` (plain data: the loop's own state) with every handle gathered."""
    if isinstance(value, dict):
        return {k: _gathered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_gathered(v) for v in value]
    return held.here(value)


def _nbytes(value) -> int:
    """The bytes of the arrays in ``value`` (plain data), 8 for each other leaf and dict key:
    about its pickled size, without pickling it."""
    if value is None:
        return 0
    if isinstance(value, dict):
        return sum(8 + _nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, Context):
        return _nbytes((value.subset, value.overrides, value.scale, value.owner))
    return int(getattr(value, "nbytes", 8))
