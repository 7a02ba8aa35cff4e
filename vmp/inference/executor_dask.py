"""A Dask cluster as the executor: the sums over the data plate run on the workers.

Every message to a global node from its children is a sum over the data plate's elements
(Winn & Bishop eq. (5); Paquet eq. (6) for a draw), so it splits into contiguous row ranges of
that plate, the partitions. Each partition lives on a worker with its own copy of the model
(unpickled once per fit: ``pickle.dumps(model)`` drops compiled caches) holding only the
partition's rows of the observed data and of the other arrays over the plate
(:func:`~vmp.inference.partition_model.partition_blob`), and its evaluation is a
:class:`~vmp.graph.leaves.Context` restricting the data plate to the partition's rows, with the
moments of the nodes on that plate (the locals, e.g. z) as overrides restricted to those rows.
A sum over the children is then, per partition, the same pure
:meth:`Engine.children <vmp.inference.engine.Engine.children>` that the serial executor runs, followed by a fixed
binary tree of additions (the same tree every run: the same bits for the same seed).

What travels per message: the task (a node's name), the moments of the nodes off the data plate
that its factors read (the globals: small), the restricted Context of a draw (its rows, scale and
locals: O(|S|)), and back a natural-parameter sum (as the columns it touches when it is
mostly zero: :mod:`~vmp.inference.sparse`). The locals of a batch fit (the nodes on the
data plate) are updated where their rows live (:meth:`DaskExecutor.local`) and stay
there: the fit's State holds a :class:`Kept` handle, whose moments, domain check, relative
change and share of the bound (:meth:`DaskExecutor.bound`) are computed on the workers; they are
gathered into the State once, at the end of a run (:meth:`DaskExecutor.finish`). The initial
locals are sent once per fit. Minibatches are drawn on the driver from the fit's seed and routed
by row to the partitions that hold them, so the same seed draws the same rows as ``Serial``. For
a Minibatch fit (:meth:`DaskExecutor.start`) the partitions are ranges of the minibatch's
plate, each holding its rows' elements of the linked plates (a document's tokens), and a step is
one round of tasks: the local step of the drawn rows where they are, the globals' sums and the
rows' local terms (:mod:`~vmp.inference.executor_dask_step`); the locals never travel.

Each holder's model holds only its partition's elements of the arrays over the data plate and
the plates linked to it (:func:`~vmp.inference.partition_model.partition_blob`: data and masks,
weights, gather indices, design matrices), read with the global row numbers.

Limits: a partially observed node with children (masked entries inferred) keeps all its data
and mask on every holder, and so does a plate linked to the data plate whose elements are not
contiguous (tokens not grouped by document); a Minibatch fit with policies, or with a global
whose children are both on and off the drawn plates, runs its local step on the driver; use one
thread per worker process (the engine's plan cache is not thread-safe).

Faults: each partition's model is scattered to its worker (not in the task graph); scattered
data have no lineage, so a step whose sum fails on a lost worker scatters the holders again and
is retried (at most ``retries`` times) from the driver's State, and a batch fit's kept locals
lost with the worker are made again from how they were made (:class:`_Futures`).

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2, processes=True, host="127.0.0.1"))
    model.fit(executor=vmp.DaskExecutor(client))
"""
from __future__ import annotations

import contextlib
import warnings
import weakref
from dataclasses import replace

import numpy as np

from ..errors import VMPError
from ..graph import held
from ..graph.held import Held
from ..graph.leaves import Context
from .executor import Executor, add
from .executor_dask_step import LocalStep, Round, changed, driver_context, remote_round, requests
from .executor_dask_step import local_step as _remote_step
from .executor_dask_worker import Sum, _bound, _held, _invalid, _local_target, _moments, _partial, _slice, _squares
from .partition import data_plate, local_names
from .partition_model import compact_part, partition_blob
from .sparse import dense


class ClusterError(VMPError):
    """The cluster lost the work of a step more often than the executor retries."""


class _Futures:
    """One future per partition, each made by ``make(i)``, and made again from the holders of the
    moment when the cluster lost it (its lineage starts at data scattered from the driver, which
    Dask does not recompute)."""

    def __init__(self, make, n: int):
        self.make = make
        self.futures = [make(i) for i in range(n)]

    def future(self, i: int):
        if self.futures[i].status in ("cancelled", "lost", "error"):
            self.futures[i] = self.make(i)
        return self.futures[i]


