"""Binding: a factor's terms rewritten over the leaves that feed each role.

Binding replaces each role operand by the moments that feed it: a node's own moments, a
constant's statistics, a gathered node's moments, a product of moments for ``dot`` (E[u.v] =
E[u].E[v], E[(u.v)^2] = tr(E[uu^T]E[vv^T]) or, factorized, Paquet eq. (7)), a scaled node's
moments (by a constant, or by a Gamma node c: E[c P] = E[c] E[P]), and, for a gate P[z], P's
moments over a gate letter multiplied by E[z] in every term. Each expanded term
(``Expanded``: a coefficient times a product of ``Operand``s) stays linear in every leaf
element (Winn & Bishop eq. (5)); ``CompiledFactor`` evaluates them.

A new glue expression is one ``...Binding`` class here (``sub(comp, ev, fresh)``: the expanded
terms of moment ``comp`` of the expression, its event letters ``ev``) and one case in
``Binder._bind``. A constant W times x (``W x``: E[W x] = W E[x], E[(W x)(W x)^T] = W E[x x^T] W^T),
a matrix by rows (E[A]_ij, E[a_i a_i^T]_jl) and a chain read as one Gaussian per step are bound
in ``Binder._bind_linear``.
"""
from __future__ import annotations

import itertools
import string
from dataclasses import dataclass

import numpy as np

from ..errors import GraphError
from ..factors.terms import Term
from .allocation import AllocationLeaf
from .expressions import (Constant, Diagonal, Dot, Expression, Gate, Gather, PlatedConstant, Product, Rows, Scaled,
                          Sticks, Sum)
from .gaussian_chain import Steps
from .linear import Linear, RandomMap
from .leaves import ConstLeaf, EventGatherLeaf, GatherLeaf, IndicatorLeaf, Leaf, NodeLeaf
from .matrix import Matrix
from .node import Node

PLATE_LETTERS = string.ascii_uppercase
FRESH_EVENT = "pqrstuvwxyzcdefghijklmno"

@dataclass
class Operand:
    leaf: Leaf | None  # None for a constant array
    comp: int
    letters: str
    array: np.ndarray | None = None

    def value(self, ctx=None, plate_of: dict | None = None) -> np.ndarray:
        if self.leaf is not None:
            return self.leaf.value(self.comp, ctx)
        arr = self.array
        if ctx is not None and ctx.subset:
            for axis, ch in enumerate(self.letters):
                idx = ctx.subset.get(plate_of.get(ch))
                if idx is not None:
                    arr = np.take(arr, idx, axis=axis)
        return arr


@dataclass
class Expanded:
    coef: float
    operands: list[Operand]


class _Fresh:
    def __init__(self):
        self.i = 0

    def __call__(self, n: int = 1) -> str:
        out = FRESH_EVENT[self.i:self.i + n]
        self.i += n
        if len(out) < n:
            raise GraphError("a factor needs more einsum letters than available")
        return out


class LeafBinding:
    def __init__(self, leaf: Leaf, letters: str):
        self.leaf, self.letters = leaf, letters

    def sub(self, comp: int, ev: str, fresh) -> list[tuple[float, list[Operand]]]:
        fam_ = self.leaf.family
        if self.leaf.point and comp in fam_.outer:
            a, b = fam_.outer[comp]
            na = fam_.event_ndims[a]
            return [(1.0, [Operand(self.leaf, a, self.letters + ev[:na]), Operand(self.leaf, b, self.letters + ev[na:])])]
        return [(1.0, [Operand(self.leaf, comp, self.letters + ev)])]


class ScaledBinding:
    """c * P: first moment scales by c; log-moment shifts by k log c (``Family.scale_dimension``:
    the Gamma's 1, the Wishart's D)."""

    def __init__(self, inner, scale: float, family, dim: int):
        self.inner, self.scale, self.family, self.dim = inner, scale, family, dim

    def sub(self, comp, ev, fresh):
        terms = self.inner.sub(comp, ev, fresh)
        if comp == 0:
            return [(c * self.scale, ops) for c, ops in terms]
        return terms + [(self.dim * np.log(self.scale), [])]


