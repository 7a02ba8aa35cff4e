"""A partially observed node whose complete rows cost what data cost.

With a mask per coordinate, a row whose coordinates are all observed has a constant pinned q
(``Family.pin`` with every coordinate observed reads only the data) and moments at the data's
statistics (``Clamp``). ``LatentRows`` keeps the other rows: a batch update forms q's natural
parameters, the pin, the moments, the validity check and the entropy there only, and the
complete rows hold the constant (``Engine.target``, ``moments``, ``check_domain``, ``entropy``).
The State holds q's natural parameters and moments over every row as a ``Filled``: the rows'
arrays plus the constant, formed whole only when something reads them, so a sweep writes
nothing of the complete rows' size (the relative change too: ``LatentRows.relative_change``).

The node's factor p(x | pa) over the plate is then the sum of (``Split``)

- the factor with x observed, weighted by the elements of the complete rows (0/1): its messages to the
  parents and to a gate's selector read the data as any observed child's do (the folded
  products of ``folded.py``, Winn & Bishop's eta(pa)^T u(x) - A(pa)), and
- the factor with x latent, evaluated in a Context of the latent rows (less the barren ones),
  whose moments of the nodes on that plate are overrides taken once per moments object, so its
  memos (plate sums, kept messages) hold as in a full evaluation (``Context.stable``).

Each is compiled once for the node (a copy of it, observed or without its Clamp), so neither
shares memos with the node's own factor. ``Engine.message`` and ``Engine.elbo`` add the two;
a message over the rows' plate is scattered back into the full layout.
"""
from __future__ import annotations

import copy

import numpy as np

from . import held
from .change import relative_change, squares
from .data import take_rows
from .held import Held
from .leaves import Context, moments_of


class Filled(Held):
    """A partially observed node's natural parameters or moments over every row, held as their
    values at the latent rows (``sub``) and the constant of the complete rows (``fill``, never
    written: ``LatentRows.base`` or the data's statistics). A batch sweep reads and writes ``sub`` only;
    the full arrays are formed when read (indexing, iterating, saving), once per object, with
    the bits that ``fill`` with ``sub`` written at the rows has."""

    def __new__(cls, latent: "LatentRows", fill: tuple, sub: tuple):
        obj = super().__new__(cls, (None,) * len(sub))
        obj.latent, obj.fill, obj.sub, obj._full = latent, fill, tuple(sub), None
        return obj

    def gathered(self) -> tuple:
        if self._full is None:
            full = []
            for f, a in zip(self.fill, self.sub):
                f = f.copy()
                f[self.latent.rows] = a
                full.append(f)
            self._full = tuple(full)
        return self._full

    def moments(self) -> "Filled":
        """The moments of q at these natural parameters (:meth:`LatentRows.moments`)."""
        return self.latent.moments(self)

    def invalid(self) -> int:
        """Elements outside the family's domain (the complete rows' constant is valid)."""
        ok = self.latent.clamp.family.valid(self.sub)
        return int(np.size(ok) - np.count_nonzero(ok))

    def relative_change(self, old) -> float:
        """||lambda_new - lambda_old|| / ||lambda_old|| (:meth:`LatentRows.relative_change`)."""
        return self.latent.relative_change(old, self)

    def pieces(self, where):
        """(fill, sub) for the ``LatentRows`` that made it."""
        return (self.fill, self.sub) if where is self.latent else None


