"""A partially observed node whose complete rows cost what data cost.

With a mask per coordinate, a row whose coordinates are all observed has a constant pinned q
(``Family.pin`` with every coordinate observed reads only the data) and moments at the data's
statistics (``Clamp``). ``LatentRows`` keeps the other rows: a batch update forms q's natural
parameters, the pin, the moments, the validity check and the entropy there only, and the
complete rows hold the constant (``Engine.target``, ``moments``, ``check_domain``, ``entropy``).

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

from .data import take_rows
from .leaves import Context, moments_of


class LatentRows:
    """The rows of a partially observed node with a masked coordinate (``rows``, along its
    outermost plate): q's natural parameters are formed there, the complete rows hold
    ``base``, the pinned q that every coordinate observed gives (Winn & Bishop eq. (5) summed
    and then pinned, ``Family.pin``: constant in the messages)."""

    def __init__(self, clamp, rows: np.ndarray):
        self.clamp, self.rows = clamp, rows
        self._base = None
        # per statistic, the flat positions at the rows that the data fix, and the data there
        self._pinned = []
        for s, f in zip(clamp.stats, clamp._fixed(lambda a: a)):
            at = np.zeros(s.shape[:1], bool)
            at[rows] = True
            fixed = np.broadcast_to(clamp._mask(f, s), s.shape) & clamp._mask(at, s)
            where = np.flatnonzero(fixed)
            self._pinned.append((where, s.reshape(-1)[where]))
        self._last: tuple = (None, None)  # (q over every row, q at the rows) of the last spread
        self._split: tuple = (None, None)

    def base(self) -> tuple:
        """q's natural parameters at the complete rows (read-only; the other rows are
        overwritten)."""
        if self._base is None:
            c = self.clamp
            self._base = c.family.pin(tuple(np.zeros(s) for s in c.shapes), c.coordinates, c.data)
            for a in self._base:
                a.flags.writeable = False
        return self._base

    def spread(self, natural: tuple) -> tuple:
        """Natural parameters over every row: ``natural`` (at the rows) there, ``base`` elsewhere."""
        out = []
        for b, a in zip(self.base(), natural):
            b = b.copy()
            b[self.rows] = a
            out.append(b)
        out = tuple(out)
        self._last = (out, tuple(natural))
        return out

    def at(self, natural: tuple) -> tuple:
        """``natural`` at the rows (the very arrays :meth:`spread` was given, whose factorization
        the validity check, the moments and the entropy share)."""
        full, sub = self._last
        if full is not None and len(full) == len(natural) and all(a is b for a, b in zip(full, natural)):
            return sub
        return tuple(np.take(a, self.rows, axis=0) for a in natural)

    def moments(self, natural: tuple) -> tuple:
        """The moments the factors read (``Clamp.apply``'s): q's at the rows, their pinned
        entries and the complete rows at the data's statistics."""
        c = self.clamp
        out = []
        for s, m, (where, data) in zip(c.stats, c.family.moments(self.at(natural)), self._pinned):
            o = s.copy()
            o[self.rows] = m
            o.reshape(-1)[where] = data
            out.append(o)
        out = tuple(out)
        c._cache = (out, out)
        return out

    def split(self, node, keep: np.ndarray | None):
        """The node's factor as data at the complete rows plus latent at the rows (``Split``)."""
        if self._split[0] is not node:
            self._split = (node, Split(node, keep, self.rows))
        return self._split[1]


class Split:
    """E[log p(x | pa)] = sum_n [n complete] E[log p(x_n | pa)]_data + sum_{n latent} E[log p(x_n | pa)]_q:
    the node's factor as two compiled copies (module docstring)."""

    def __init__(self, node, keep: np.ndarray | None, rows: np.ndarray):
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
        self.complete = np.ones(clamp.observed.shape)
        self.complete[rows] = 0.0
        self.plate = node.plates[0]
        self.rows = rows if keep is None else rows[keep.reshape(keep.shape[0], -1).any(axis=1)[rows]]
        if keep is not None and not keep[self.rows].all():
            self.latent.keep = keep  # barren elements inside a live row (a row over several plates)
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
                axis = n.plates.index(self.plate)
                held = self._held[name] = (full, tuple(take_rows(m, self.rows, axis) for m in full))
            overrides[name] = held[1]
        return Context(subset={self.plate.name: self.rows}, overrides=overrides, state=state, stable=True)

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
