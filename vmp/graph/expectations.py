"""Expectations under q of the value of a parent expression, laid out over the expression's plates.

Three statistics, each a tuple of arrays, pushed through the glue exactly (q is mean-field, so a
gate's selector is independent of the gated node, and the two sides of a ``dot`` or the terms of
a sum are independent):

- ``FirstTwo``: (E[m], E[m m^T]) of a Gaussian mean, (E[m], E[m^2]) of a Normal one;
- ``Inverse``: (E[Lambda^-1],) of a precision (E[1/tau] of a Gamma, diagonal of an ARD precision);
- ``Probabilities``: (E[p],) of a Dirichlet parent.

A gather takes rows, a gate is the mixture sum_k E[z_k] E[f(P_k)] (linear in the component's
statistic), ``c * P`` rescales (by a constant, or by a random c: E[(c P)^-1] = E[1/c] E[P^-1]).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..errors import GraphError
from .draws import align
from .expressions import (Constant, Diagonal, Dot, Expression, Gate, Gather, PlatedConstant, Product, Scaled, Sticks,
                          Sum, random_nodes)
from .gaussian_chain import Steps
from .leaves import moments_of
from .linear import Linear, RandomMap
from .node import Node


def lay(arr: np.ndarray, source: tuple, target: tuple) -> np.ndarray:
    """``align`` without a draw axis, broadcast to the full sizes of ``target``."""
    out = align(np.asarray(arr)[None], source, target)[0]
    sizes = tuple(p.size for p in target)
    return np.broadcast_to(out, sizes + out.shape[len(sizes):])


class Statistic(ABC):
    @abstractmethod
    def node(self, node) -> tuple:
        """The statistic of a hidden node's q (over its plates)."""

    @abstractmethod
    def point(self, value: np.ndarray, family, event_shape: tuple = ()) -> tuple:
        """The statistic of a known value (a constant or data) with the given event shape."""

    def scaled(self, stats: tuple, c: float) -> tuple:
        """The statistic of ``c * P`` from P's (only the inverse of a precision defines it)."""
        raise GraphError(f"{type(self).__name__}: no exact expectation through a scaled parent c * P")

    def product(self, stats: tuple, scale: tuple) -> tuple:
        """The statistic of ``c * P`` for a random scale c independent of P under q, from P's and
        c's (laid over the same plates)."""
        raise GraphError(f"{type(self).__name__}: no exact expectation through a product c * P of nodes")


class FirstTwo(Statistic):
    def node(self, node):
        return _first_two(moments_of(node), node.family)

    def point(self, value, family, event_shape=()):
        return _first_two(family.statistics(value, event_shape), family)


def _first_two(stats, family) -> tuple:
    """A binary family's one moment E[z] is also E[z^2] (z^2 = z: the factorial mixture's dot)."""
    stats = tuple(np.asarray(m, float) for m in stats)
    return stats * 2 if family.binary and len(stats) == 1 else stats


class Inverse(Statistic):
    def node(self, node):
        node._need_posterior()
        out = node.family.inverse_mean(node.natural)
        if node.clamp is not None:
            known = self.point(node.data, node.family, node.event_shape)[0]
            keep = node.clamp.observed.reshape(node.plate_shape + (1,) * (out.ndim - len(node.plate_shape)))
            out = np.where(keep, known, out)
        return (out,)

    def point(self, value, family, event_shape=()):
        value = np.asarray(value, float)
        return (np.linalg.inv(value) if family.event_ndims[0] == 2 else 1.0 / value,)

    def scaled(self, stats, c):
        return (stats[0] / c,)

    def product(self, stats, scale):
        """E[(c P)^-1] = E[1/c] E[P^-1] (independent under mean field)."""
        c = scale[0]
        return (stats[0] * c.reshape(c.shape + (1,) * (stats[0].ndim - c.ndim)),)


class Probabilities(Statistic):
    def node(self, node):
        return (np.asarray(node.mean, float),)

    def point(self, value, family, event_shape=()):
        return (np.asarray(value, float),)


def expect(expr: Expression, stat: Statistic, owner: tuple) -> tuple:
    """The statistic of ``expr`` over ``owner`` (the plates of the node it is a parent of)."""
    own, plates = _expect(expr, stat, owner)
    return tuple(lay(s, plates, owner) for s in own)


