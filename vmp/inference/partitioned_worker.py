"""What runs on the workers of a :class:`~vmp.inference.executor_partitioned.Partitioned`
executor (a Dask cluster's, a process pool's): a partition's holder (its copy of the model, built
once per fit from the bytes put on its worker, and the engine on it) and the pure functions of a
partition's rows that the executor submits (its share of a children sum, a local's update,
moments, domain check, relative change and bound). The driver pickles a partition's model with
:func:`~vmp.inference.partition_model.partition_blob`."""
from __future__ import annotations

import pickle
from dataclasses import dataclass, replace

import numpy as np

from ..families import _gram
from ..graph.change import squares
from ..graph.leaves import Context
from .executor import Serial
from .partition import rows_bound, rows_context
from .sparse import sparse
from .state import State


class _Holder:
    """A worker's copy of the model and the engine built on it (built once, on first use); for a
    Minibatch fit, the plan of its rows (``part``) and the locals of the last step it ran."""

    def __init__(self, blob: bytes, plate: str, part: dict | None = None):
        self.model = pickle.loads(blob)
        self.plate, self.part = plate, part
        self._engine = self._plan = self.last_step = None

    def __getstate__(self) -> dict:
        return {"model": self.model, "plate": self.plate, "part": self.part, "_engine": None, "_plan": None,
                "last_step": None}

    @property
    def engine(self):
        if self._engine is None:
            from .engine import Engine

            self._engine = Engine(self.model, Serial())
        return self._engine

    @property
    def plan(self):
        if self._plan is None:
            from .subsample import MinibatchPlan

            self._plan = MinibatchPlan.on_part(self.model, self.part)
        return self._plan


def _held(data: tuple, plate: str) -> _Holder:
    """A partition's holder from the (model's bytes, Minibatch plan of its rows) put on its worker."""
    blob, part = data
    return _Holder(blob, plate, part)


