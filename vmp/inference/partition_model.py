"""A partition's model: the model pickled with every array over a partitioned plate cut to the
partition's elements, for a holder of a Dask executor.

A holder evaluates only Contexts restricted to its rows (Paquet eq. (6) with full-data weights:
the message of a restricted Context is those rows' share of the full message), and each such
evaluation reads an array over the data plate at those rows only (``Context.take``,
``GatherLeaf.indices``). So every such array is replaced, for the pickle, by a
:class:`~vmp.graph.data.Rows` of the partition's range: read with the global row numbers, it
holds only its rows, and reading another row is an error (never a wrong number). Cut:
observed data and their mask; per-element weights (data multiplicity m_i, entropy and factor
weights: token counts); the index of a gather over the plate (LDA's document of each token; its
segment-sum matrix, used only by unrestricted evaluations, is dropped); a constant over the
plate (a design matrix X and its statistics x x^T); and the child elements each factor keeps
(``missing.resolve`` reads whole gather indices: it runs here, on the driver, and its result is
given to the holder's model, whose compile does not resolve again). A constant broadcast over a
plate (a prior's alpha repeated for each document) is pickled as its one row and broadcast again
on the worker; arrays of the same content (counts that weight two nodes) are sent once.
"""
from __future__ import annotations

import io
import pickle

import numpy as np

from ..graph.data import Rows
from ..graph.expressions import Constant, Gather

#: a node's arrays over its plates: its data multiplicity m_i, its entropy weight, the product of
#: the multiplicity and the mask (cached by ``Node.factor_weights``), its barren elements
WEIGHTS = ("weights", "multiplicity", "_factor_weights", "barren")


def partition_blob(model, spans: dict) -> bytes:
    """``model`` pickled with its arrays over each plate of ``spans`` (plate name -> (lo, hi),
    or None: kept whole) holding only elements lo..hi (a partially observed node's Clamp too);
    a node whose family's base measure is a term of the data keeps all of its data."""
    swaps: list = []
    memo: dict = {}
    factors, _ = model.compile()
    live = {name: f.live for name, f in factors.items() if f.live is not None}
    swaps.extend([(model, "_live", model._live), (model, "inputs", model.inputs), (model, "state", model.state)])
    model._live, model.inputs = live, {}  # a holder never calls set_data
    model.state = None  # a holder reads the moments each task sends
    try:
        for node in model.nodes.values():
            held = [(axis, spans[p.name]) for axis, p in enumerate(node.plates) if spans.get(p.name) is not None]
            if len(held) == 1:
                (axis, (lo, hi)), = held
                _cut_data(node, axis, lo, hi, swaps)
                _cut_clamp(node, axis, lo, hi, swaps)
                node.factor_weights()  # multiplicity times mask, from the whole arrays (then cut)
                for name in WEIGHTS:
                    _cut(node, name, axis, lo, hi, node.plate_shape, swaps, memo)
                if node.name in live:
                    live[node.name] = Rows(live[node.name], axis, lo, hi)
            for expr in glue(node):
                if isinstance(expr, Gather) and spans.get(expr.plate.name) is not None:
                    _cut(expr, "index", 0, *spans[expr.plate.name], (expr.plate.size,), swaps, memo)
                    if isinstance(expr.index, Rows):
                        swaps.append((expr, "scatter", expr.scatter))
                        expr.scatter = None
                elif isinstance(expr, Constant):
                    _cut_constant(expr, spans, swaps, memo)
        out = io.BytesIO()
        _Pickler(out).dump(model)
        return out.getvalue()
    finally:
        for owner, name, value in reversed(swaps):
            setattr(owner, name, value)


def _cut(owner, name: str, axis: int, lo: int, hi: int, shape: tuple, swaps: list, memo: dict) -> None:
    """``owner.name`` as its rows lo..hi along ``axis`` when it is an array of ``shape`` (one
    Rows per content and range, so that counts that weight two nodes are sent once)."""
    value = owner.__dict__.get(name)
    if isinstance(value, np.ndarray) and value.shape[:len(shape)] == tuple(shape):
        same = memo.setdefault((value.shape, value.dtype.str, axis, lo, hi), [])
        rows = next((r for v, r in same if v is value or np.array_equal(v, value)), None)
        if rows is None:
            rows = Rows(value, axis, lo, hi)
            same.append((value, rows))
        swaps.append((owner, name, value))
        setattr(owner, name, rows)