class ProductBinding:
    """c * P for a random scale c (``Product``): E[c P] = E[c] E[P] and
    E[u_1(c P)] = E[u_1(P)] + k E[log c] (k = ``Family.scale_dimension``), so every expanded term
    stays linear in each side's moments."""

    def __init__(self, node, scale, dim: int):
        self.node, self.scale, self.dim = node, scale, dim

    def sub(self, comp, ev, fresh):
        if comp == 0:
            return _product(self.node.sub(0, ev, fresh), self.scale.sub(0, "", fresh))
        return self.node.sub(comp, ev, fresh) + [(self.dim * c, ops) for c, ops in self.scale.sub(comp, "", fresh)]


class DotBinding:
    """Moments (E[m], E[m^2]) of m = u . v as sums of products of u's and v's moments."""

    def __init__(self, bu, bv, cross=None):
        self.bu, self.bv, self.cross = bu, bv, cross  # cross: (bu', bv', offdiag Operand) if factorized

    def sub(self, comp, ev, fresh):
        if self.cross is None:
            e = fresh(comp + 1)
            return _product(self.bu.sub(comp, e, fresh), self.bv.sub(comp, e, fresh))
        first = _product(self.bu.sub(comp, "", fresh), self.bv.sub(comp, "", fresh))
        if comp == 0:
            return first
        bu2, bv2, off = self.cross
        pair_k = _product(self.bu.sub(0, "", fresh), self.bv.sub(0, "", fresh))
        pair_l = _product(bu2.sub(0, "", fresh), bv2.sub(0, "", fresh))
        return first + [(c, ops + [off]) for c, ops in _product(pair_k, pair_l)]


class BinaryBinding:
    """A 0/1 variable z: its second moment is its first, E[z^2] = E[z] (``Family.binary``)."""

    def __init__(self, inner: LeafBinding):
        self.inner = inner

    def sub(self, comp, ev, fresh):
        return self.inner.sub(0, ev, fresh)


class DiagonalBinding:
    """diag(alpha), rows(A), sticks(Psi): the letter of the node's plate read as an event axis
    becomes the first event letter; the node's own ``keep`` event letters follow it."""

    def __init__(self, inner: LeafBinding, placeholder: str, keep: int = 0):
        self.inner, self.placeholder, self.keep = inner, placeholder, keep

    def sub(self, comp, ev, fresh):
        lead, own = ev[:len(ev) - self.keep], ev[len(ev) - self.keep:]
        return [(c, [Operand(o.leaf, o.comp, o.letters.replace(self.placeholder, lead)) for o in ops])
                for c, ops in self.inner.sub(comp, own, fresh)]


class SumBinding:
    """Moments of m = sum_i a_i over independent terms: E[m] = sum_i E[a_i],
    E[m m^T] = sum_i E[a_i a_i^T] + 2 sum_{i < j} E[a_i] E[a_j]^T (the pair (j, i) is the
    transpose of (i, j): equal against the symmetric precision it meets, and messages are
    symmetrized)."""

    def __init__(self, parts):
        self.parts = parts

    def sub(self, comp, ev, fresh):
        out = [t for b in self.parts for t in b.sub(comp, ev, fresh)]
        if comp == 0:
            return out
        half = len(ev) // 2
        for bi, bj in itertools.combinations(self.parts, 2):
            out += [(2.0 * c, ops) for c, ops in _product(bi.sub(0, ev[:half], fresh), bj.sub(0, ev[half:], fresh))]
        return out


