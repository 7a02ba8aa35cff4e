"""Missing data: which elements of the network are latent, observed, or barren.

- Masked entries of an observed node that has children are latent (Winn & Bishop section 3.3:
  the Markov blanket of a missing value is its parents, children and co-parents). The node is
  then updated like any hidden node, and a ``Clamp`` pins its observed elements at their data.
- A latent element whose descendants are all unobserved integrates out exactly: summing over it
  leaves its parents' factor at 1 (a barren node, Shachter 1986). Its factor gets weight 0 in
  the bound and in the messages to its parents, and its entropy weight 0, so its contribution is
  exactly zero (``Model.compile`` records the pruned elements in ``node.barren``).
- An element of weight 0 (data multiplicity m_i = 0: a padded step of a sequence) with a masked
  coordinate, of a partially observed node without children, is absent: it carries neither
  data nor a latent value (its observed coordinates, if any, have weight 0 too). Its factor's weight is 0, as for any element of weight 0; the ``Clamp`` holds its q at
  the data's fill value, as an observed element, so it is neither latent (``Clamp.latent``), nor
  missing (``describe``, ``model.impute``), nor barren.
"""
from __future__ import annotations

import numpy as np

from .expressions import Expression, Gather, random_nodes
from .node import Node
from .partial import LatentRows


class Clamp:
    """The observed elements of a partially observed node: its moments there are the statistics
    of the data, and the messages it receives there are zero.

    With a mask over plates + event (``Node.partial``: single coordinates observed), an element
    with some observed coordinates is latent in the others: its q is q(x_m | x_o = data), kept
    in the node's own layout by the family's ``pin`` (``Engine.target`` and the initial q apply
    :meth:`pin`), and the entries of its statistics that x_o fixes are the data's
    (``pinned_entries``). ``observed`` is then the elements with every coordinate observed.

    ``absent`` (over the plates, or None): the elements of weight 0 with a masked coordinate held as
    observed at the data's fill value (module docstring)."""

    def __init__(self, node, absent: np.ndarray | None = None):
        mask = np.asarray(node.mask, bool)
        if absent is not None:
            mask = mask | absent.reshape(absent.shape + (1,) * (mask.ndim - absent.ndim))
        self.absent = absent
        self.plates = node.plates
        self.family = node.family
        self.coordinates = mask if node.partial else None
        if self.coordinates is None:
            self.observed = self.seen = mask
            self.entries = None
        else:
            axes = tuple(range(len(node.plate_shape), mask.ndim))
            self.observed, self.seen = mask.all(axis=axes), mask.any(axis=axes)
            self.entries = node.family.pinned_entries(mask)
        self.data = np.asarray(node.data, float)
        self.shapes = node.component_shapes()
        self.stats = tuple(np.asarray(s, float) for s in node._statistics(node.data))
        self._cache: tuple = (None, None)

    def _mask(self, mask: np.ndarray, arr: np.ndarray) -> np.ndarray:
        return mask.reshape(mask.shape + (1,) * (arr.ndim - mask.ndim))

    def _fixed(self, select) -> list:
        """Per statistic, where the data's statistics hold (``select`` takes an array over the
        plates, or plates + event, to the layout at hand)."""
        if self.entries is None:
            return [select(self.observed)] * len(self.stats)
        return [select(e) for e in self.entries]

    def apply(self, moments: tuple) -> tuple:
        """q's moments with the observed elements replaced by the data's statistics (kept for
        the moments object it was computed from)."""
        if self._cache[0] is not moments:
            out = tuple(np.where(self._mask(f, m), s, m)
                        for m, s, f in zip(moments, self.stats, self._fixed(lambda a: a)))
            self._cache = (moments, out)
        return self._cache[1]

    def restrict(self, moments: tuple, ctx) -> tuple:
        """``apply`` for moments already restricted to the context's subset (a minibatch's local q)."""
        fixed = self._fixed(lambda a: ctx.take(a, self.plates))
        return tuple(np.where(self._mask(f, m), ctx.take(s, self.plates), m)
                     for m, s, f in zip(moments, self.stats, fixed))

    def pin(self, natural: tuple, ctx=None, plate=None, index: int | None = None) -> tuple:
        """The natural parameters of q(x_m | x_o) (``Family.pin``) for a mask over plates + event;
        ``natural`` as it is otherwise (in the layout of ``free``)."""
        if self.coordinates is None:
            return natural
        mask, data = self.coordinates, self.data
        if ctx is not None:
            mask, data = ctx.take(mask, self.plates), ctx.take(data, self.plates)
        if plate is not None:
            axis = self.plates.index(plate)
            mask, data = np.take(mask, index, axis=axis), np.take(data, index, axis=axis)
        return self.family.pin(natural, mask, data)

    def latent(self):
        """The rows along the outermost plate with some element not fully observed, when a mask
        per coordinate leaves other rows complete (``partial.LatentRows``: batch updates form
        q there only, the factor reads the complete rows as data); None when every row is
        latent or the mask is over the plates. Kept per ``observed`` array (a Dask holder's cut
        Clamp has its own)."""
        if self.coordinates is None or not self.plates:
            return None
        held = self.__dict__.get("_latent")
        if held is None or held[0] is not self.observed:
            complete = self.observed.reshape(self.observed.shape[0], -1).all(axis=1)
            rows = np.flatnonzero(~complete)
            held = self._latent = (self.observed, None if rows.size == complete.size else LatentRows(self, rows))
        return held[1]

    def free(self, message: tuple, ctx=None, plate=None, index: int | None = None) -> tuple:
        """The message with the observed elements set to zero (in the message's layout)."""
        keep = ~self.observed
        if ctx is not None:
            keep = ctx.take(keep, self.plates)
        if plate is not None:
            keep = np.take(keep, index, axis=self.plates.index(plate))
        return tuple(m * self._mask(keep, m) for m in message)


