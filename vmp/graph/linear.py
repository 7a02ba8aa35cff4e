"""Constant linear maps of Gaussian and Normal expressions: ``0.9 * x``, ``a * x``, ``A @ x``.

For a constant W and an expression x with moments (E[x], E[x x^T]) (or (E[x], E[x^2]) for a
Normal), m = W x has

    E[m] = W E[x],   E[m m^T] = W E[x x^T] W^T,

so a factor reading m stays linear in x's moments (Winn & Bishop section 4 on deterministic
nodes). Three shapes of W: a number c (c x, of any Gaussian or Normal expression), an array
over the open plates and x's event (elementwise, a x: E[m m^T]_ij = a_i a_j E[x x^T]_ij), and a
matrix M x D on a Gaussian x of dimension D (``A @ x``, ``vmp.dot(A, x)``: a Gaussian of dimension
M, e.g. the observation map y_t = C x_t of a state-space model).

A random matrix C, a Gaussian node over a plate of its P rows c_i (independent under q), maps x
to m = C x (``RandomMap``) with

    E[m]_i = E[c_i]^T E[x],   E[m m^T]_ii = tr(E[c_i c_i^T] E[x x^T]),
    E[m m^T]_ik = E[c_i]^T E[x x^T] E[c_k]  (i != k),

the output map of the variational Bayesian LDS (Beal 2003 ch. 5); under a full precision
the off-diagonal moments couple the rows, which are then updated one at a time.
"""
from __future__ import annotations

import numpy as np

from .. import families as fam
from ..errors import GraphError, ShapeError
from . import context
from .expressions import MAPS, Expression, plate_union
from .matrix import Matrix


class Linear(Expression):
    """m = W x for a constant W (``weight``, laid over ``weight_plates``) and a Gaussian or
    Normal expression x; ``matrix`` when W is M x D acting on x's event axis, else elementwise."""

    def __init__(self, node: Expression, weight: np.ndarray, weight_plates: tuple, matrix: bool, label: str):
        self.node, self.weight, self.weight_plates, self.matrix = node, weight, weight_plates, matrix
        self.family = node.family
        self.event_shape = weight.shape[-2:-1] if matrix else node.event_shape
        self.plates = plate_union(node.plates, weight_plates)
        self.name = f"{label}*{node.name}" if not matrix else f"{label}@{node.name}"

    def inputs(self):
        return [self.node]


def _location(expr: Expression, written: str) -> Expression:
    expr = expr.view(fam.Gaussian)
    if not expr.family.location:
        raise GraphError(f"{written}: only Gaussian and Normal expressions (nodes, sums, dots, gates, gathers) "
                         f"can be multiplied by a constant array; Gamma and Wishart nodes by one positive number")
    return expr


def scaled(value, expr: Expression) -> Linear:
    """``c * x`` (a number) or ``a * x`` (an array over the open plates and x's event axis, laid
    out over the innermost plates it covers)."""
    written = f"{_describe(value)} * '{expr.name}'"
    expr = _location(expr, written)
    try:
        arr = np.asarray(value, float)
    except (TypeError, ValueError):
        raise GraphError(f"{written}: the constant must be numbers") from None
    if not np.all(np.isfinite(arr)):
        raise GraphError(f"{written}: the constant must be finite")
    event = expr.event_shape
    plates = context.active_plates() if arr.ndim > len(event) else ()
    lead = arr.ndim - len(event)
    if lead > len(plates):
        raise ShapeError(f"{written}: the constant has shape {arr.shape}, more axes than the open plates "
                         f"{[p.name for p in plates]} and the event {event}")
    own = plates[len(plates) - lead:] if lead > 0 else ()
    target = tuple(p.size for p in own) + event
    label = f"{float(arr):g}" if arr.ndim == 0 else f"const{list(arr.shape)}"
    try:
        arr = np.broadcast_to(arr, target) if arr.ndim else np.broadcast_to(arr, event)
    except ValueError:
        raise ShapeError(f"{written}: the constant has shape {np.shape(value)}, which does not broadcast to "
                         f"plates {[p.name for p in own]} + event {event} = {target}") from None
    return Linear(expr, np.array(arr), own, False, label)


