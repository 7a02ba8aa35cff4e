"""Natural-parameter sums that stay sparse on their way through a reduction.

A minibatch's message to a node with a large last axis (LDA's beta: K x V) is zero outside the
words its tokens hold, so a partition sends only those columns (``Columns``); sums of Columns
are Columns over the union of their words, with the same values a dense sum gives there (x + 0
is x), and the total is made dense once, at the end.
"""
from __future__ import annotations

import numpy as np

#: arrays smaller than this stay dense; a sum is sent sparse when at most this share of its
#: columns is non-zero
SMALLEST, DENSEST = 4096, 0.5


class Columns:
    """An array of ``shape`` that is zero but at ``cols`` of its last axis, where it is ``values``."""

    __array_ufunc__ = None  # ndarray + Columns calls Columns.__radd__

    def __init__(self, shape: tuple, cols: np.ndarray, values: np.ndarray):
        self.shape, self.cols, self.values = tuple(shape), cols, values

    @property
    def nbytes(self) -> int:
        return int(self.cols.nbytes + self.values.nbytes)

    def dense(self) -> np.ndarray:
        out = np.zeros(self.shape, dtype=self.values.dtype)
        out[..., self.cols] = self.values
        return out

    def __add__(self, other):
        if not isinstance(other, Columns):
            return self.dense() + other
        cols = np.union1d(self.cols, other.cols)
        values = np.zeros(self.shape[:-1] + (cols.size,), dtype=np.result_type(self.values, other.values))
        mine, theirs = np.searchsorted(cols, self.cols), np.searchsorted(cols, other.cols)
        values[..., mine] = self.values
        both = np.isin(other.cols, self.cols)
        values[..., theirs[~both]] = other.values[..., ~both]
        values[..., theirs[both]] += other.values[..., both]
        return Columns(self.shape, cols, values)

    def __radd__(self, other):
        return other + self.dense()


def sparse(value):
    """``value`` (a tuple of arrays, or one) with each large array whose last axis is mostly zero
    as Columns."""
    if isinstance(value, tuple):
        return tuple(sparse(v) for v in value)
    if not isinstance(value, np.ndarray) or value.ndim < 1 or value.size < SMALLEST:
        return value
    cols = np.flatnonzero(np.any(value != 0, axis=tuple(range(value.ndim - 1))))
    if cols.size > DENSEST * value.shape[-1]:
        return value
    return Columns(value.shape, cols, np.ascontiguousarray(value[..., cols]))


def dense(value):
    """``value`` with every Columns made a dense array."""
    if isinstance(value, tuple):
        return tuple(dense(v) for v in value)
    if isinstance(value, dict):
        return {k: dense(v) for k, v in value.items()}
    return value.dense() if isinstance(value, Columns) else value
