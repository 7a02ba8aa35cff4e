"""A matrix given by its rows, as a parent: the dynamics and input maps of a Gaussian chain
(``graph/gaussian_chain.py``) and the random matrix C of ``C @ x`` (``graph/linear.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GraphError, ShapeError
from .expressions import Expression
from .node import raise_hyper


class Matrix(Expression):
    """A D x M matrix given by rows: a Gaussian expression (a node, or a node gated by a
    regime, ``A[s]``) whose innermost plate holds the D rows (independent under q), or a constant
    (D x M, or with leading time and chain axes: time-varying dynamics). Its moments are E[A]
    (event (D, M)) and E[a_i a_i^T] (event (D, M, M))."""

    def __init__(self, value: Any, owner: str, role: str, shape: tuple[int, int], plates: tuple, family):
        where = f"node '{owner}': {role}"
        self.constant = None
        self.name = f"{owner}.{role}"
        self.family, self.event_shape = family, tuple(shape)
        if isinstance(value, Expression):
            if value.family is not family or not value.plates:
                raise GraphError(f"{where} must be a constant matrix or a Gaussian node over a plate of its "
                                 f"{shape[0]} rows, got {value!r}")
            rows = value.plates[-1]
            if rows.size != shape[0] or value.event_shape != shape[1:] or rows in plates:
                raise ShapeError(f"{where}: '{value.name}' must have an innermost plate of {shape[0]} rows (not a "
                                 f"plate of the chain) and event ({shape[1]},), it has plates "
                                 f"{[p.name for p in value.plates]} and event {value.event_shape}")
            self.node, self.dim_plate = value, rows
            self.plates = value.plates[:-1]
            self.name = f"rows({value.name})"
            return
        self.node = self.dim_plate = None
        arr = _numbers(owner, role, value)
        if arr.ndim < 2 or arr.shape[-2:] != shape or arr.ndim - 2 > len(plates) or any(
                n not in (1, p.size) for n, p in zip(arr.shape[:-2], plates[len(plates) - arr.ndim + 2:])):
            raise ShapeError(f"{where} has shape {arr.shape}; expected {shape}, or with leading axes over the "
                             f"plates {[p.name for p in plates]} (innermost last), e.g. (T,) + {shape}")
        if not np.all(np.isfinite(arr)):
            raise_hyper(owner, f"{role} has non-finite entries")
        self.constant = arr
        self.plates = plates[len(plates) - arr.ndim + 2:]

    def inputs(self):
        return [] if self.node is None else [self.node]


def _numbers(owner: str, role: str, value) -> np.ndarray:
    try:
        return np.asarray(value, float)
    except (TypeError, ValueError):
        raise_hyper(owner, f"{role} must be numbers, got {value!r}")