class LatentRows:
    """The rows of a partially observed node with a masked coordinate (``rows``, along its
    outermost plate): q's natural parameters are formed there, the complete rows hold ``base``,
    the pinned q that every coordinate observed gives (Winn & Bishop eq. (5) summed and then
    pinned, ``Family.pin``: constant in the messages). Natural parameters and moments over every
    row are ``Filled``: nothing of the size of the complete rows is written per sweep."""

    def __init__(self, clamp, rows: np.ndarray):
        self.clamp, self.rows = clamp, rows
        self._base = None
        self.complete = np.ones(clamp.observed.shape[0], bool)
        self.complete[rows] = False
        self._norms = None  # ||base at the complete rows||^2 per component
        # per statistic, the flat positions at the rows (in their layout) that the data fix, and
        # the data there
        self._pinned = []
        for s, f in zip(clamp.stats, clamp._fixed(lambda a: a)):
            sub = np.take(s, rows, axis=0)
            fixed = np.broadcast_to(clamp._mask(np.take(f, rows, axis=0), sub), sub.shape)
            where = np.flatnonzero(fixed)
            self._pinned.append((where, sub.reshape(-1)[where]))

    def base(self) -> tuple:
        """q's natural parameters at the complete rows (read-only; the other rows are
        overwritten)."""
        if self._base is None:
            c = self.clamp
            self._base = c.family.pin(tuple(np.zeros(s) for s in c.shapes), c.coordinates, c.data)
            for a in self._base:
                a.flags.writeable = False
        return self._base

    def spread(self, natural: tuple) -> Filled:
        """Natural parameters over every row: ``natural`` (at the rows) there, ``base`` elsewhere."""
        return Filled(self, self.base(), natural)

    def at(self, natural: tuple) -> tuple:
        """``natural`` (over every row) at the rows (for a ``Filled`` of these rows the very
        arrays :meth:`spread` was given, whose factorization the validity check, the moments
        and the entropy share)."""
        parts = held.pieces(natural, self)
        return parts[1] if parts is not None else tuple(np.take(a, self.rows, axis=0) for a in natural)

    def moments(self, natural: tuple) -> Filled:
        """The moments the factors read (``Clamp.apply``'s): q's at the rows with their pinned
        entries at the data's, the complete rows at the data's statistics."""
        c = self.clamp
        sub = []
        for s, m, (where, data) in zip(c.stats, c.family.moments(self.at(natural)), self._pinned):
            o = np.array(np.broadcast_to(m, (self.rows.size,) + s.shape[1:]))
            o.reshape(-1)[where] = data
            sub.append(o)
        out = Filled(self, c.stats, sub)
        c._cache = (out, out)
        return out

    def relative_change(self, old: tuple, new: Filled) -> float:
        """``change.relative_change`` of ``new`` (these rows) from ``old`` summed as the latent
        rows plus the complete rows: the latter add ||old_c - base_c||^2 (0 when ``old`` holds
        ``base`` there, as every ``Filled`` of these rows does) and ||old_c||^2 (a constant
        then), so a sweep reads the latent rows only."""
        parts = held.pieces(old, self)
        same = parts is not None and parts[0] is new.fill
        if not same and any(np.shape(a) != np.shape(b) for a, b in zip(old, self.base())):
            return relative_change(old, new.gathered())  # an old q of another layout: the full sums
        if self._norms is None:  # ||base at the complete rows||^2 (in one pass over base)
            self._norms = [squares(b, b)[1] - squares(r, r)[1] for b, r in zip(self.base(), self.at(self.base()))]
        num = den = 0.0
        for i, (a, b) in enumerate(zip(self.at(old), new.sub)):
            n, d = squares(a, b)
            extra, norm = 0.0, self._norms[i]
            if not same and self._differ(old[i], self.base()[i]):
                c, h = (np.compress(self.complete, x, axis=0) for x in (old[i], self.base()[i]))
                extra, norm = squares(c, h)[0], squares(c, c)[1]
            num, den = num + (n + extra), den + (d + norm)
        return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))

    def _differ(self, a: np.ndarray, b: np.ndarray) -> bool:
        """Whether a and b (over every row) differ at a complete row."""
        ne = np.not_equal(a, b).reshape(a.shape[0], -1)
        ne[self.rows] = False
        return bool(ne.any())

    def split(self, node, keep: np.ndarray | None):
        """The node's factor as data at the complete rows plus latent at the rows (``Split``)."""
        held = self.__dict__.get("_split")
        if held is None or held[0] is not node:
            held = self._split = (node, Split(node, keep, self))
        return held[1]