class _Read:
    """What a recomputation reads of one local: the futures the workers keep (by a weak reference:
    a recipe must not hold the earlier versions of the locals on the workers), or the arrays to
    send."""

    def __init__(self, executor, name: str, value):
        box = held.pieces(value, executor)
        self.name, self.box = name, None if box is None else weakref.ref(box)
        self.value = value if box is None else None

    def future(self, executor, engine, i: int):
        if self.box is None:
            return executor._sent(engine, self.name, self.value, i, "moments")
        box = self.box()
        if box is None:
            raise ClusterError(f"DaskExecutor: the cluster lost the rows of '{self.name}', and the locals they "
                               f"were computed from are no longer held: they cannot be recomputed")
        return box.future(i)


class Kept(Held):
    """A local's natural parameters or moments kept on the workers, one slice per partition of
    the data plate (``futures``, each made by ``make(i)``: made again, from the holders of the
    moment, when a worker that held it was lost). Reading it (indexing, iterating, saving)
    gathers the rows here; the fit itself only passes it back to the executor."""

    def __new__(cls, executor, name: str, make, axis: int, size: int):
        obj = super().__new__(cls, (None,) * size)
        obj.executor, obj.name, obj.axis, obj._full = executor, name, axis, None
        obj.bounds = executor.bounds
        obj.box = _Futures(make, len(obj.bounds) - 1)
        return obj

    @property
    def futures(self) -> list:
        return self.box.futures

    def future(self, i: int):
        return self.box.future(i)

    def gathered(self) -> tuple:
        if self._full is None:
            parts = self.executor.client.gather([self.future(i) for i in range(len(self.futures))])
            self._full = tuple(np.concatenate([p[c] for p in parts], axis=self.axis) for c in range(len(self)))
            self.executor.traffic["received"] += _nbytes(self._full)
        return self._full

    def moments(self) -> "Kept":
        ex, natural = self.executor, self

        def make(i):
            return ex.client.submit(_moments, ex._holders[i], natural.name, natural.future(i), pure=False)

        return Kept(ex, self.name, make, self.axis, len(ex._model.nodes[self.name].component_shapes()))

    def invalid(self) -> int:
        ex = self.executor
        return int(sum(ex.client.gather([ex.client.submit(_invalid, h, self.name, self.future(i), pure=False)
                                         for i, h in enumerate(ex._holders)])))

    def pieces(self, where):
        """The futures of its slices, for the executor that made it in this partitioning."""
        return self.box if where is self.executor and where.bounds is self.bounds else None

    def relative_change(self, old) -> float:
        ex = self.executor
        parts = range(len(self.bounds) - 1)
        box = held.pieces(old, ex)
        if box is not None:
            olds = [box.future(i) for i in parts]
        else:
            olds = [_slice(old, self.axis, int(lo), int(hi)) for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
            ex.traffic["sent"] += _nbytes(olds)
        with _quiet():  # the first sweep's old locals were initialized here: sent once
            num, den = np.sum(ex.client.gather([ex.client.submit(_squares, self.future(i), o, pure=False)
                                                for i, o in zip(parts, olds)]), axis=0)
        return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))


