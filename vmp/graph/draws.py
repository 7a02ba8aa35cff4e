"""Joint draws from q, pushed forward through the glue (ancestral sampling).

Every array here has a leading axis of ``n`` draws, then one axis per plate of the expression
(in its ``plates`` order), then the value's event axes (none for a Categorical's integer value).
A node is drawn once per call (``memo``), so ``mu[z]`` and ``Lambda[z]`` read the same z.
"""
from __future__ import annotations

import numpy as np

from ..errors import GraphError
from .expressions import (Constant, Diagonal, Dot, Expression, Gate, Gather, PlatedConstant, Product, Rows, Scaled,
                          Sticks, Sum)
from .gaussian_chain import Steps
from .linear import Linear, RandomMap
from .matrix import Matrix
from .node import Node


def align(values: np.ndarray, source: tuple, target: tuple) -> np.ndarray:
    """``values`` laid out over the plates ``source`` re-laid over ``target`` (plates matched by
    name; a target plate absent from ``source`` gets a broadcastable axis of length 1)."""
    names = [p.name for p in source]
    wanted = [q.name for q in target]
    extra = [n for n in names if n not in wanted]
    if extra:
        raise GraphError(f"plates {extra} cannot be aligned to {wanted}")
    order = [names.index(n) for n in wanted if n in names]
    event = list(range(1 + len(source), values.ndim))
    moved = np.transpose(values, [0] + [1 + i for i in order] + event)
    shape = (values.shape[0],) + tuple(q.size if q.name in names else 1 for q in target) + moved.shape[1 + len(order):]
    return moved.reshape(shape)


def value_ndim(expr: Expression) -> int:
    """Event axes of a value of ``expr`` (a Categorical's value is one integer)."""
    if isinstance(expr, Node):
        return len(expr._data_event_shape())
    if isinstance(expr, Dot):
        return 0
    if isinstance(expr, Steps):
        return len(expr.event_shape)
    if isinstance(expr, (Gate, Gather, Scaled, Product)):
        return value_ndim(expr.node)
    return len(expr.event_shape)


def plates_of(expr: Expression, owner: tuple) -> tuple:
    """The plates a draw of ``expr`` is laid over: its own, or, for a role constant (broadcast at
    declaration to the plates ``owner`` of its node), its node's."""
    return owner if isinstance(expr, Constant) and not isinstance(expr, PlatedConstant) else expr.plates


def draw(expr: Expression, n: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
    """``n`` joint draws of ``expr`` under q, shaped (n,) + ``plates_of(expr)`` + its value's event."""
    if isinstance(expr, Node):
        if expr.name not in memo:
            memo[expr.name] = expr._draw(n, rng, memo)
        return memo[expr.name]
    if isinstance(expr, PlatedConstant):
        return expr.value[None]
    if isinstance(expr, Constant):
        return np.asarray(expr.value)[None]
    if isinstance(expr, Gather):
        return np.take(draw(expr.node, n, rng, memo), expr.index, axis=1)
    if isinstance(expr, Gate):
        return _gate(expr, n, rng, memo)
    if isinstance(expr, Scaled):
        return expr.scale * draw(expr.node, n, rng, memo)
    if isinstance(expr, Product):
        return _product(expr, n, rng, memo)
    if isinstance(expr, (Diagonal, Rows)):  # the node's innermost plate read as an event axis
        return draw(expr.node, n, rng, memo)
    if isinstance(expr, Sticks):  # the stick plate becomes the last (event) axis
        return align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates + (expr.dim_plate,))
    if isinstance(expr, Dot):
        return _dot(expr, n, rng, memo)
    if isinstance(expr, Sum):
        return sum(align(draw(t, n, rng, memo), t.plates, expr.plates) for t in expr.terms)
    if isinstance(expr, (Steps, Linear, Matrix, RandomMap)):
        return _linear(expr, n, rng, memo)
    raise GraphError(f"cannot draw '{expr.name}' ({type(expr).__name__})")


def _gate(expr: Gate, n: int, rng, memo) -> np.ndarray:
    """``P[z]``: component z of P along the gated plate, for each element of the gate's plates."""
    values = align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates + (expr.gated_plate,))
    z = align(draw(expr.selector, n, rng, memo), expr.selector.plates, expr.plates)
    event = values.ndim - 2 - len(expr.plates)
    full = (n,) + tuple(p.size for p in expr.plates)
    index = np.broadcast_to(z, full).astype(np.intp).reshape(full + (1,) * (1 + event))
    values = np.broadcast_to(values, full + values.shape[len(full):])
    return np.squeeze(np.take_along_axis(values, index, axis=len(full)), axis=len(full))


def _dot(expr: Dot, n: int, rng, memo) -> np.ndarray:
    """u . v over the event axis (Gaussian) or over the shared innermost plate (Normal)."""
    if expr.shared is None:
        u = align(draw(expr.u, n, rng, memo), expr.u.plates, expr.plates)
        v = align(draw(expr.v, n, rng, memo), expr.v.plates, expr.plates)
        return np.einsum("...d,...d->...", u, v)
    target = expr.plates + (expr.shared,)
    u = align(draw(expr.u, n, rng, memo), expr.u.plates, target)
    v = align(draw(expr.v, n, rng, memo), expr.v.plates, target)
    return (u * v).sum(-1)


def _linear(expr, n: int, rng, memo) -> np.ndarray:
    """A chain's steps (its paths), W x for a constant W, a matrix by rows (rows as its first
    event axis), C x for a matrix C by rows."""
    if isinstance(expr, Steps):
        return draw(expr.node, n, rng, memo)
    if isinstance(expr, Matrix):
        if expr.node is None:
            return expr.constant[None]
        return align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates + (expr.dim_plate,))
    if isinstance(expr, RandomMap):
        rows = align(draw(expr.rows, n, rng, memo), expr.rows.plates, expr.plates)
        return np.einsum("...ij,...j->...i", rows, align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates))
    x = align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates)
    w = align(np.asarray(expr.weight)[None], expr.weight_plates, expr.plates)
    return np.einsum("...ij,...j->...i", w, x) if expr.matrix else w * x


def _product(expr: Product, n: int, rng, memo) -> np.ndarray:
    """c P: the scale's draw times the node's, over the product's plates and P's event axes."""
    values = align(draw(expr.node, n, rng, memo), expr.node.plates, expr.plates)
    c = align(draw(expr.scale, n, rng, memo), expr.scale.plates, expr.plates)
    return c.reshape(c.shape + (1,) * (values.ndim - c.ndim)) * values


def full(natural: tuple, node, n: int) -> tuple:
    """Each component broadcast to (n,) + plates + its event axes."""
    lead = (n,) + node.plate_shape
    out = []
    for a, k in zip(natural, node.family.event_ndims):
        a = np.asarray(a, float)
        event = a.shape[a.ndim - k:] if k else ()
        out.append(np.broadcast_to(a, lead + event))
    return tuple(out)
