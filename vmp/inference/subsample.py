"""What a stochastic step reads: the children each node draws (Paquet Alg. 1) or a minibatch of a
data plate (Paquet Alg. 2, Hoffman et al.'s SVI). Both produce evaluation contexts: subsets of
plates plus the scale N_i / C (or N / |S|) that makes the message sum unbiased (Paquet eq. (6))."""
from __future__ import annotations

import numpy as np

from ..errors import GraphError, OptionError
from ..graph.expressions import Gather
from ..graph.leaves import Context, GatherLeaf


def _groups(index: np.ndarray, size: int):
    """Rows grouped by the element they point to: (order, starts, counts)."""
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index, minlength=size)
    starts = np.cumsum(counts) - counts
    return order, starts, counts


def _ranges(order, starts, counts):
    """Concatenation of order[starts[i]:starts[i] + counts[i]] without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return order[offsets + np.arange(total)]


class _GatherSampler:
    """Children of each element of a gathered node: the rows that point to it."""

    def __init__(self, leaf: GatherLeaf):
        self.plate = leaf.gather.plate.name
        self.order, self.starts, self.counts = _groups(leaf.gather.index, leaf.node.plate_shape[0])

    def draw(self, rng: np.random.Generator, c: int):
        small = self.counts <= c
        rows = [_ranges(self.order, self.starts[small], self.counts[small])]
        scale = [np.ones(rows[0].size)]
        big = np.flatnonzero(~small)
        if big.size:
            n = self.counts[big]
            chosen = np.empty((big.size, c), dtype=np.int64)
            for i in range(c):  # Floyd's algorithm, vectorized over elements
                j = n - c + i
                pick = np.floor(rng.random(big.size) * (j + 1)).astype(np.int64)
                dup = np.any(chosen[:, :i] == pick[:, None], axis=1) if i else np.zeros(big.size, bool)
                chosen[:, i] = np.where(dup, j, pick)
            rows.append(self.order[(self.starts[big][:, None] + chosen).ravel()])
            scale.append(np.repeat(n / c, c))
        rows, scale = np.concatenate(rows), np.concatenate(scale)
        keep = np.argsort(rows, kind="stable")
        return rows[keep], scale[keep]


class _PlateSampler:
    """Children along a plate the node is not in: one draw of C shared by the node's elements."""

    def __init__(self, plate):
        self.plate, self.size = plate.name, plate.size

    def draw(self, rng: np.random.Generator, c: int):
        rows = np.sort(rng.choice(self.size, size=c, replace=False))
        return rows, np.full(c, self.size / c)


class PerNode:
    """Paquet Alg. 1: every hidden node, per element of its plates, draws ``children`` of its
    children without replacement and scales their messages by N_i / C (eq. (6)); an element
    with fewer children uses them all."""

    def __init__(self, children: int):
        if int(children) != children or children < 1:
            raise OptionError(f"PerNode(children=...) needs a positive integer, got {children!r}")
        self.children = int(children)
        self._samplers: dict = {}

    def prepare(self, engine) -> None:
        for node in engine.hidden:
            for f in engine.touching[node.name]:
                if f.child is node:
                    continue
                leaf = next(l for l in f.targets if l.node is node)
                if isinstance(leaf, GatherLeaf):
                    sampler = _GatherSampler(leaf)
                else:
                    outside = [p for p in f.child.plates if p not in leaf.plates]
                    sampler = _PlateSampler(max(outside, key=lambda p: p.size)) if outside else None
                self._samplers[(node.name, f.child.name)] = sampler

    def contexts(self, engine, node, rng: np.random.Generator) -> dict:
        """Per child factor of ``node``: the Context of the children it drew (None: all)."""
        out = {}
        for f in engine.touching[node.name]:
            sampler = None if f.child is node else self._samplers[(node.name, f.child.name)]
            if sampler is None or (isinstance(sampler, _PlateSampler) and sampler.size <= self.children):
                out[f.child.name] = None
                continue
            rows, scale = sampler.draw(rng, self.children)
            plate_axis = [p.name for p in f.child.plates].index(sampler.plate)
            shape = [1] * len(f.child.plates)
            shape[plate_axis] = -1
            out[f.child.name] = Context(subset={sampler.plate: rows}, scale=scale.reshape(shape))
        return out