class RowsBinding:
    """A matrix by rows (``Matrix`` of a node over a plate of rows): moment ``comp`` has the row
    letter first (the rows plate's placeholder becomes it) and the row's own event letters after
    it, E[A]_{ij} and E[a_i a_i^T]_{jl}."""

    def __init__(self, inner, placeholder: str):
        self.inner, self.placeholder = inner, placeholder

    def sub(self, comp, ev, fresh):
        return [(c, [Operand(o.leaf, o.comp, o.letters.replace(self.placeholder, ev[:1]), o.array) for o in ops])
                for c, ops in self.inner.sub(comp, ev[1:], fresh)]


class ConstantMatrixBinding:
    """A constant matrix A by rows: A_ij, and A_ij A_il for the rows' second moment."""

    def __init__(self, array: np.ndarray, letters: str):
        self.array, self.letters = array, letters

    def sub(self, comp, ev, fresh):
        if comp == 0:
            return [(1.0, [Operand(None, 0, self.letters + ev, array=self.array)])]
        return [(1.0, [Operand(None, 0, self.letters + ev[0] + col, array=self.array) for col in ev[1:]])]


class LinearBinding:
    """W x for a constant W (``Linear``): moment ``comp`` of x times comp + 1 copies of W, one per
    factor of x in it (E[W x] = W E[x], E[(W x)(W x)^T] = W E[x x^T] W^T); a matrix W meets x
    over fresh letters, an elementwise one over x's own."""

    def __init__(self, inner, weight: np.ndarray, letters: str, matrix: bool):
        self.inner, self.weight, self.letters, self.matrix = inner, weight, letters, matrix

    def sub(self, comp, ev, fresh):
        k = comp + 1
        own = fresh(len(ev)) if self.matrix else ev
        n = len(ev) // k
        parts = [(ev[i * n:(i + 1) * n], own[i * n:(i + 1) * n]) for i in range(k)]
        ws = [Operand(None, 0, self.letters + e + (o if self.matrix else ""), array=self.weight) for e, o in parts]
        return [(c, ops + ws) for c, ops in self.inner.sub(comp, own, fresh)]


class MapBinding:
    """C x for C by rows (``RandomMap``, C's rows a ``RowsBinding``): E[C x]_i = E[c_i]_j E[x]_j,
    and E[(C x)(C x)^T]_ik = E[c_i c_i^T]_jl E[x x^T]_jl where i = k (a constant I over ik) plus
    E[c_i]_j E[c_k]_l E[x x^T]_jl where i != k (a constant 1 - I): the split of E[A^T Q A] of the
    chain's factor, here over the glue's event letters."""

    def __init__(self, rows, inner, size: int):
        self.rows, self.inner = rows, inner
        self.eye, self.off = np.eye(size), 1.0 - np.eye(size)

    def sub(self, comp, ev, fresh):
        if comp == 0:
            j = fresh(1)
            return _product(self.rows.sub(0, ev + j, fresh), self.inner.sub(0, j, fresh))
        jl = fresh(2)
        second = self.inner.sub(1, jl, fresh)
        own = _product(self.rows.sub(1, ev[0] + jl, fresh), second)
        pair = _product(_product(self.rows.sub(0, ev[0] + jl[0], fresh), self.rows.sub(0, ev[1] + jl[1], fresh)),
                        second)
        eye, off = Operand(None, 0, ev, array=self.eye), Operand(None, 0, ev, array=self.off)
        return [(c, ops + [eye]) for c, ops in own] + [(c, ops + [off]) for c, ops in pair]


def _vanishes(ops: list) -> bool:
    """A constant over event letters only (an I or 1 - I of a glue) whose nonzeros miss those of
    another constant over the same letters (the factor's own I of a diagonal precision): the
    term is zero everywhere, and dropping it keeps the nodes in it from being coupled."""
    consts = [o for o in ops if o.leaf is None and np.ndim(o.array) == len(o.letters)]
    for b in consts:
        if not b.letters.islower():
            continue
        for a in consts:
            if a is b or not set(b.letters) <= set(a.letters) or len(set(a.letters)) != len(a.letters):
                continue
            kept = [ch for ch in a.letters if ch in b.letters]
            pattern = np.any(a.array != 0, axis=tuple(i for i, ch in enumerate(a.letters) if ch not in b.letters))
            if not np.any(np.transpose(pattern, [kept.index(ch) for ch in b.letters]) & (b.array != 0)):
                return True
    return False


