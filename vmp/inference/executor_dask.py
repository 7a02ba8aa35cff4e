"""A Dask cluster as the executor: the sums over the data plate run on the workers.

Every message to a global node from its children is a sum over the data plate's elements
(Winn & Bishop eq. (5); Paquet eq. (6) for a draw), so it splits into contiguous row ranges of
that plate, the partitions. Each partition lives on a worker with its own copy of the model
(unpickled once per fit: ``pickle.dumps(model)`` drops compiled caches), and its evaluation is a
:class:`~vmp.graph.leaves.Context` restricting the data plate to the partition's rows, with the
moments of the nodes on that plate (the locals, e.g. z) as overrides restricted to those rows.
A sum over the children is then, per partition, the same pure
:class:`~vmp.inference.engine.Children` that the serial executor runs, followed by a fixed
binary tree of additions (the same tree every run: the same bits for the same seed).

What travels per message: the task (a node's name), the moments of the nodes off the data plate
(the globals: small), the restricted Context of a draw (its rows, scale and locals: O(|S|)), and
back a natural-parameter sum. The locals of a batch fit (on the data plate) are sent once per
change, one slice per partition, and stay on the workers; the model's data never travels after
the first step. Minibatches are drawn on the driver from the fit's seed and routed by row to
the partitions that hold them, so the same seed draws the same rows as ``Serial``.

Faults: every object a partition task reads is a Dask task result whose inputs the scheduler
keeps, so a killed worker's holders and slices are recomputed on the workers left; a step whose
sum fails on a lost worker is retried (at most ``retries`` times) from the driver's State.

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2, processes=True, host="127.0.0.1"))
    model.fit(executor=vmp.DaskExecutor(client))
"""
from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np

from ..errors import VMPError
from ..graph.leaves import Context
from .executor import Executor, add
from .state import State


class ClusterError(VMPError):
    """The cluster lost the work of a step more often than the executor retries."""


class _Holder:
    """A worker's copy of the model and the engine built on it (built once, on first use)."""

    def __init__(self, blob: bytes):
        self.model = pickle.loads(blob)
        self._engine = None

    def __getstate__(self) -> dict:
        return {"model": self.model, "_engine": None}

    @property
    def engine(self):
        if self._engine is None:
            from .engine import Engine

            self._engine = Engine(self.model)
        return self._engine


def _slice(moments: tuple, axis: int, lo: int, hi: int) -> tuple:
    return tuple(np.ascontiguousarray(np.take(m, np.arange(lo, hi), axis=axis)) for m in moments)


def _partial(holder: _Holder, task, ctx, moments: dict, local: dict):
    """One partition's share of ``task`` (a Children sum) on a worker: the globals' moments in a
    State, the locals of the partition's rows as overrides of every restricted Context."""
    if local:
        ctx = {k: None if c is None else replace(c, overrides={**local, **c.overrides}) for k, c in ctx.items()}
    return task.run(holder.engine, State(moments=moments), ctx)


