"""Expressions a parent role can take: random nodes, constants, and deterministic glue.

Deterministic glue (Winn & Bishop section 4.2 on gates; Paquet section 3 on the bilinear model):
``P[z]`` gates a plated node by a Categorical node (mixtures), ``P[rows]`` gathers plate
elements by an integer index (sparse data), ``dot(u, v)`` is an inner product of Gaussians,
``c * P`` scales a Gamma or Wishart node by a positive constant.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import families as fam
from ..errors import GraphError, ShapeError
from . import context


class Expression:
    """Anything that supplies moments of a family to a factor."""

    family: type[fam.Family]
    plates: tuple
    event_shape: tuple[int, ...]
    name: str

    def inputs(self) -> list["Expression"]:
        return []

    def __getitem__(self, key):
        raise GraphError(f"'{self.name}' cannot be indexed; only random nodes can be gated or gathered")

    def __rmul__(self, other):
        raise GraphError(f"'{self.name}' cannot be scaled; only Gamma and Wishart nodes can")

    __mul__ = __rmul__

    def __truediv__(self, other):
        return self.__rmul__(other)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} plates={[p.name for p in self.plates]} event={self.event_shape}>"


def statistics(family: type[fam.Family], value: np.ndarray) -> tuple[np.ndarray, ...]:
    if family is fam.Dirichlet:
        return (np.log(value),)
    return family.statistics(value)


class Constant(Expression):
    """A fixed value used as a parent; its moments are the sufficient statistics of the value."""

    def __init__(self, family: type[fam.Family], value: np.ndarray, label: str):
        self.family = family
        self.value = np.asarray(value, float)
        self.plates = ()
        self.name = label
        n = family.event_ndims[0]
        self.event_shape = self.value.shape[self.value.ndim - n:] if n else ()
        with np.errstate(divide="ignore"):
            self.moments = statistics(family, self.value)


def plate_union(*groups) -> tuple:
    out: list = []
    for g in groups:
        for p in g:
            if p not in out:
                if any(q.name == p.name for q in out):
                    raise GraphError(f"plate '{p.name}' appears with two sizes")
                out.append(p)
    return tuple(out)


class Gate(Expression):
    """``P[z]``: component z_n of the plated node P (a mixture). P's innermost plate is gated."""

    def __init__(self, node, selector):
        from .node import Node

        if not isinstance(selector, Node) or selector.family is not fam.Categorical:
            raise GraphError(f"'{node.name}[...]': a gate's selector must be a Categorical node")
        if not node.plates:
            raise GraphError(f"'{node.name}[{selector.name}]': '{node.name}' has no plate to gate over")
        self.node, self.selector = node, selector
        self.gated_plate = node.plates[-1]
        k = selector.event_shape[0]
        if self.gated_plate.size != k:
            raise ShapeError(
                f"'{node.name}[{selector.name}]': '{selector.name}' has {k} categories but the innermost "
                f"plate '{self.gated_plate.name}' of '{node.name}' has size {self.gated_plate.size}"
            )
        self.family = node.family
        self.event_shape = node.event_shape
        self.plates = plate_union(selector.plates, node.plates[:-1])
        self.name = f"{node.name}[{selector.name}]"

    def inputs(self):
        return [self.node, self.selector]


class Gather(Expression):
    """``P[rows]``: element rows[i] of P's outermost plate for each i of the current plate."""

    def __init__(self, node, index):
        index = np.asarray(index)
        if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
            raise ShapeError(f"'{node.name}[...]': a gather index must be a 1-D integer array")
        if not node.plates:
            raise GraphError(f"'{node.name}[...]': '{node.name}' has no plate to gather from")
        source = node.plates[0]
        if index.size and (index.min() < 0 or index.max() >= source.size):
            raise ShapeError(
                f"'{node.name}[...]': index values must lie in [0, {source.size}) (plate '{source.name}')"
            )
        plate = next((p for p in reversed(context.active_plates()) if p.size == index.size), None)
        if plate is None:
            raise GraphError(
                f"'{node.name}[...]': declare the gather inside a plate of size {index.size} "
                f"(the length of the index)"
            )
        self.node, self.index, self.plate = node, index, plate
        self.family = node.family
        self.event_shape = node.event_shape
        self.plates = (plate,) + tuple(node.plates[1:])
        self.name = f"{node.name}[{plate.name}]"
        self.scatter = sp.csr_matrix(
            (np.ones(index.size), (index, np.arange(index.size))), shape=(source.size, index.size)
        )

    def inputs(self):
        return [self.node]