def _product(a, b):
    return [(ca * cb, oa + ob) for (ca, oa), (cb, ob) in itertools.product(a, b)]

class AllocationBinding:
    """The moments of m = sum_k u_k v_k for a factor's terms: E[m] = sum_k E[u_k] E[v_k], and
    E[log m] as the allocation bound (see the module docstring)."""

    def __init__(self, bu, bv, letters: str, name: str):
        parts = []
        for b in (bu, bv):
            sub = b.sub(1, "", _Fresh())
            if len(sub) != 1 or len(sub[0][1]) != 1 or getattr(b, "leaf", None) is None:
                raise GraphError(f"{name}: each side of a dot of Gamma variables must be a node or a gather")
            parts.append(sub[0][1][0])
        self.bu, self.bv = bu, bv
        self.leaf = AllocationLeaf(parts, letters, name)
        self.phi = Operand(self.leaf, 0, letters)
        self.phi_log_phi = Operand(self.leaf, 1, letters)

    def sub(self, comp, ev, fresh):
        if comp == 0:
            return _product(self.bu.sub(0, "", fresh), self.bv.sub(0, "", fresh))
        return ([(c, [self.phi] + ops) for c, ops in self.bu.sub(1, "", fresh)]
                + [(c, [self.phi] + ops) for c, ops in self.bv.sub(1, "", fresh)]
                + [(-1.0, [self.phi_log_phi])])