class DaskExecutor(Executor):
    """Sums over the data plate on a Dask cluster (``client``: a ``distributed.Client``).

    ``plate``: the data plate to partition (default: the largest plate of an observed node);
    ``partitions``: how many row ranges (default: the number of workers); ``retries``: how many
    times a step lost to a worker failure is sent again. ``traffic`` counts the bytes sent to the
    workers and received from them (pickled sizes of the payloads).
    """

    def __init__(self, client, plate: str | None = None, partitions: int | None = None, retries: int = 3):
        self.client = client
        self.plate_name = plate
        self.n_partitions = partitions
        self.retries = int(retries)
        self.traffic = {"sent": 0, "received": 0, "tasks": 0}
        self._model = None

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, plate={self.plate_name!r}, partitions={self.n_partitions!r})"

    def __getstate__(self):
        raise VMPError("a DaskExecutor holds a live client and cannot be pickled or copied")

    # ----- the partitions -------------------------------------------------------------------
    def partitions(self, ctx) -> list:
        """One piece: the split into row ranges happens in ``map_sum``, which knows the node."""
        return [ctx]

    def _bind(self, engine) -> None:
        """Partition the data plate of ``engine``'s model and put one holder per partition on
        the workers (once per fit; again after a failure)."""
        model = engine.model
        if self._model is model:
            return
        observed = [n for n in model.nodes.values() if n.observed and n.plates]
        if self.plate_name is None:
            if not observed:
                raise VMPError(f"DaskExecutor: model '{model.name}' has no observed node on a plate to partition")
            plate = max((p for n in observed for p in n.plates), key=lambda p: p.size)
        else:
            if self.plate_name not in model.plates:
                raise VMPError(f"DaskExecutor: no plate named '{self.plate_name}' (plates: {', '.join(model.plates)})")
            plate = model.plates[self.plate_name]
        n = self.n_partitions or max(len(self.client.scheduler_info().get("workers", {})), 1)
        n = max(1, min(int(n), plate.size))
        self.plate = plate
        self.bounds = np.linspace(0, plate.size, n + 1).round().astype(np.int64)
        self.local_nodes = [node.name for node in engine.hidden if plate in node.plates]
        self._blob = pickle.dumps(model)
        self._model = model
        self._start()

    def _start(self) -> None:
        """Holders on the workers, spread round-robin (other workers allowed after a failure)."""
        workers = sorted(self.client.scheduler_info().get("workers", {}))
        self._holders = []
        for i in range(len(self.bounds) - 1):
            where = dict(workers=[workers[i % len(workers)]], allow_other_workers=True) if workers else {}
            self._holders.append(self.client.submit(_Holder, self._blob, pure=False, **where))
        self.traffic["sent"] += len(self._blob) * len(self._holders)
        self._slices: dict = {}

    def close(self) -> None:
        """Release the workers' copies of the model and the locals."""
        self._holders, self._slices, self._model = [], {}, None

    # ----- one sum --------------------------------------------------------------------------
    def map_sum(self, fn, partitions):
        from .engine import Children

        partitions = list(partitions)
        if not isinstance(fn, Children) or len(partitions) != 1:
            return _serial(fn, partitions)
        self._bind(fn.engine)
        engine, ctx = fn.engine, partitions[0]
        node = engine.nodes[fn.node]
        factors = fn.factors(engine)
        if self.plate in node.plates or not factors or any(self.plate not in f.child.plates for f in factors):
            return fn(ctx)  # a local node, or children off the data plate: here, in one piece
        names = [f.child.name for f in factors]
        contexts = {k: ctx.get(k) for k in names} if isinstance(ctx, dict) else {k: ctx for k in names}
        if any(c is not None and (node.name in c.overrides or c.scale is not None and np.ndim(c.scale)
                                  and not isinstance(ctx, dict)) for c in contexts.values()):
            return fn(ctx)  # a minibatch's local being optimized (its q overridden): O(|S|), here
        state = fn.state
        moments = {k: v for k, v in state.moments.items() if k not in self.local_nodes}
        for attempt in range(self.retries + 1):
            try:
                return self._run(engine, fn, state, contexts, moments)
            except Exception as err:  # noqa: BLE001 - only a cluster's failures are retried
                if not _lost(err):
                    raise
                if attempt == self.retries:
                    raise ClusterError(f"DaskExecutor: a step failed {attempt + 1} times on the cluster: {err!r}") from err
                self._start()

    def _run(self, engine, fn, state, contexts, moments):
        sizes = {"sent": 0}
        futures = []
        for i in range(len(self.bounds) - 1):
            lo, hi = int(self.bounds[i]), int(self.bounds[i + 1])
            part, local = self._restrict(engine, state, contexts, lo, hi, i)
            if part is None:
                continue
            payload = (fn, part, moments)
            sizes["sent"] += len(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
            futures.append(self.client.submit(_partial, self._holders[i], fn, part, moments, local, pure=False))
        self.traffic["sent"] += sizes["sent"]
        self.traffic["tasks"] += len(futures)
        if not futures:
            return None
        while len(futures) > 1:  # a fixed binary tree: the same order of additions every run
            futures = [self.client.submit(add, futures[j], futures[j + 1], pure=False) if j + 1 < len(futures)
                       else futures[j] for j in range(0, len(futures), 2)]
        total = futures[0].result()
        self.traffic["received"] += _nbytes(total)
        return total

    def _restrict(self, engine, state, contexts: dict, lo: int, hi: int, i: int):
        """The contexts of partition ``i`` (rows lo..hi of the data plate) and the futures of the
        locals' slices it reads; (None, None) when the draw has no row there."""
        name = self.plate.name
        out, local = {}, {}
        for child, c in contexts.items():
            axis = [p.name for p in engine.nodes[child].plates].index(name)
            rows = None if c is None else c.subset.get(name)
            if rows is None:
                base = Context() if c is None else c
                if base.overrides and any(k in self.local_nodes for k in base.overrides):
                    raise VMPError("DaskExecutor: overrides of the data plate's nodes without its subset")
                sub = {**base.subset, name: np.arange(lo, hi)}
                scale = base.scale
                if scale is not None and np.ndim(scale) and np.shape(scale)[axis] > 1:
                    scale = np.take(scale, np.arange(lo, hi), axis=axis)
                out[child] = replace(base, subset=sub, scale=scale, state=None)
                local = self._local_slices(engine, state, lo, hi, i)
                continue
            keep = np.flatnonzero((rows >= lo) & (rows < hi))
            if keep.size == 0:
                continue
            overrides = {}
            for k in self.local_nodes:
                node = engine.nodes[k]
                ax = node.plates.index(self.plate)
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
            return None, None
        return out, local

    def _local_slices(self, engine, state, lo, hi, i) -> dict:
        """Futures of partition ``i``'s slice of each local's moments, sent once per new moments."""
        out = {}
        for k in self.local_nodes:
            moments = state.moments[k]
            kept = self._slices.get(k)
            if kept is None or kept[0] is not moments:
                kept = (moments, {})
                self._slices[k] = kept
            if i not in kept[1]:
                ax = engine.nodes[k].plates.index(self.plate)
                piece = _slice(moments, ax, lo, hi)
                self.traffic["sent"] += sum(a.nbytes for a in piece)
                kept[1][i] = self.client.submit(tuple, piece, pure=False, workers=self._where(i),
                                                allow_other_workers=True)
            out[k] = kept[1][i]
        return out

    def _where(self, i: int) -> list:
        workers = sorted(self.client.scheduler_info().get("workers", {}))
        return [workers[i % len(workers)]] if workers else None


def _serial(fn, partitions):
    total = None
    for p in partitions:
        total = add(total, fn(p))
    return total


def _nbytes(value) -> int:
    if value is None:
        return 0
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
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
