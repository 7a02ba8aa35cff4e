"""Leaves: the arrays of moments that enter a factor's terms, and where their messages go.

A ``Context`` restricts an evaluation to subsets of some plates (a minibatch, the children a
node drew) and may override the moments of nodes with arrays already restricted to them (local
nodes of a minibatch), so that a stochastic step touches only the rows it uses. Its ``state``
says whose q is read: a fit's State, or (None) the state of the model that owns the node.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from .data import take_rows
from .expressions import Constant, Gather


@dataclass
class Context:
    """One evaluation: which elements of each factor are read, at which q, with which weights.

    The restriction (``subset``, ``overrides``, ``scale``, ``owner``) applies to every factor
    evaluated in this Context, except the factors named in ``factors`` (child name -> the
    Context of that factor: a node's drawn children, a minibatch's factors beside the node's
    own factor read whole). ``weights`` (child name -> array over the child's plates: a policy's
    1/T) multiply those factors' weights; ``plate`` and ``index`` ask for one slice of the
    target node (its elements that meet in one factor, updated one slice at a time).
    """

    subset: dict = field(default_factory=dict)  # plate name -> sorted int array of kept indices
    overrides: dict = field(default_factory=dict)  # node name -> moments restricted to the subset
    scale: np.ndarray | None = None  # extra weight over the factor's kept child elements
    owner: dict = field(default_factory=dict)  # plate name -> position of each kept element's datapoint
    state: object = None  # the State whose moments are read (None: each node's model.state)
    #: the subset is the same at every evaluation this Context's kind makes on this model, and
    #: its arrays (data rows, overrides) are never written in place: memos keyed by identity
    #: hold (a holder's batch evaluations of its own rows)
    stable: bool = False
    factors: dict = field(default_factory=dict)  # factor child name -> the Context it is evaluated in
    weights: dict | None = None  # factor child name -> extra weight over its elements
    plate: object = None  # the target node's slice: its plate
    index: int | None = None  # and the element of that plate

    @property
    def restricted(self) -> bool:
        """Whether the evaluation is restricted to subsets, overridden or rescaled."""
        return bool(self.subset) or bool(self.overrides) or self.scale is not None

    @property
    def whole(self) -> bool:
        """Whether every factor is read over all of its elements at q (no factor restricted)."""
        return not self.restricted and not any(c.restricted for c in self.factors.values())

    def of(self, child: str) -> "Context":
        """The Context of the factor whose child is ``child``, reading q from this one's state."""
        own = self.factors.get(child)
        if own is None:
            return self
        return own if own.state is self.state else replace(own, state=self.state)

    def at(self, state) -> "Context":
        """This evaluation reading q from ``state``."""
        return self if self.state is state else replace(self, state=state)

    def sliced(self, plate, index: int) -> "Context":
        """This evaluation of the target node's elements ``index`` along ``plate`` only."""
        return replace(self, plate=plate, index=index)

    def take(self, arr: np.ndarray, plates: tuple) -> np.ndarray:
        for axis, p in enumerate(plates):
            idx = self.subset.get(p.name)
            if idx is not None:
                arr = take_rows(arr, idx, axis)
        return arr

    def shape(self, plates: tuple) -> tuple[int, ...]:
        return tuple(len(self.subset[p.name]) if p.name in self.subset else p.size for p in plates)


def per_datapoint(values: np.ndarray, plates: tuple, ctx: Context, n: int) -> np.ndarray:
    """Sum ``values`` (shaped ``ctx.shape(plates)`` + trailing axes) over the elements of each of
    the ``n`` drawn datapoints (a token belongs to its document through ``ctx.owner``)."""
    axis = next(i for i, p in enumerate(plates) if p.name in ctx.subset)
    moved = np.moveaxis(np.asarray(values, float), axis, 0)
    lead = len(plates) - 1
    flat = moved.reshape((moved.shape[0], -1) + moved.shape[1 + lead:]).sum(axis=1)
    owner = ctx.owner[plates[axis].name]
    cols = flat.reshape(flat.shape[0], -1)
    out = np.stack([np.bincount(owner, weights=cols[:, j], minlength=n) for j in range(cols.shape[1])], axis=1)
    return out.reshape((n,) + flat.shape[1:])


def restricted(ctx: Context | None) -> bool:
    """``ctx.restricted``, None standing for no restriction (called on every leaf read)."""
    return ctx is not None and (bool(ctx.subset) or bool(ctx.overrides) or ctx.scale is not None)