class Binder:
    """The expanded terms of ``child``'s factor: plate letters per plate, leaves per node,
    gather and gate, a gate letter per selector, and the plates along which one node's elements
    meet in one term (``coupled``)."""

    def __init__(self, child):
        self.child = child
        self.letters: dict = {}
        self._next = 0
        for p in child.plates:
            self.letters[p.name] = self._new_letter()
        self.child_letters = "".join(self.letters[p.name] for p in child.plates)
        self.plate_of = {self.letters[p.name]: p.name for p in child.plates}
        self.sizes = {self.letters[p.name]: p.size for p in child.plates}
        self._leaves: dict = {}
        self._gates: dict = {}
        self._role_nodes: dict = {}
        bindings = {"x": self._bind(child, dict(self.letters), role="x")}
        for role, expr in child.parents.items():
            bindings[role] = self._bind(expr, dict(self.letters), role=role)
        self.terms: list[Expanded] = []
        for term in child.factor.terms() + child.factor.data_terms():
            self.terms.extend(self._expand(term, bindings))
        self.terms = [self._event_gather(t) for t in self.terms]
        self.coupled: dict = {}
        self._find_couplings()
        used = {id(o.leaf) for t in self.terms for o in t.operands if o.leaf is not None}
        self.targets = [leaf for leaf in self._leaves.values() if leaf.target and id(leaf) in used]

    def _new_letter(self) -> str:
        if self._next >= len(PLATE_LETTERS):
            raise GraphError(f"node '{self.child.name}': too many plates, gates and inner products in one factor")
        ch = PLATE_LETTERS[self._next]
        self._next += 1
        return ch

    def _leaf(self, key, make) -> Leaf:
        if key not in self._leaves:
            self._leaves[key] = make()
        return self._leaves[key]

    def _claim(self, node, role):
        other = self._role_nodes.setdefault(node.name, role)
        if other != role:
            raise GraphError(
                f"node '{self.child.name}': '{node.name}' reaches it through two parent roles "
                f"('{other}' and '{role}'); that is not supported"
            )

    def _bind(self, expr: Expression, letters: dict, role: str):
        if isinstance(expr, PlatedConstant):
            return LeafBinding(ConstLeaf(expr, expr.plates), "".join(letters[p.name] for p in expr.plates))
        if isinstance(expr, Constant):
            leaf = ConstLeaf(expr, self.child.plates)
            return LeafBinding(leaf, self.child_letters)
        if isinstance(expr, Node):
            if expr is not self.child:
                self._claim(expr, role)
            leaf = self._leaf(("node", expr.name), lambda: NodeLeaf(expr))
            return LeafBinding(leaf, "".join(letters[p.name] for p in expr.plates))
        if isinstance(expr, Gather):
            self._claim(expr.node, role)
            leaf = self._leaf(("gather", expr.node.name, id(expr)), lambda: GatherLeaf(expr))
            return LeafBinding(leaf, "".join(letters[p.name] for p in expr.plates))
        if isinstance(expr, Gate):
            return self._bind_gate(expr, letters, role)
        if isinstance(expr, (Steps, Matrix, Linear, RandomMap)):
            return self._bind_linear(expr, letters, role)
        if isinstance(expr, (Diagonal, Rows, Sticks)):
            inner = dict(letters, **{expr.dim_plate.name: "#"})
            return DiagonalBinding(self._bind(expr.node, inner, role), "#", len(expr.node.event_shape))
        if isinstance(expr, Sum):
            return SumBinding([self._bind(t, letters, role) for t in expr.terms])
        if isinstance(expr, Scaled):
            inner = self._bind(expr.node, letters, role)
            return ScaledBinding(inner, expr.scale, expr.family, expr.family.scale_dimension(expr.event_shape))
        if isinstance(expr, Product):
            return ProductBinding(self._bind(expr.node, letters, role), self._bind(expr.scale, letters, role),
                                  expr.dimension)
        if isinstance(expr, Dot):
            return self._bind_dot(expr, letters, role)
        raise GraphError(f"node '{self.child.name}': cannot use {expr!r} as a parent")

    def _bind_gate(self, expr: Gate, letters: dict, role: str):
        """``P[z]``: P with its gated plate on the selector's letter (one letter per selector,
        its indicator read once for every gate of z in the factor)."""
        z = expr.selector
        if z.name not in self._gates:
            g = self._new_letter()
            zb = self._bind(z, letters, role=f"gate of {role}")
            leaf = zb.leaf if z.family.one_hot else self._leaf(("indicator", z.name), lambda: IndicatorLeaf(z))
            self._gates[z.name] = (g, Operand(leaf, 0, zb.letters + g))
            self.sizes[g] = expr.gated_plate.size
        inner = dict(letters)
        inner[expr.gated_plate.name] = self._gates[z.name][0]
        return self._bind(expr.node, inner, role)

    def _bind_dot(self, expr: Dot, letters: dict, role: str):
        """``dot(u, v)``: over an allocation's shared plate, plain, or factorized over the shared
        plate (the cross terms k != l apart from the diagonal's second moments)."""
        if expr.allocates:
            k = self._new_letter()
            self.sizes[k] = expr.shared.size
            lk = dict(letters, **{expr.shared.name: k})
            bu, bv = self._bind(expr.u, lk, role), self._bind(expr.v, lk, role)
            return AllocationBinding(bu, bv, "".join(letters[p.name] for p in expr.plates) + k, expr.name)
        if expr.shared is None:
            return DotBinding(self._bind(expr.u, letters, role), self._bind(expr.v, letters, role))
        k, l = self._new_letter(), self._new_letter()
        size = expr.shared.size
        self.sizes[k] = self.sizes[l] = size
        lk = dict(letters, **{expr.shared.name: k})
        ll = dict(letters, **{expr.shared.name: l})
        off = Operand(None, 0, k + l, array=1.0 - np.eye(size))
        bu, bv = self._factor_of_dot(expr.u, lk, role), self._factor_of_dot(expr.v, lk, role)
        cross = (self._factor_of_dot(expr.u, ll, role), self._factor_of_dot(expr.v, ll, role), off)
        return DotBinding(bu, bv, cross)

    def _bind_linear(self, expr, letters: dict, role: str):
        """A chain's steps (its own leaf), a matrix by rows (constant or a node over a plate of
        rows), a constant linear map W x, a random one C x."""
        if isinstance(expr, Steps):
            return self._bind(expr.node, letters, role)
        if isinstance(expr, Matrix) and expr.node is None:
            return ConstantMatrixBinding(expr.constant, "".join(letters[p.name] for p in expr.plates))
        if isinstance(expr, Matrix):
            return RowsBinding(self._bind(expr.node, dict(letters, **{expr.dim_plate.name: "#"}), role), "#")
        if isinstance(expr, RandomMap):
            return MapBinding(self._bind(expr.rows, letters, role), self._bind(expr.node, letters, role),
                              expr.event_shape[0])
        return LinearBinding(self._bind(expr.node, letters, role), expr.weight,
                             "".join(letters[p.name] for p in expr.weight_plates), expr.matrix)

    def _factor_of_dot(self, expr: Expression, letters: dict, role: str):
        binding = self._bind(expr, letters, role)
        return BinaryBinding(binding) if expr.family.binary else binding

    def _expand(self, term: Term, bindings) -> list[Expanded]:
        fresh = _Fresh()
        out = [(term.coef, [])]
        for op in term.ops:
            out = _product(out, bindings[op.role].sub(op.comp, op.event, fresh))
        consts = [Operand(None, 0, self.child_letters + c.event, array=c.value) for c in term.consts]
        gates = [g[1] for g in self._gates.values()]
        return [Expanded(c, ops + consts + gates) for c, ops in out if not _vanishes(ops + consts)]

    def _event_gather(self, t: Expanded) -> Expanded:
        """Replace one-hot(x_n) * E[log p] over the category letter by E[log p_{x_n}] for an
        observed Categorical child (an index, not an N x K one-hot)."""
        child = self.child
        if not (child.observed and child.family.selects and child.family.one_hot):
            return t
        xs = [o for o in t.operands if o.leaf is not None and o.leaf.node is child]
        if len(xs) != 1:
            return t
        x = xs[0]
        e = x.letters[len(self.child_letters):]
        partners = [o for o in t.operands if o is not x and e in o.letters]
        if len(e) != 1 or len(partners) != 1 or partners[0].leaf is None:
            return t
        p = partners[0]
        axis = p.letters.index(e)
        shared = set(p.letters) & set(self.child_letters)
        if not shared:
            letters = p.letters[:axis] + self.child_letters + p.letters[axis + 1:]
            per_element = False
        elif p.letters == self.child_letters + e:
            letters, per_element = self.child_letters, True
        else:
            return t
        key = ("event", id(p.leaf), p.comp)
        leaf = self._leaf(key, lambda: EventGatherLeaf(p.leaf, p.comp, axis, child, per_element))
        ops = [o for o in t.operands if o is not x and o is not p] + [Operand(leaf, 0, letters)]
        return Expanded(t.coef, ops)

    def _find_couplings(self) -> None:
        """Plates along which one node's elements meet in a single term (factorized dot)."""
        for t in self.terms:
            seen: dict = {}
            for o in t.operands:
                if o.leaf is None or not o.leaf.target:
                    continue
                seen.setdefault(id(o.leaf), []).append(o)
            for ops in seen.values():
                if len(ops) < 2:
                    continue
                leaf = ops[0].leaf
                for i, p in enumerate(leaf.plates):
                    if len({o.letters[i] for o in ops}) > 1:
                        self.coupled.setdefault(leaf.node.name, set()).add(p)