def _cut_data(node, axis: int, lo: int, hi: int, swaps: list) -> None:
    """An observed node's data, statistics and mask as their rows lo..hi (:class:`Rows`: copied,
    or read on the worker from its file); its factor weights (multiplicity times mask) formed
    first, from the whole mask."""
    if not (node.observed and node.data is not None and node.family.unit_base_measure):
        return
    rows = Rows(node.data, axis, lo, hi)
    try:
        moments = node._statistics(rows)
    except IndexError:  # statistics formed from the whole array at declaration
        return
    node.factor_weights()
    swaps.extend([(node, "data", node.data), (node, "_data_moments", node._data_moments),
                  (node.factor, "x", node.factor.x), (node, "mask", node.mask)])
    node.data, node._data_moments, node.factor.x = rows, moments, None
    if node.mask is not None:
        node.mask = Rows(node.mask, axis, lo, hi)


def _cut_clamp(node, axis: int, lo: int, hi: int, swaps: list) -> None:
    """A partially observed node's data, mask and its Clamp's arrays (read through Contexts of
    these rows, with global row numbers) as their rows lo..hi."""
    clamp = node.clamp
    if clamp is None:
        return

    def rows(value):
        if not (isinstance(value, np.ndarray) and value.ndim > axis):
            return value
        return (_Flags if value.dtype == bool else Rows)(value, axis, lo, hi)

    for owner, name in [(node, "data"), (node, "mask"), (node, "_data_moments"), (node.factor, "x"),
                        (clamp, "data"), (clamp, "coordinates"), (clamp, "observed"), (clamp, "seen"),
                        (clamp, "stats"), (clamp, "entries"), (clamp, "absent")]:
        value = getattr(owner, name)
        swaps.append((owner, name, value))
        setattr(owner, name, tuple(rows(v) for v in value) if isinstance(value, tuple) else rows(value))
    swaps.append((clamp, "_cache", clamp._cache))
    clamp._cache = (None, None)


class _Flags(Rows):
    """Rows of a boolean array (a Clamp's observed elements) whose negation ``~`` is the rows
    of the negated array (``Clamp.free`` zeroes a message at ~observed)."""

    def __invert__(self) -> "_Flags":
        out = Rows.__new__(_Flags)
        out.__dict__.update(self.__dict__, _rows=~self.rows, _source=None)
        return out


def _cut_constant(const, spans: dict, swaps: list, memo: dict) -> None:
    """A constant over the plates (a design matrix X in dot(w, X)) as its rows lo..hi, its
    value and its moments (x, x x^T)."""
    held = [(axis, spans[p.name]) for axis, p in enumerate(const.plates) if spans.get(p.name) is not None]
    if len(held) != 1:
        return
    (axis, (lo, hi)), = held
    shape = tuple(p.size for p in const.plates)
    _cut(const, "value", axis, lo, hi, shape, swaps, memo)
    if isinstance(const.value, Rows):
        swaps.append((const, "moments", const.moments))
        const.moments = tuple(m if np.shape(m)[:len(shape)] != shape else Rows(m, axis, lo, hi) for m in const.moments)


def glue(node) -> list:
    """The expressions (gathers, constants, ...) that ``node``'s parents are made of, up to the
    random nodes they read."""
    out, todo, seen = [], [e for e in node.parents.values() if not isinstance(e, str)], set()
    while todo:
        expr = todo.pop()
        if id(expr) in seen or getattr(expr, "random", False):
            continue
        seen.add(id(expr))
        out.append(expr)
        todo.extend(expr.inputs())
    return out


class _Pickler(pickle.Pickler):
    """pickle, with an array broadcast along some axes (stride 0) sent as its distinct elements."""

    def reducer_override(self, obj):
        if type(obj) is np.ndarray and any(s == 0 and n > 1 for s, n in zip(obj.strides, obj.shape)):
            one = tuple(slice(0, 1) if s == 0 else slice(None) for s in obj.strides)
            return np.broadcast_to, (np.array(obj[one]), obj.shape)
        return NotImplemented


class _Range:
    """A run of consecutive integers lo..hi, sent as its two ends and an array again on unpickling."""

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi
        self.nbytes = 16

    def __reduce__(self):
        return np.arange, (self.lo, self.hi, 1, np.int64)


def compact_part(part: dict | None) -> dict | None:
    """A holder's plan (``MinibatchPlan.part``) with the positions of its linked elements sent
    as a range when they are consecutive (tokens grouped by document)."""
    if part is None:
        return None
    linked = {}
    for name, (order, starts, counts) in part["linked"].items():
        if order.size and order.dtype == np.int64 and np.array_equal(order, np.arange(order[0], order[0] + order.size)):
            order = _Range(int(order[0]), int(order[0]) + order.size)
        linked[name] = (order, starts, counts)
    return {**part, "linked": linked}