def memoizable(ctx: Context | None) -> bool:
    """Whether an evaluation in ``ctx`` may read and write the factors' identity-keyed memos:
    unrestricted, or restricted the same way every time (``Context.stable``)."""
    return ctx is None or ctx.stable or not (ctx.subset or ctx.overrides or ctx.scale is not None)


def moments_of(node, ctx: Context | None = None) -> tuple:
    """The moments of ``node`` at the evaluation's state: the data's statistics for an observed
    node, else q's moments in ``ctx.state`` (or in the node's model's state), with the observed
    elements of a partially observed node at their data."""
    if node.observed:
        return node.moments
    state = ctx.state if ctx is not None and ctx.state is not None else node.model.state
    moments = state.moments[node.name]
    return moments if node.clamp is None else node.clamp.apply(moments)


def override_of(node, ctx: Context) -> tuple | None:
    """The context's moments for ``node`` (restricted to its subset), pinned like ``moments_of``."""
    own = ctx.overrides.get(node.name)
    if own is None or node.clamp is None:
        return own
    return node.clamp.restrict(own, ctx)


def stamp_of(node, ctx: Context | None = None):
    """The moments object an evaluation reads for ``node`` (its override in ``ctx``, else its
    q's), compared by identity in the memos; None for observed data, which do not change."""
    if node.observed:
        return None
    own = None if ctx is None else ctx.overrides.get(node.name)
    return own if own is not None else moments_of(node, ctx)


class Leaf(ABC):
    """Moments in a factor's layout; ``node`` receives the messages (None for constants)."""

    node = None
    plates: tuple = ()

    @property
    def target(self) -> bool:
        return self.node is not None and not self.node.observed

    @property
    def point(self) -> bool:
        return not self.target

    @abstractmethod
    def value(self, comp: int, ctx: Context | None = None) -> np.ndarray:
        """Moment component ``comp`` in this leaf's layout (restricted by ``ctx``)."""

    def to_node(self, message: tuple[np.ndarray, ...], ctx: Context | None = None) -> tuple[np.ndarray, ...]:
        return message

    def stamp(self, ctx: Context | None = None):
        """What this leaf's value depends on that can change: the moments object of a hidden
        node (compared by identity), else None."""
        return None


class NodeLeaf(Leaf):
    def __init__(self, node):
        self.node = node
        self.plates = node.plates
        self.family = node.family

    def value(self, comp, ctx=None):
        if not restricted(ctx):
            return np.asarray(moments_of(self.node, ctx)[comp])
        own = override_of(self.node, ctx)
        if own is not None:
            return own[comp]
        return ctx.take(moments_of(self.node, ctx)[comp], self.plates)

    def shapes(self, ctx=None):
        return self.node.component_shapes(None if ctx is None else ctx.shape(self.plates))

    def stamp(self, ctx=None):
        return stamp_of(self.node, ctx)


class IndicatorLeaf(NodeLeaf):
    """A gate's selector whose E[u_0] is not its one-hot indicator (a Bernoulli z: (1 - p, p)):
    forward ``family.indicator`` over a last axis of categories, backward its chain rule."""

    def value(self, comp, ctx=None):
        return self.family.indicator(super().value(comp, ctx))

    def shapes(self, ctx=None):
        k = self.family.categories(self.node.event_shape)
        return [s + (k,) for s in super().shapes(ctx)]

    def to_node(self, message, ctx=None):
        return (self.family.indicator_message(message[0]),) + tuple(message[1:])


class ConstLeaf(Leaf):
    def __init__(self, const: Constant, plates: tuple):
        self.const = const
        self.plates = plates
        self.family = const.family

    def value(self, comp, ctx=None):
        arr = self.const.moments[comp]
        return arr if ctx is None else ctx.take(arr, self.plates)