def _absent(node) -> np.ndarray | None:
    """The elements of weight 0 with a masked coordinate (over the plates), or None when there
    are none: with some coordinates observed too, a latent rest would have no factor to make its
    q proper."""
    if node.multiplicity is None:
        return None
    complete = node.mask.reshape(node.plate_shape + (-1,)).all(axis=-1)
    absent = (node.multiplicity == 0) & ~complete
    return absent if absent.any() else None


def project(alive: np.ndarray, plates: tuple, target: tuple) -> np.ndarray:
    """Any over the plates not in ``target``; broadcast over the target plates not in ``plates``."""
    common = [p for p in plates if p in target]
    out = alive.any(axis=tuple(i for i, p in enumerate(plates) if p not in target)) if alive.ndim else alive
    out = np.transpose(out, [common.index(p) for p in target if p in common])
    out = out.reshape([p.size if p in common else 1 for p in target])
    return np.broadcast_to(out, tuple(p.size for p in target))


def _propagate(expr: Expression, alive: np.ndarray, plates: tuple, reached: dict) -> None:
    """Mark the elements of the random nodes under ``expr`` that feed a live child element."""
    if isinstance(expr, Node):
        mine = project(alive, plates, expr.plates)
        reached[expr.name] = reached[expr.name] | mine if expr.name in reached else mine.copy()
        return
    if isinstance(expr, Gather):
        rows = project(alive, plates, expr.plates)
        out = np.zeros(expr.node.plate_shape, bool)
        np.logical_or.at(out, expr.index, rows)
        _propagate(expr.node, out, expr.node.plates, reached)
        return
    for inner in expr.inputs():
        _propagate(inner, project(alive, plates, inner.plates), inner.plates, reached)


def resolve(model, order: list[str]) -> dict:
    """Turn masked non-leaf observed nodes into partially observed latent ones, give every latent
    node its entropy weights (mask and barren), and return, per factor that drops some child
    elements, the elements it keeps."""
    parents_of = {n.name for node in model.nodes.values() for expr in node.parents.values()
                  if isinstance(expr, Expression) for n in random_nodes(expr)}
    for node in model.nodes.values():
        if node.observed and node.mask is not None and not node.mask.all() and (node.name in parents_of
                                                                                 or node.partial):
            if not node.family.latent:
                from ..errors import DataError

                raise DataError(f"node '{node.name}': a {node.family.name} node cannot be latent, so it cannot have "
                                f"both masked entries and children")
            node.observed, node.clamp = False, Clamp(node, None if node.name in parents_of else _absent(node))
            node.__dict__.pop("_factor_weights", None)
    reached: dict = {}
    keep: dict = {}
    for name in reversed(order):
        node = model.nodes[name]
        if node.observed:
            alive = np.ones(node.plate_shape, bool) if node.mask is None else node.mask
        else:
            alive = node.live(reached.get(name, np.zeros(node.plate_shape, bool)))
            if node.clamp is not None:
                alive = alive | node.clamp.seen
        for expr in node.parents.values():
            _propagate(expr, alive, node.plates, reached)
        if node.observed:
            continue
        node.barren = None if alive.all() else ~alive
        if not alive.all():
            keep[name] = alive
        latent = alive if node.clamp is None else alive & ~node.clamp.observed
        m = node.multiplicity
        node.weights = m if latent.all() else (1.0 if m is None else m) * latent
    return keep


def describe(model) -> list[str]:
    """One line per node with inferred masked entries or pruned (barren) elements, for summaries
    and diagrams (empty when the model has neither)."""
    model.compile()
    lines = []
    for node in model.nodes.values():
        total = int(np.prod(node.plate_shape))
        if node.clamp is not None and node.clamp.absent is not None:
            total -= int(node.clamp.absent.sum())
        if node.clamp is not None and node.clamp.coordinates is not None:
            lines.append(f"{node.name}: {int((~node.clamp.coordinates).sum())} masked coordinates in "
                         f"{int((node.clamp.seen & ~node.clamp.observed).sum())} of {total} elements inferred")
        elif node.clamp is not None:
            lines.append(f"{node.name}: {int((~node.clamp.observed).sum())} of {total} masked entries inferred")
        if node.barren is not None:
            lines.append(f"{node.name}: {int(node.barren.sum())} of {total} elements barren (pruned: "
                         f"no observed descendant)")
    return lines