class DaskExecutor(Executor):
    """Sums over the data plate on a Dask cluster (``client``: a ``distributed.Client``).

    ``plate``: the data plate to partition (default: the largest plate of an observed node that
    can be split, :func:`~vmp.inference.partition.apart`);
    ``partitions``: how many row ranges (default: the number of workers); ``retries``: how many
    times a step lost to a worker failure is sent again. ``traffic`` counts the bytes sent to the
    workers and received from them (the bytes of their arrays), the tasks and the rounds of tasks.
    """

    def __init__(self, client, plate: str | None = None, partitions: int | None = None, retries: int = 3):
        self.client = client
        self.plate_name = plate
        self.n_partitions = partitions
        self.retries = int(retries)
        self.traffic = {"sent": 0, "received": 0, "tasks": 0, "rounds": 0}
        self._model = self._plan = None
        self._steps = 0

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, plate={self.plate_name!r}, partitions={self.n_partitions!r})"

    def __getstate__(self):
        raise VMPError("a DaskExecutor holds a live client and cannot be pickled or copied")

    cuts_data = True

    # ----- the partitions -------------------------------------------------------------------
    def start(self, engine, plan) -> None:
        """A Minibatch fit whose locals can stay where their rows are (every stepped node's
        children all drawn or all off the drawn plates) partitions the minibatch's plate, each
        holder with its rows' elements of the linked plates (a document's tokens), and runs each
        step's local step there (:meth:`local_step`). Each fit puts its own holders on the
        workers: the model's data may have changed since the last (``model.set_data``)."""
        mine = getattr(plan, "local_step", False) and bool(plan.local) and self.plate_name in (None, plan.plate_name)
        for node in plan.stepped if mine else ():
            drawn = [plan.on_batch(f) for f in engine.touching[node.name] if f.child is not node]
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
        plate = plan.plate if plan is not None else data_plate(engine, self.plate_name, "DaskExecutor", self.cuts_data)
        n = self.n_partitions or max(len(self.client.scheduler_info().get("workers", {})), 1)
        n = max(1, min(int(n), plate.size))
        self.plate = plate
        self.bounds = np.linspace(0, plate.size, n + 1).round().astype(np.int64)
        self.local_nodes = local_names(engine, plate)
        ranges = [(int(lo), int(hi)) for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
        self._blobs = [partition_blob(model, plan.spans(lo, hi) if plan else {plate.name: (lo, hi)}) for lo, hi in ranges]
        self._parts = [compact_part(plan.part(lo, hi) if plan else None) for lo, hi in ranges]
        self._model = model
        self._start()

    def _start(self) -> None:
        """Holders on the workers, spread round-robin (other workers allowed after a failure):
        each partition's model and plan scattered to its worker (not in the task graph), and
        scattered again after a failure (Dask does not recompute scattered data)."""
        workers = sorted(self.client.scheduler_info().get("workers", {}))
        self._holders = []
        for i in range(len(self.bounds) - 1):
            where = [workers[i % len(workers)]] if workers else None
            data = self.client.scatter([(self._blobs[i], self._parts[i])], workers=where, hash=False)[0]
            self._holders.append(self.client.submit(_held, data, self.plate.name, pure=False, workers=where,
                                                    allow_other_workers=where is not None))
        self.traffic["sent"] += sum(len(b) for b in self._blobs) + _nbytes(self._parts)
        self._slices: dict = {}

    def close(self) -> None:
        """Release the workers' copies of the model and the locals."""
        self._holders, self._slices, self._model = [], {}, None

    # ----- one sum --------------------------------------------------------------------------
    def children(self, engine, state, node, ctx):
        """A global's children sum: each partition's share on its worker, tree-reduced (a
        local's, or one whose children are off the data plate, here in one piece)."""
        self._bind(engine)
        kept = remote_round(ctx)
        if kept is not None:
            return self._remote_sum(engine, state, node, ctx, kept)
        factors = engine.below[node.name]
        if self.plate in node.plates or not factors or any(self.plate not in f.child.plates for f in factors):
            return engine.children(state, node, ctx)
        contexts = {f.child.name: ctx.of(f.child.name) for f in factors}
        if any(node.name in c.overrides or c.scale is not None and np.ndim(c.scale) and k not in ctx.factors
               for k, c in contexts.items()):
            return engine.children(state, node, ctx)  # a minibatch's local being optimized: O(|S|), here
        moments = self._globals(state, factors)
        task = Sum.of(node, ctx)

        def submit():
            futures = []
            for i in range(len(self.bounds) - 1):
                part, spans, local = self._restrict(engine, state, contexts, i)
                if part is not None:
                    self._count((task, part, spans, moments))
                    futures.append(self.client.submit(_partial, self._holders[i], task, part, spans, self.plate.name,
                                                      moments, local, pure=False))
            return futures

        return dense(self._reduce(submit))

    # ----- a minibatch's local step where its rows are -----------------------------------------
    def local_step(self, engine, plan, state, rows, nodes=(), snapshot: bool = False):
        """The local step of the drawn ``rows`` on the partitions that hold them, with the
        children sums of ``nodes`` that it can give (:mod:`~vmp.inference.executor_dask_step`):
        one round of tasks; the locals stay on the workers."""
        if self._plan is not plan:
            return None
        self._bind(engine)
        self._steps += 1
        local = {n.name for n in plan.local}
        edges = np.searchsorted(rows, self.bounds)
        parts = [(i, rows[a:b], int(a)) for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])) if b > a]
        kept = Round(self._steps, rows, parts, {k: v for k, v in state.moments.items() if k not in local})
        total = self._round(kept, requests(engine, plan, nodes, snapshot))
        kept.sums = total["sums"]
        return LocalStep(driver_context(plan, rows, kept), int(total["accesses"]), total["terms"])

    def _round(self, kept: Round, asked: list) -> dict:
        """One task per partition holding drawn rows, tree-reduced."""
        def submit():
            futures = []
            for i, rows, offset in kept.parts:
                payload = (kept.key, rows, offset, kept.rows.size, kept.snapshot, asked)
                self._count(payload)
                futures.append(self.client.submit(_remote_step, self._holders[i], *payload, pure=False))
            return futures

        self.traffic["rounds"] += 1
        return self._reduce(submit)

    def _remote_sum(self, engine, state, node, ctx, kept: Round):
        """A global's children sum over the drawn rows: the round's, or one more round reading
        the locals the workers kept (with the globals' moments that moved)."""
        moved = changed(engine, state, node, ctx, kept)
        if moved is None:
            return dense(kept.sums[node.name])
        plate = None if ctx.plate is None else ctx.plate.name
        return dense(self._round(kept, [(node.name, plate, ctx.index, moved)])["sums"][node.name])

    def _globals(self, state, factors=None) -> dict:
        """The moments of the nodes off the data plate (those ``factors`` read, if given)."""
        read = None if factors is None else {n.name for f in factors for n in f.nodes()}
        return {k: v for k, v in state.moments.items()
                if k not in self.local_nodes and (read is None or k in read)}

    def _count(self, payload) -> None:
        self.traffic["sent"] += _nbytes(payload)
        self.traffic["tasks"] += 1

    def _reduce(self, submit):
        """sum of the futures ``submit()`` returns, by a fixed binary tree (the same order of
        additions every run) whose last addition runs here (one hop less per round); the whole
        step sent again when the cluster loses it."""
        for attempt in range(self.retries + 1):
            try:
                futures = submit()
                if not futures:
                    return None
                while len(futures) > 2:
                    futures = [self.client.submit(add, futures[j], futures[j + 1], pure=False)
                               if j + 1 < len(futures) else futures[j] for j in range(0, len(futures), 2)]
                parts = self.client.gather(futures)
                self.traffic["received"] += _nbytes(parts)
                return parts[0] if len(parts) == 1 else add(parts[0], parts[1])
            except Exception as err:  # noqa: BLE001 - only a cluster's failures are retried
                if not _lost(err):
                    raise
                if attempt == self.retries:
                    raise ClusterError(f"DaskExecutor: a step failed {attempt + 1} times on the cluster: {err!r}") from err
                self._start()

    def _restrict(self, engine, state, contexts: dict, i: int):
        """Partition ``i``'s contexts (rows lo..hi of the data plate; a draw's rows routed to it),
        the spans the worker fills in, and the futures of the locals' slices it reads; (None, ...)
        when the draw has no row there."""
        name = self.plate.name
        lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
        out, spans, local = {}, {}, {}
        for child, c in contexts.items():
            axis = [p.name for p in engine.nodes[child].plates].index(name)
            rows = c.subset.get(name)
            if rows is None:
                if any(k in self.local_nodes for k in c.overrides):
                    raise VMPError("DaskExecutor: overrides of the data plate's nodes without its subset")
                out[child] = replace(c, state=None, factors={}, weights=None, plate=None, index=None)
                spans[child] = (lo, hi, axis)
                local = self._local_slices(engine, state, i)
                continue
            keep = np.flatnonzero((rows >= lo) & (rows < hi))
            if keep.size == 0:
                continue
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
            out[child] = Context(subset={**c.subset, name: rows[keep]}, overrides=overrides, scale=scale,
                                 owner=owner)
        if not out:
            return None, None, None
        return out, spans, local

    def _local_slices(self, engine, state, i: int, which: str = "moments", skip=()) -> dict:
        """Futures of partition ``i``'s slice of each local's moments (or natural parameters):
        those the workers keep, else sent once per new array."""
        out = {}
        for k in self.local_nodes:
            if k in skip:
                continue
            value = getattr(state, which)[k]
            box = held.pieces(value, self)
            if box is not None:
                self._slices.pop((which, k), None)  # the sent initial locals: no longer read
                out[k] = box.future(i)
            else:
                out[k] = self._sent(engine, k, value, i, which)
        return out

    def _sent(self, engine, k: str, value, i: int, which: str):
        """The future of partition ``i``'s slice of ``value`` (the local ``k``'s moments or
        natural parameters, arrays here), sent once per array."""
        kept = self._slices.get((which, k))
        if kept is None or kept[0] is not value:
            kept = (value, {})
            self._slices[(which, k)] = kept
        if i not in kept[1]:
            ax = engine.nodes[k].plates.index(self.plate)
            piece = _slice(value, ax, int(self.bounds[i]), int(self.bounds[i + 1]))
            self.traffic["sent"] += sum(a.nbytes for a in piece)
            with _quiet():
                where = self._where(i)
                kept[1][i] = self.client.submit(tuple, piece, pure=False, workers=where,
                                                allow_other_workers=where is not None)
        return kept[1][i]

    def _where(self, i: int) -> list:
        workers = sorted(self.client.scheduler_info().get("workers", {}))
        return [workers[i % len(workers)]] if workers else None

    # ----- the locals, kept on the workers ----------------------------------------------------
    def finish(self, state):
        """The locals' rows gathered into the State (once per run: O(N) then, not per step)."""
        kept = {k: (tuple(v), tuple(state.moments[k])) for k, v in state.natural.items()
                if held.pieces(v, self) is not None or held.pieces(state.moments.get(k), self) is not None}
        return state.updated(kept, loop=state.loop.mapped(_gathered)) if kept else state

    def local(self, engine, state, node, ctx):
        """A batch update of a local on the data plate (every factor whole, no extra weights, no
        coupled slice): each partition computes lambda^temp of its rows where it lives and keeps
        it; the fit holds a :class:`Kept` handle."""
        if not ctx.whole or ctx.weights is not None or ctx.plate is not None:
            return None
        self._bind(engine)
        if node.name not in self.local_nodes or any(self.plate not in f.child.plates for f in engine.touching[node.name]):
            return None
        moments = self._globals(state, engine.touching[node.name])
        reads = [_Read(self, k, state.moments[k]) for k in self.local_nodes if k != node.name]

        def make(i):
            lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
            local = {r.name: r.future(self, engine, i) for r in reads}
            self._count((node.name, lo, hi, moments))
            return self.client.submit(_local_target, self._holders[i], node.name, self.plate.name, lo, hi,
                                      moments, local, pure=False)

        return Kept(self, node.name, make, node.plates.index(self.plate), len(state.natural[node.name]))

    def bound(self, engine, state, weights=None) -> tuple[set, float]:
        """The factors on the data plate and the locals' entropies, summed per partition and
        tree-reduced (a bound is a sum over the plate's elements)."""
        if weights is not None:
            return set(), 0.0
        self._bind(engine)
        moments = self._globals(state)

        def submit():
            futures = []
            for i in range(len(self.bounds) - 1):
                lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
                local = self._local_slices(engine, state, i)
                natural = self._local_slices(engine, state, i, "natural")
                self._count((lo, hi, moments))
                futures.append(self.client.submit(_bound, self._holders[i], self.plate.name, lo, hi, moments, local,
                                                  natural, pure=False))
            return futures

        total = self._reduce(submit)
        names = {f.child.name for f in engine.factors.values() if self.plate in f.child.plates}
        return names | set(self.local_nodes), float(total)


@contextlib.contextmanager
def _quiet():
    """Dask warns of large objects in a task graph; a batch fit's initial locals (when the
    workers did not compute them) and the old locals of a relative change ride in it on purpose,
    so that the scheduler can rebuild them after a lost worker."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph)")
        yield


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


def _lost(err: BaseException) -> bool:
    """Whether ``err`` is a cluster's failure (a lost worker, a cancelled or lost result, a
    closed connection) rather than an error of the computation itself."""
    import asyncio
    import concurrent.futures

    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    kinds = (KilledWorker, CommClosedError, asyncio.CancelledError, concurrent.futures.CancelledError,
             ConnectionError, TimeoutError)
    try:
        from distributed.client import FutureCancelledError

        kinds += (FutureCancelledError,)
    except ImportError:
        pass
    return isinstance(err, kinds)
