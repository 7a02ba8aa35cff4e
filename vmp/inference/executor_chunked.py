"""Batch VMP over data streamed in blocks of rows: the sums over the data plate, one block at a time.

A batch message to a global node is a sum over the data plate (Winn & Bishop eq. (5)), and so are
a local's update (row by row) and the bound, so ``Chunked`` evaluates each of them on blocks of
``size`` rows in turn (:mod:`~vmp.inference.partition`): a block's Context restricts the data plate
to its rows and carries the locals' moments of those rows as overrides; an observed node then reads
only those rows of its data (a memmap, an HDF5 dataset or a zarr array stays out of core), and
the natural-parameter sums and the bound are added block by block. The locals' q (e.g. z: N x K)
is held here in full; no temporary of the data's size is formed. The default executor of a model
whose observed data are out of core (:func:`~vmp.inference.engine.default_executor`).

    model.fit(executor=vmp.Chunked(size=100_000))
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import VMPError
from .executor import Executor, add
from .partition import data_plate, local_names, rows_bound, rows_context, rows_of


class Chunked(Executor):
    """The sums over the data plate in blocks of ``size`` rows, in this process, in row order.

    ``plate``: the data plate to split (default: the largest plate of an observed node that can
    be split, :func:`~vmp.inference.partition.apart`).
    Evaluations already restricted to rows (a minibatch, PerNode's draw) run as in ``Serial``.
    """

    rows_here = True

    def __init__(self, size: int = 1 << 16, plate: str | None = None):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise VMPError(f"Chunked: size= takes a positive number of rows, got {size!r}")
        self.size = int(size)
        self.plate_name = plate
        self._engine = None

    def __repr__(self) -> str:
        return f"Chunked(size={self.size}, plate={self.plate_name!r})"

    def _bind(self, engine) -> None:
        if self._engine is not engine:
            self.plate = data_plate(engine, self.plate_name, "Chunked", self.cuts_data)
            self.local_nodes = local_names(engine, self.plate)
            self._engine = engine

    def blocks(self) -> list[tuple[int, int]]:
        n = self.plate.size
        return [(lo, min(lo + self.size, n)) for lo in range(0, n, self.size)]

    def _streams(self, engine, state, factors, skip: str | None = None) -> bool:
        """Whether ``factors`` all sit on the data plate and ``state`` has every local they read."""
        return bool(factors) and all(self.plate in f.child.plates for f in factors) and all(
            k in state.moments for k in self.local_nodes if k != skip)

    def _rows(self, engine, state, lo: int, hi: int, skip: str | None = None, which: str = "moments") -> dict:
        return {k: rows_of(getattr(state, which)[k], engine.nodes[k].plates.index(self.plate), lo, hi)
                for k in self.local_nodes if k != skip}

    def children(self, engine, state, node, ctx):
        """A global's children sum over all the data, block by block (an evaluation already
        restricted to rows runs in one piece)."""
        if not ctx.whole:
            return engine.children(state, node, ctx)
        self._bind(engine)
        if self.plate in node.plates or not self._streams(engine, state, engine.below[node.name]):
            return engine.children(state, node, ctx)
        total = None
        for lo, hi in self.blocks():
            total = add(total, engine.children(state, node, self._block(engine, state, ctx, lo, hi)))
        node.family.declare_parts(total, [self._parts(engine, state, node, ctx, lo, hi) for lo, hi in self.blocks()])
        return total

    def _block(self, engine, state, ctx, lo: int, hi: int):
        block = rows_context(self.plate.name, lo, hi, self._rows(engine, state, lo, hi))
        return replace(block, weights=ctx.weights, plate=ctx.plate, index=ctx.index)

    def _parts(self, engine, state, node, ctx, lo: int, hi: int):
        """What block lo..hi's children sum says of itself (``Family.parts``), formed again when
        asked: the blocks' sums are not kept (their rows are the data's)."""
        def again():
            part = node.family.parts(engine.children(state, node, self._block(engine, state, ctx, lo, hi)))
            return None if part is None else part()
        return again

    def local(self, engine, state, node, ctx):
        """lambda^temp of a local on the data plate (Winn & Bishop eq. (5) per row), block by
        block: each block's own factor and children's factors restricted to its rows."""
        if not ctx.whole or ctx.weights is not None or ctx.plate is not None:
            return None
        self._bind(engine)
        if node.name not in self.local_nodes or not self._streams(engine, state, engine.touching[node.name], node.name):
            return None
        axis = node.plates.index(self.plate)
        out = None
        for lo, hi in self.blocks():
            part = engine.target(state, node, ctx=rows_context(self.plate.name, lo, hi,
                                                                self._rows(engine, state, lo, hi, node.name)))
            if out is None:
                out = tuple(np.empty(a.shape[:axis] + (self.plate.size,) + a.shape[axis + 1:]) for a in part)
            for o, a in zip(out, part):
                o[(slice(None),) * axis + (slice(lo, hi),)] = a
        return out

    def bound(self, engine, state, weights=None) -> tuple[set, float]:
        """The factors on the data plate and the locals' entropies, summed block by block."""
        if weights is not None:
            return set(), 0.0
        self._bind(engine)
        on_plate = [f for f in engine.factors.values() if self.plate in f.child.plates]
        if not self._streams(engine, state, on_plate):
            return set(), 0.0
        total = 0.0
        for lo, hi in self.blocks():
            ctx = rows_context(self.plate.name, lo, hi, self._rows(engine, state, lo, hi), state)
            total += rows_bound(engine, self.plate, ctx, self._rows(engine, state, lo, hi, which="natural"))
        return {f.child.name for f in on_plate} | set(self.local_nodes), total