class RandomMap(Expression):
    """m = C x for C a Gaussian node over a plate of P rows (``Matrix``: E[C]_ij, E[c_i c_i^T]_jl)
    and a Gaussian expression x of dimension D: a Gaussian expression of dimension P."""

    def __init__(self, rows, node: Expression):
        self.rows, self.node = rows, node
        self.family = node.family
        self.event_shape = rows.event_shape[:1]
        self.plates = plate_union(node.plates, rows.plates)
        self.name = f"{rows.node.name}@{node.name}"

    def inputs(self):
        return [self.rows, self.node]


def mapped(matrix, expr: Expression) -> Linear | RandomMap:
    """``A @ x`` for a constant M x D matrix A, or a Gaussian node A over a plate of M rows of
    dimension D, and a Gaussian expression x of dimension D."""
    written = f"{_describe(matrix)} @ '{expr.name}'"
    expr = _location(expr, written)
    if not expr.event_shape:
        raise GraphError(f"{written}: a matrix maps a Gaussian (vector) expression; scale a Normal by a number "
                         f"or an array instead")
    if isinstance(matrix, Expression):
        return _random_map(matrix, expr, written)
    try:
        arr = np.asarray(matrix, float)
    except (TypeError, ValueError):
        raise GraphError(f"{written}: the matrix must be numbers or a Gaussian node over a plate of its rows") \
            from None
    if arr.ndim != 2 or arr.shape[1] != expr.event_shape[0]:
        raise ShapeError(f"{written}: the matrix must be M x {expr.event_shape[0]}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise GraphError(f"{written}: the matrix must be finite")
    return Linear(expr, np.ascontiguousarray(arr), (), True, f"const{list(arr.shape)}")


def _random_map(matrix: Expression, expr: Expression, written: str) -> RandomMap:
    """C @ x for a Gaussian node C over a plate of its rows (not a plate of x nor an open one)."""
    matrix = matrix.view(fam.Gaussian)
    if not matrix.family.location or not matrix.plates or not matrix.event_shape:
        raise GraphError(f"{written}: a random matrix is a Gaussian node over a plate of its rows (each a "
                         f"{expr.event_shape[0]}-vector), got '{matrix.name}' ({matrix.family.name}, plates "
                         f"{[p.name for p in matrix.plates]})")
    rows = matrix.plates[-1]
    if matrix.event_shape != expr.event_shape:
        raise ShapeError(f"{written}: the rows of '{matrix.name}' have dimension {matrix.event_shape[0]}, "
                         f"'{expr.name}' has dimension {expr.event_shape[0]}")
    if rows in expr.plates or rows in context.active_plates():
        raise GraphError(f"{written}: the plate '{rows.name}' of the rows of '{matrix.name}' is open or a plate of "
                         f"'{expr.name}'; C @ x is a vector over the rows (declare it outside that plate; inside "
                         f"it, vmp.dot(C, x) is one Normal per row)")
    shape = (rows.size,) + expr.event_shape
    return RandomMap(Matrix(matrix, written, "matrix", shape, expr.plates, fam.Gaussian), expr)


def is_map(value, expr) -> bool:
    """Is ``vmp.dot(value, expr)`` a linear map: a constant matrix M x D next to a Gaussian
    expression of dimension D that cannot be read as a design matrix over the open plates
    (whose rows would be the plates' elements; ``A @ x`` is always the map)."""
    if isinstance(value, Expression) or not isinstance(expr, Expression):
        return False
    expr = expr.view(fam.Gaussian)
    arr = np.asarray(value)
    if arr.ndim != 2 or not expr.event_shape or arr.shape[1] != expr.event_shape[0]:
        return False
    try:
        np.broadcast_to(arr, tuple(p.size for p in context.active_plates()) + expr.event_shape)
    except ValueError:
        return True
    return False


def _describe(value) -> str:
    if isinstance(value, Expression):
        return f"'{value.name}'"
    return f"an array of shape {np.shape(value)}" if np.ndim(value) else repr(value)


MAPS.update(scaled=scaled, mapped=mapped, is_map=is_map)