def _expect(expr: Expression, stat: Statistic, owner: tuple) -> tuple[tuple, tuple]:
    if isinstance(expr, Node):
        if expr.observed:
            return stat.point(expr.data, expr.family, expr.event_shape), expr.plates
        return stat.node(expr), expr.plates
    if isinstance(expr, PlatedConstant):
        return stat.point(expr.value, expr.family, expr.event_shape), expr.plates
    if isinstance(expr, Constant):  # a role constant, broadcast to its node's plates
        return stat.point(expr.value, expr.family, expr.event_shape), owner
    if isinstance(expr, Gather):
        inner, _ = _expect(expr.node, stat, owner)
        return tuple(np.take(s, expr.index, axis=0) for s in inner), expr.plates
    if isinstance(expr, Gate):
        inner, plates = _expect(expr.node, stat, owner)
        target = expr.plates + (expr.gated_plate,)
        r = lay(expr.selector.family.indicator(moments_of(expr.selector)[0]),
                expr.selector.plates + (expr.gated_plate,), target)
        out = []
        for s in inner:
            s = lay(s, plates, target)
            w = r.reshape(r.shape + (1,) * (s.ndim - r.ndim))
            out.append((w * s).sum(axis=len(target) - 1))
        return tuple(out), expr.plates
    if isinstance(expr, Scaled):
        inner, plates = _expect(expr.node, stat, owner)
        return stat.scaled(inner, expr.scale), plates
    if isinstance(expr, Product):
        return stat.product(expect(expr.node, stat, expr.plates), expect(expr.scale, stat, expr.plates)), expr.plates
    if isinstance(expr, Diagonal):
        inner, _ = _expect(expr.node, stat, owner)
        return inner, expr.plates
    if isinstance(expr, Sticks):  # the stick plate becomes the last (event) axis
        return expect(expr.node, stat, expr.plates + (expr.dim_plate,)), expr.plates
    if isinstance(expr, Dot):
        return _dot(expr, owner), expr.plates
    if isinstance(expr, Sum):
        return _sum(expr, owner), expr.plates
    if isinstance(expr, Steps):  # a chain's marginals: its first two moments
        return stat.node(expr.node)[:2], expr.plates
    if isinstance(expr, Linear):
        return _linear(expr), expr.plates
    if isinstance(expr, RandomMap):
        return _random_map(expr), expr.plates
    raise TypeError(f"no expectation of '{expr.name}' ({type(expr).__name__})")


def _dot(expr: Dot, owner: tuple) -> tuple:
    """E[u.v] and E[(u.v)^2] of independent u, v: tr(E[uu^T] E[vv^T]) over the event axis, or,
    over a shared plate of Normals, (sum_k E[u_k]E[v_k])^2 + sum_k (E[u_k^2]E[v_k^2] -
    E[u_k]^2 E[v_k]^2) (Paquet eq. (7))."""
    target = expr.plates if expr.shared is None else expr.plates + (expr.shared,)
    u1, u2 = expect(expr.u, FirstTwo(), target)
    v1, v2 = expect(expr.v, FirstTwo(), target)
    if expr.shared is None:
        return np.einsum("...d,...d->...", u1, v1), np.einsum("...ij,...ij->...", u2, v2)
    m = (u1 * v1).sum(-1)
    return m, m * m + (u2 * v2 - (u1 * v1) ** 2).sum(-1)


def _sum(expr: Sum, owner: tuple) -> tuple:
    """E[m] = sum_i E[a_i], E[m m^T] = sum_i E[a_i a_i^T] + sum_{i != j} E[a_i] E[a_j]^T."""
    parts = [expect(t, FirstTwo(), expr.plates) for t in expr.terms]
    m = sum(p[0] for p in parts)
    outer = (lambda a, b: a[..., :, None] * b[..., None, :]) if expr.event_shape else (lambda a, b: a * b)
    second = sum(p[1] for p in parts) + outer(m, m) - sum(outer(p[0], p[0]) for p in parts)
    return m, second


def _linear(expr: Linear) -> tuple:
    """E[W x] = W E[x] and E[(W x)(W x)^T] = W E[x x^T] W^T (elementwise: a_i a_j E[x x^T]_ij)."""
    x1, x2 = expect(expr.node, FirstTwo(), expr.plates)
    w = lay(expr.weight, expr.weight_plates, expr.plates)
    if expr.matrix:
        return np.einsum("...ij,...j->...i", w, x1), np.einsum("...ij,...jl,...kl->...ik", w, x2, w)
    outer = w[..., :, None] * w[..., None, :] if expr.event_shape else w * w
    return w * x1, outer * x2


def _random_map(expr: RandomMap) -> tuple:
    """E[C x]_i = E[c_i]^T E[x]; E[(C x)(C x)^T]_ik = E[c_i]^T E[x x^T] E[c_k] (i != k) and
    tr(E[c_i c_i^T] E[x x^T]) (i = k), the rows independent of x and of each other under q."""
    x1, x2 = expect(expr.node, FirstTwo(), expr.plates)
    c1, c2 = expect(expr.rows.node, FirstTwo(), expr.plates + (expr.rows.dim_plate,))
    second = np.einsum("...ij,...jl,...kl->...ik", c1, x2, c1)
    diagonal = np.einsum("...ijl,...jl->...i", c2, x2)
    i = np.arange(expr.event_shape[0])
    second[..., i, i] = diagonal
    return np.einsum("...ij,...j->...i", c1, x1), second


def is_point(expr: Expression) -> bool:
    """No hidden node under ``expr``: its value is known."""
    return all(n.observed for n in random_nodes(expr)) if not isinstance(expr, Constant) else True


def is_linear(expr: Expression) -> bool:
    """``expr`` is affine in jointly Gaussian q's (nodes, gathers, sums, and dots with a constant
    side), so its distribution under q is a Gaussian."""
    if isinstance(expr, (Constant, Node)):
        return True
    if isinstance(expr, (Gather, Sticks, Steps, Linear)):
        return is_linear(expr.node)
    if isinstance(expr, RandomMap):
        return (is_point(expr.rows.node) and is_linear(expr.node)) or (is_point(expr.node) and is_linear(expr.rows.node))
    if isinstance(expr, Sum):
        return all(is_linear(t) for t in expr.terms)
    if isinstance(expr, Dot):
        return (is_point(expr.u) and is_linear(expr.v)) or (is_point(expr.v) and is_linear(expr.u))
    return False