class Minibatch:
    """Paquet Alg. 2 / Hoffman et al.'s SVI: draw ``size`` elements of the data ``plate``.

    Plates reached from it through gathers (the tokens of the drawn documents) are restricted
    too. Local nodes (on those plates) get exact coordinate updates, iterated to ``local_tol``
    (at most ``local_iterations``); global nodes then step with scale N / |S|. ``holdout`` keeps
    a fraction of the plate out of training for held-out evaluation.
    """

    def __init__(self, plate: str, size: int, *, local_iterations: int = 50, local_tol: float = 1e-4,
                 holdout: float = 0.0):
        if int(size) != size or size < 1:
            raise OptionError(f"Minibatch(size=...) needs a positive integer, got {size!r}")
        if not 0 <= holdout < 1:
            raise OptionError("Minibatch(holdout=...) must lie in [0, 1)")
        self.plate_name, self.size = plate, int(size)
        self.local_iterations, self.local_tol, self.holdout = local_iterations, local_tol, holdout

    def prepare(self, engine, rng: np.random.Generator) -> None:
        model = engine.model
        if self.plate_name not in model.plates:
            raise GraphError(f"Minibatch: no plate named '{self.plate_name}' (plates: {', '.join(model.plates)})")
        self.plate = model.plates[self.plate_name]
        if self.size > self.plate.size:
            raise ValueError(f"Minibatch: size {self.size} exceeds plate '{self.plate_name}' ({self.plate.size})")
        self.linked = {}
        for node in model.nodes.values():
            for expr in node.parents.values():
                if isinstance(expr, Gather) and expr.node.plates and expr.node.plates[0] == self.plate:
                    self.linked[expr.plate.name] = _groups(expr.index, self.plate.size)
        names = {self.plate_name} | set(self.linked)
        if not any(n.observed and any(p.name in names for p in n.plates) for n in model.nodes.values()):
            raise GraphError(f"Minibatch: plate '{self.plate_name}' holds no observed node; "
                             f"draw minibatches of a data plate")
        self.local = [n for n in engine.hidden if any(p.name in names for p in n.plates)]
        self.globals = [n for n in engine.hidden if n not in self.local]
        for n in self.local:
            if engine.coupled_plate(n) is not None:
                raise GraphError(f"Minibatch: local node '{n.name}' has coupled elements; not supported")
        perm = rng.permutation(self.plate.size)
        n_out = int(round(self.holdout * self.plate.size))
        self.heldout, self.train = np.sort(perm[:n_out]), np.sort(perm[n_out:])
        if self.size > self.train.size:
            raise ValueError(f"Minibatch: size {self.size} exceeds the {self.train.size} training elements")

    def context(self, rows: np.ndarray) -> Context:
        """The subsets for the data-plate elements ``rows`` (sorted) and the plates linked to them."""
        subset = {self.plate_name: rows}
        owner = {self.plate_name: np.arange(rows.size)}
        for name, (order, starts, counts) in self.linked.items():
            elements = _ranges(order, starts[rows], counts[rows])
            keep = np.argsort(elements, kind="stable")
            subset[name] = elements[keep]
            owner[name] = np.repeat(np.arange(rows.size), counts[rows])[keep]
        return Context(subset=subset, owner=owner)

    def draw(self, rng: np.random.Generator) -> Context:
        return self.context(np.sort(rng.choice(self.train, size=self.size, replace=False)))

    @property
    def scale(self) -> float:
        return self.train.size / self.size