class GatherLeaf(Leaf):
    """Forward: the node's moments at the gathered rows. Backward: a segment sum (sparse product)."""

    def __init__(self, gather: Gather):
        self.gather = gather
        self.node = gather.node
        self.plates = gather.plates
        self.family = gather.family
        #: per moment component, (the moments object it was gathered from, the gathered rows):
        #: one entry each, replaced when q's moments are new objects; unrestricted reads only
        self._rows: dict = {}

    def indices(self, ctx: Context | None = None) -> np.ndarray:
        """Rows of the source used by each gathered element (positions in the override when the
        source node is overridden by a subset)."""
        idx = self.gather.index
        if not restricted(ctx):
            return idx
        rows = ctx.subset.get(self.gather.plate.name)
        if rows is not None:
            idx = idx[rows]
        if self.node.name in ctx.overrides:
            src = ctx.subset[self.node.plates[0].name]
            idx = np.searchsorted(src, idx)
        return idx

    def source(self, comp: int, ctx: Context | None = None) -> np.ndarray:
        if not restricted(ctx):
            return moments_of(self.node, ctx)[comp]
        own = override_of(self.node, ctx)
        if own is not None:
            return own[comp]
        return _take_rest(ctx, moments_of(self.node, ctx)[comp], self.node.plates)

    def value(self, comp, ctx=None):
        if not restricted(ctx):
            moments = moments_of(self.node, ctx)
            source, rows = self._rows.get(comp, (None, None))
            if source is not moments:
                rows = moments[comp][self.gather.index]
                self._rows[comp] = (moments, rows)
            return rows
        return self.source(comp, ctx)[self.indices(ctx)]

    def stamp(self, ctx=None):
        return stamp_of(self.node, ctx)

    def shapes(self, ctx=None):
        n = self.gather.index.size if not restricted(ctx) else len(self.indices(ctx))
        rest = self.node.plate_shape[1:] if ctx is None else ctx.shape(self.node.plates[1:])
        return self.node.component_shapes((n,) + tuple(rest))

    def scatter(self, ctx: Context | None = None) -> sp.csr_matrix:
        if not restricted(ctx):
            return self.gather.scatter
        idx = self.indices(ctx)
        rows = self.node.plate_shape[0] if self.node.name not in ctx.overrides else len(ctx.subset[self.node.plates[0].name])
        return sp.csr_matrix((np.ones(idx.size), (idx, np.arange(idx.size))), shape=(rows, idx.size))

    def to_node(self, message, ctx=None):
        s = self.scatter(ctx)
        out = []
        for m in message:
            flat = m.reshape(m.shape[0], -1)
            out.append(np.asarray(s @ flat).reshape((s.shape[0],) + m.shape[1:]))
        return tuple(out)


def _take_rest(ctx: Context, arr: np.ndarray, plates: tuple) -> np.ndarray:
    """Restrict every plate but the first (the gathered one) to the context's subsets."""
    for axis, p in enumerate(plates):
        if axis == 0:
            continue
        idx = ctx.subset.get(p.name)
        if idx is not None:
            arr = np.take(arr, idx, axis=axis)
    return arr


class EventGatherLeaf(Leaf):
    """E[log p_{x_n}] for observed categories x_n: a parent's moments indexed along their event
    axis by the data, replacing the product of a one-hot child and the parent (so no N x V
    one-hot is formed). Backward: the message is scattered to the observed categories."""

    def __init__(self, parent: Leaf, comp: int, axis: int, child, per_element: bool):
        self.parent, self.comp, self.axis, self.child = parent, comp, axis, child
        self.per_element = per_element  # the parent carries the child's plates (Cat(theta[d]))
        self.data = child.data.astype(np.int64)
        self.node = parent.node
        self.family = parent.family
        self.plates = parent.plates

    @property
    def target(self) -> bool:
        return self.parent.target

    def stamp(self, ctx=None):
        return self.parent.stamp(ctx)

    def _data(self, ctx):
        return self.data if ctx is None else ctx.take(self.data, self.child.plates)

    def value(self, comp, ctx=None):
        p = self.parent.value(self.comp, ctx)
        x = self._data(ctx)
        if self.per_element:
            idx = x.reshape(x.shape + (1,) * (p.ndim - x.ndim))
            return np.take_along_axis(p, idx, axis=self.axis).squeeze(self.axis)
        return np.take(p, x, axis=self.axis)

    def parent_shape(self, ctx):
        return self.parent.shapes(ctx)[self.comp]

    def to_node(self, message, ctx=None):
        grad = message[0]
        x = self._data(ctx)
        shape = self.parent_shape(ctx)
        v = shape[self.axis]
        if self.per_element:
            out = np.zeros(shape)
            idx = x.reshape(x.shape + (1,) * (len(shape) - x.ndim))
            np.put_along_axis(out, idx, np.expand_dims(grad, self.axis), axis=self.axis)
        else:
            nd = x.ndim
            moved = np.moveaxis(grad, list(range(self.axis, self.axis + nd)), list(range(nd)))
            flat = moved.reshape(x.size, -1)
            onehot = sp.csr_matrix((np.ones(x.size), (x.ravel(), np.arange(x.size))), shape=(v, x.size))
            out = np.asarray(onehot @ flat).reshape((v,) + moved.shape[nd:])
            out = np.moveaxis(out, 0, self.axis)
        comps = [np.zeros(s) for s in self.parent.shapes(ctx)]
        comps[self.comp] = out
        return self.parent.to_node(tuple(comps), ctx)

    def shapes(self, ctx=None):
        return [self.value(self.comp, ctx).shape]