class Dot(Expression):
    """Inner product of two Gaussians: over the event axis (multivariate), or over a shared
    innermost plate of two Normal nodes (the fully factorized q(u_mk) of Paquet eq. (7))."""

    def __init__(self, u: Expression, v: Expression):
        for e in (u, v):
            if not isinstance(e, Expression) or e.family not in (fam.Gaussian, fam.Normal) or isinstance(e, (Dot, Constant)):
                raise GraphError(f"dot: arguments must be Gaussian or Normal nodes (or gathers of them), got {e!r}")
        if u.family is not v.family:
            raise GraphError(f"dot({u.name}, {v.name}): both must be Gaussian or both Normal")
        self.u, self.v = u, v
        self.family = fam.Normal
        self.event_shape = ()
        self.name = f"dot({u.name}, {v.name})"
        if u.family is fam.Gaussian:
            if u.event_shape != v.event_shape:
                raise ShapeError(f"{self.name}: dimensions differ, {u.event_shape} and {v.event_shape}")
            self.shared = None
            self.plates = plate_union(u.plates, v.plates)
        else:
            if not u.plates or not v.plates or u.plates[-1] != v.plates[-1]:
                raise ShapeError(f"{self.name}: Normal arguments must share their innermost plate")
            self.shared = u.plates[-1]
            self.plates = tuple(p for p in plate_union(u.plates, v.plates) if p != self.shared)

    def inputs(self):
        return [self.u, self.v]


def dot(u: Expression, v: Expression) -> Dot:
    """Inner product node ``u . v`` usable as the mean of a Normal."""
    return Dot(u, v)


class Scaled(Expression):
    """``c * P`` (or ``P * c``, ``P / c``) for a positive constant c and a Gamma or Wishart node P."""

    def __init__(self, scale: float, node, *, divide: bool = False):
        written = f"'{node.name}' / {_describe(scale)}" if divide else f"{_describe(scale)} * '{node.name}'"
        if node.family not in (fam.Gamma, fam.Wishart):
            raise GraphError(f"{written}: only Gamma and Wishart nodes can be scaled")
        if isinstance(scale, Expression):
            raise GraphError(f"{written}: a product or ratio of two nodes is not conjugate; only a "
                             f"positive constant can scale '{node.name}'")
        if np.ndim(scale) != 0 or isinstance(scale, (bool, np.bool_, str, bytes)):
            raise GraphError(f"{written}: '{node.name}' can only be scaled by one positive number; "
                             f"give per-element values in the node's own parameters instead")
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise GraphError(f"{written}: the scale must be a positive finite number") from None
        if divide:
            scale = 1.0 / scale if scale != 0 else np.inf
        if not np.isfinite(scale) or scale <= 0:
            raise GraphError(f"{written}: the scale must be a positive finite number")
        self.scale, self.node = scale, node
        self.family, self.plates, self.event_shape = node.family, node.plates, node.event_shape
        self.name = f"{self.scale:g}*{node.name}"

    def inputs(self):
        return [self.node]


def _describe(value) -> str:
    """How a scale appears in a message: a number as written, an array by its shape."""
    if isinstance(value, Expression):
        return f"'{value.name}'"
    if np.ndim(value) and hasattr(value, "shape"):
        return f"an array of shape {value.shape}"
    return repr(value)