class Split:
    """E[log p(x | pa)] = sum_n [n complete] E[log p(x_n | pa)]_data + sum_{n latent} E[log p(x_n | pa)]_q:
    the node's factor as two compiled copies (module docstring)."""

    def __init__(self, node, keep: np.ndarray | None, of: LatentRows):
        """``node``'s factor split at the rows of ``of`` (its ``LatentRows``); ``keep``: the
        factor's live elements (``CompiledFactor.live``) or None."""
        from .compiled import CompiledFactor

        clamp = node.clamp
        data = copy.copy(node)
        data.observed, data.clamp, data.mask = True, None, None
        data.__dict__.pop("_factor_weights", None)
        latent = copy.copy(node)
        latent.clamp = None
        latent.__dict__.pop("_factor_weights", None)
        self.data, self.latent = CompiledFactor(data), CompiledFactor(latent)
        #: the elements of the complete rows (every coordinate observed, hence alive: no ``keep``
        #: needed); the latent factor reads every element of the other rows
        rows = of.rows
        self.complete = np.ones(clamp.observed.shape)
        self.complete[rows] = 0.0
        self.plate = node.plates[0]
        self.rows = rows if keep is None else rows[keep.reshape(keep.shape[0], -1).any(axis=1)[rows]]
        #: the positions of ``rows`` among the latent rows (None: all of them), to read a ``Filled``
        self._among = None if self.rows.size == rows.size else np.searchsorted(rows, self.rows)
        self._of = of
        if keep is not None and not keep[self.rows].all():
            self.latent.live = keep  # barren elements inside a live row (a row over several plates)
        self.node = node
        on_plate = [leaf.node for leaf in self.latent._leaves.values()
                    if getattr(leaf, "node", None) is not None and self.plate in leaf.node.plates]
        self._readers = {n.name: n for n in on_plate}
        self._held: dict = {}  # node name -> (moments object, its rows)
        self._weighted: tuple = (None, None)  # (w, complete * w) of the last weight

    def context(self, state) -> Context:
        """The latent rows' Context at ``state``: the moments of the nodes on the rows' plate
        taken at the rows (once per moments object: the same override objects while q holds)."""
        probe = Context(state=state)
        overrides = {}
        for name, n in self._readers.items():
            full = moments_of(self.node if n is self.latent.child else n, probe)
            held = self._held.get(name)
            if held is None or held[0] is not full:
                held = self._held[name] = (full, self._at_rows(full, n.plates.index(self.plate)))
            overrides[name] = held[1]
        return Context(subset={self.plate.name: self.rows}, overrides=overrides, state=state, stable=True)

    def _at_rows(self, full: tuple, axis: int) -> tuple:
        """``full`` at ``rows`` along ``axis``, from the latent rows' values of a ``Filled``."""
        parts = held.pieces(full, self._of)
        if parts is not None:
            return parts[1] if self._among is None else tuple(np.take(m, self._among, axis=0) for m in parts[1])
        return tuple(take_rows(m, self.rows, axis) for m in full)

    def weight(self, w: np.ndarray | None) -> np.ndarray:
        """The data factor's weight: the complete elements times the factor's own weight (the
        same array while ``w`` is: the factor's memos compare weights by identity)."""
        if w is None:
            return self.complete
        if self._weighted[0] is not w:
            self._weighted = (w, self.complete * w)
        return self._weighted[1]

    def join(self, node, a: tuple | None, b: tuple | None) -> tuple | None:
        """a (over every element) + b (over the latent rows where ``node`` has their plate)."""
        if a is None or b is None:
            return a if b is None else b
        axis = node.plates.index(self.plate) if self.plate in node.plates else None
        out = []
        for x, y in zip(a, b):
            if axis is None:
                out.append(x + y)
                continue
            x = np.array(np.broadcast_to(x, node.plate_shape + np.shape(y)[len(node.plates):]), order="K")
            x[(slice(None),) * axis + (self.rows,)] += y
            out.append(x)
        return tuple(out)