def _in_numpy_memory(value):
    """``value`` with every array in memory numpy allocated: an array unpickled from a message
    (a view of the message's buffer) may sit at any alignment, and numpy rounds by alignment
    (a matrix product of rows off an 8-byte boundary differs in its last bits), so it is
    copied, also inside a Context (a draw's locals and scale); one that owns its memory (a
    local kept on this worker) already is numpy's, and is not copied again for every task."""
    if isinstance(value, dict):
        return {k: _in_numpy_memory(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_in_numpy_memory(v) for v in value)
    if isinstance(value, list):
        return [_in_numpy_memory(v) for v in value]
    if isinstance(value, np.ndarray):
        return value if value.flags.owndata else np.array(value, copy=True)
    if isinstance(value, Context):
        return replace(value, **{k: _in_numpy_memory(getattr(value, k)) for k in _RECEIVED})
    return value


#: the fields of a Context that a task receives arrays in
_RECEIVED = ("subset", "overrides", "scale", "owner", "factors", "weights")


def _slice(moments: tuple, axis: int, lo: int, hi: int) -> tuple:
    return tuple(np.ascontiguousarray(np.take(m, np.arange(lo, hi), axis=axis)) for m in moments)


def _spanned(ctx: dict, spans: dict, plate: str, local: dict, nodes: dict) -> dict:
    """The contexts of a partition on its worker: the row range of the data plate where the
    driver sent only (lo, hi), and the locals of those rows as overrides, restricted as the
    Context restricts their other plates (a PerNode draw of a chain's time steps)."""
    out = {}
    for k, c in ctx.items():
        if k in spans:
            lo, hi, axis = spans[k]
            scale = c.scale
            if scale is not None and np.ndim(scale) and np.shape(scale)[axis] > 1:
                scale = np.take(scale, np.arange(lo, hi), axis=axis)
            whole = not c.subset and c.scale is None and not c.owner  # a batch sum: all the partition's rows
            c = replace(c, subset={**c.subset, plate: np.arange(lo, hi)}, scale=scale, stable=whole)
        out[k] = replace(c, overrides={**_at(local, c, plate, nodes), **c.overrides}) if local else c
    return out


def _at(local: dict, c: Context, plate: str, nodes: dict) -> dict:
    """The partition's locals (already its rows of ``plate``) at ``c``'s subsets of their other
    plates: an override holds the elements the Context reads."""
    others = Context(subset={p: rows for p, rows in c.subset.items() if p != plate})
    if not others.subset:
        return local
    return {k: tuple(others.take(m, nodes[k].plates) for m in v) for k, v in local.items()}


@dataclass(frozen=True)
class Sum:
    """A children sum to run on a holder (``Engine.children``): the node, and the evaluation's
    weights and slice; each partition's restriction travels beside it."""

    node: str
    weights: dict | None = None
    plate: str | None = None
    index: int | None = None

    @classmethod
    def of(cls, node, ctx: Context) -> "Sum":
        return cls(node.name, ctx.weights, None if ctx.plate is None else ctx.plate.name, ctx.index)

    def run(self, engine, state: State, part: Context):
        plate = None if self.plate is None else engine.model.plates[self.plate]
        return engine.children(state, engine.nodes[self.node],
                               replace(part, weights=self.weights, plate=plate, index=self.index))


def _global_state(moments: dict, natural: dict | None) -> State:
    """The globals' q on a worker: their moments, and the natural parameters of those read
    through the factorization of their precision (a Gaussian's: ``Centered``'s c^T Sigma c),
    each (natural, root) with the root (R, t) the driver holds for it, kept for it here again
    (``_gram.restore``: the factorization from parts, not from the matrix as formed)."""
    kept = {}
    for k, (value, root) in (natural or {}).items():
        kept[k] = _in_numpy_memory(tuple(value))
        if root is not None:
            _gram.restore(kept[k], *_in_numpy_memory(tuple(root)))
    return State(natural=kept, moments=_in_numpy_memory(moments))


def _sum(holder: _Holder, task: Sum, ctx: dict, spans: dict, plate: str, moments: dict, local: dict,
         natural: dict | None):
    part = Context(factors=_spanned(_in_numpy_memory(ctx), spans, plate, _in_numpy_memory(local), holder.model.nodes))
    task = replace(task, weights=_in_numpy_memory(task.weights))
    return task.run(holder.engine, _global_state(moments, natural), part)


def _partial(holder: _Holder, task: Sum, ctx: dict, spans: dict, plate: str, moments: dict, local: dict,
             natural: dict | None = None):
    """One partition's share of ``task`` (a children sum) on a worker: the globals' q in a
    State (``_global_state``), the locals of the partition's rows as overrides of every restricted
    Context; sent back sparse where it is zero outside a few columns (LDA: the words of the
    drawn tokens)."""
    return sparse(_sum(holder, task, ctx, spans, plate, moments, local, natural))


def _rows(holder: _Holder, task: Sum, ctx: dict, spans: dict, plate: str, moments: dict, local: dict,
          natural: dict | None = None):
    """The rows (B, z) that one partition's share of ``task`` declares (-2 eta_2 = B^T B,
    eta_1 = B^T z: ``Family.parts``), compacted to their QR factor (``_gram.compact``: at most
    D rows per plate element), or None where it declares none."""
    total = _sum(holder, task, ctx, spans, plate, moments, local, natural)
    rows = holder.engine.nodes[task.node].family.parts(total)
    made = None if rows is None else rows()
    return None if made is None else _gram.compact(made)


def _local_target(holder: _Holder, name: str, plate: str, lo: int, hi: int, moments: dict, local: dict,
                  natural: dict | None = None):
    """lambda^temp of the local ``name`` on rows lo..hi (its own factor and its children's,
    restricted to the rows; Winn & Bishop eq. (5)), computed and kept on the worker; the globals'
    q as ``_global_state`` holds them."""
    engine = holder.engine
    ctx = rows_context(plate, lo, hi, _in_numpy_memory(local), stable=True)
    return tuple(engine.target(_global_state(moments, natural), engine.nodes[name], ctx=ctx))


def _moments(holder: _Holder, name: str, natural: tuple) -> tuple:
    return tuple(holder.engine.nodes[name].family.moments(natural))


def _invalid(holder: _Holder, name: str, natural: tuple) -> int:
    ok = holder.engine.nodes[name].family.valid(natural)
    return int(np.size(ok) - np.count_nonzero(ok))


def _squares(new: tuple, old: tuple) -> np.ndarray:
    """(sum (new - old)^2, sum old^2) over a partition's rows: relative_change's two sums, a
    cache-sized piece at a time (``change.squares``: no temporary of the locals' size)."""
    sums = [squares(np.asarray(a), np.asarray(b)) for a, b in zip(old, new)]
    return np.array([sum(n for n, _ in sums), sum(d for _, d in sums)])


def _bound(holder: _Holder, plate: str, lo: int, hi: int, moments: dict, local: dict, natural: dict,
           read: dict | None = None) -> float:
    """The partition's share of the ELBO: the factors on the data plate restricted to rows
    lo..hi (full-data weights) plus the entropies m_i H[q_i] of the locals' rows (``natural``);
    the globals' q as ``_global_state`` holds them (``read``: those read through a factorization)."""
    engine = holder.engine
    ctx = rows_context(plate, lo, hi, _in_numpy_memory(local), _global_state(moments, read), stable=True)
    return rows_bound(engine, engine.model.plates[plate], ctx, _in_numpy_memory(natural))
