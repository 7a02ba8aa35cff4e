"""Two gathers over one data plate contracted through a sparse matrix, never per datum."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ...factors.terms import contract_to, scale
from ...families._linalg import PACK_ORDER, pack_symmetric, unpack_symmetric
from ..leaves import GatherLeaf, memoizable, restricted
from ..calls import Part
from .base import Deferred, Strategy

#: sparse matrices kept per pair of gathers (one per weight array: ones, the data, a policy's)
PAIRS_KEPT = 4


class ScaledProduct(Deferred):
    """A message s Y kept as its two factors: Y a kept sparse product (read-only) and s a
    number (E[tau] times the term's coefficient). ``value`` forms y * s again, the numbers
    ``contract_to`` formed, so the array sent out is not kept (the engine adds the prior's
    message into it in place)."""

    __slots__ = ("y", "s")

    def __init__(self, y: np.ndarray, s):
        y.flags.writeable = False
        self.y, self.s = y, np.array(s)  # s may be a q's moment (a 0-d array): kept as it was

    def value(self) -> np.ndarray:
        return self.y * self.s


class Other(NamedTuple):
    operand: object
    per_datum: bool  # over the data plate R alone (then a weight of the sparse matrix)


class Route(NamedTuple):
    """Which operands are the two gathers (``first`` the target's, or the one read from its
    source), whether the result is at the node's level (the target is a gather), the others."""

    first: object
    second: object
    node_level: bool
    others: tuple


class Product(NamedTuple):
    weight: object
    moments: np.ndarray
    y: np.ndarray


class Pattern(NamedTuple):
    """The full-data sparsity pattern of a pair of gathers (CSR or CSC) and its matrices kept
    per weight (the last PAIRS_KEPT)."""

    kind: type
    order: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    matrices: list


def route(ops, output: str, target, child_letters: str) -> Route | None:
    """The pattern of :class:`FusedGathers` for a contraction of ``ops`` (without ``target``)
    to ``output``, from structure alone; None where it does not apply."""
    lazy = [o for o in ops if isinstance(o.leaf, GatherLeaf)]
    if target is not None and isinstance(target.leaf, GatherLeaf):
        if len(lazy) != 1:
            return None
        g1, g2, node_level = target, lazy[0], True
    else:
        if len(lazy) != 2:
            return None
        (g1, g2), node_level = lazy, False
    r = g1.letters[0]
    if g2.letters[0] != r or g1.leaf.node is g2.leaf.node or child_letters != r or (r in output) != node_level:
        return None
    others = []
    for o in ops:
        if o is g1 or o is g2:
            continue
        if r in o.letters and o.letters != r:
            return None
        others.append(Other(o, r in o.letters))
    return Route(g1, g2, node_level, tuple(others))


def packed(leaf, comp: int, b: np.ndarray) -> bool:
    """Is moment ``comp`` of the leaf's family an outer product x x^T (symmetric matrices of
    order at least PACK_ORDER in the last two axes of ``b``): then it travels packed."""
    fam = leaf.family
    return (comp in fam.outer and fam.event_ndims[comp] == 2 and b.ndim >= 3
            and b.shape[-1] == b.shape[-2] >= PACK_ORDER)


class FusedGathers(Strategy):
    """coef times a term over two gathers on one data plate R (as in dot(u[rows], v[cols]))
    without per-datum moments:

        sum_r w_r A[rows_r] (x) B[cols_r] = A (x) (S B),   S = P_rows^T diag(w) P_cols,

    a sparse-dense product on B's moments flattened to rows (a symmetric E[vv^T] packed to
    its unique entries); operands over R alone join w, a scalar operand (E[tau]) takes the
    coefficient. A message to a gather comes out at the node's level (S B is already the
    scattered sum), the bound term as <A, S B>.

    Caches: the routes, from structure alone, per (read or term, output letters), built with
    the factor. Per ordered pair of gathers and moment component one product S B (its weight,
    B, the product), serving while the weight and B are the same objects (in matrix
    factorization the noise precision's message reads the S^T E[uu^T] that the item factors'
    message formed); per ordered pair the full-data sparsity pattern and its matrices for the
    last PAIRS_KEPT weights. Products are kept only in a ``memoizable`` Context; a restricted
    one builds its matrix from its rows."""

    name = "fused_gathers"
    hooks = ("contraction",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        f = self.factor
        self.routes: dict = {}
        candidates = [((r.term, r.position), r.rest, r.operand.letters, r.operand)
                      for reads in evaluator.reads.values() for r in reads]
        candidates += [((ti, None), tuple(t.operands), "", None) for ti, t in enumerate(f.terms)]
        for key, ops, output, target in candidates:
            found = route(ops, output, target, f.child_letters)
            if found is not None:
                self.routes[key, output] = found
        self.products: dict = {}
        self.patterns: dict = {}

    def contraction(self, c, call, inner):
        rt = None if c.select else self.routes.get((c.key, c.output))
        return inner(c, call) if rt is None else self.fuse(rt, c, call)

    def fuse(self, rt: Route, c, call) -> Part:
        ctx, plate_of, plans = call.ctx, self.factor.plate_of, self.evaluator.plans
        w, glob = call.weight, []
        for o in rt.others:
            v = o.operand.value(ctx, plate_of)
            if o.per_datum:
                w = v if w is None else w * v
            else:
                glob.append((v, o.operand.letters))
        coef = c.coef
        k = next((k for k, (v, _) in enumerate(glob) if np.ndim(v) == 0), None)
        if k is not None and coef != 1.0:
            glob[k], coef = (coef * glob[k][0], glob[k][1]), 1.0
        g1, g2 = rt.first, rt.second
        if not rt.node_level and self.held(g2.leaf, g1.leaf, g1.comp, w, ctx):
            g1, g2 = g2, g1  # the other orientation was formed for a message already
        y = self.product(g1.leaf, g2.leaf, g2.comp, w, ctx)
        inputs = [(y, g2.letters)] + glob
        if not rt.node_level:
            inputs.append((g1.leaf.source(g1.comp, ctx), g1.letters))
            return Part(scale(coef, contract_to(inputs, c.output, c.shape, plans)))
        exact = (all(np.ndim(v) == 0 for v, _ in glob) and packed(g2.leaf, g2.comp, y)
                 and set(c.output[-2:]) == set(g2.letters[-2:]))
        made = (ScaledProduct(y, glob[0][0]) if coef == 1.0 and len(glob) == 1 and np.ndim(glob[0][0]) == 0
                and g2.letters == c.output else None)  # contract_to's array-times-scalar case
        value = scale(coef, contract_to(inputs, c.output, (y.shape[0],) + tuple(c.shape[1:]), plans))
        return Part(value, True, exact, made)

    def held(self, la, lb, comp: int, w, ctx) -> bool:
        """Is S_ab @ (lb's moment ``comp``) with weights ``w`` kept from an earlier message."""
        if not memoizable(ctx):
            return False
        hit = self.products.get((la, lb, comp))
        return hit is not None and hit.weight is w and hit.moments is lb.source(comp, ctx)

    def product(self, la, lb, comp: int, w, ctx) -> np.ndarray:
        """Y = S B: S = P_a^T diag(w) P_b (:meth:`pair`) times B, lb's moment ``comp`` with each
        source element flattened (E[vv^T] as n x K^2, or its K(K+1)/2 unique entries): one
        sparse-dense product."""
        b = lb.source(comp, ctx)
        key = (la, lb, comp)
        if memoizable(ctx):
            hit = self.products.get(key)
            if hit is not None and hit.weight is w and hit.moments is b:
                return hit.y
        s = self.pair(la, lb, w, ctx)
        if packed(lb, comp, b):  # D(D+1)/2 columns instead of D^2, the same sums
            y = np.asarray(s @ pack_symmetric(b).reshape(b.shape[0], -1))
            y = unpack_symmetric(y.reshape((s.shape[0],) + b.shape[1:-2] + (-1,)), b.shape[-1])
        else:
            y = np.asarray(s @ np.ascontiguousarray(b).reshape(b.shape[0], -1))
            y = y.reshape((s.shape[0],) + b.shape[1:])
        if memoizable(ctx):
            self.products[key] = Product(w, b, y)
        return y

    def pair(self, la, lb, w, ctx) -> sp.csr_matrix | sp.csc_matrix:
        """The sparse matrix with w_r at (rows_r, cols_r). With fewer rows than columns it is
        stored by columns (CSC): the product then streams the large operand once and adds into
        the small result, which stays in cache; each result row sums its terms in the same
        order (by column) either way, so the numbers are the same."""
        shape = (la.source(0, ctx).shape[0], lb.source(0, ctx).shape[0])
        if restricted(ctx):
            i1, i2 = la.indices(ctx), lb.indices(ctx)
            data = np.ones(i1.size) if w is None else np.broadcast_to(w, i1.shape)
            return sp.csr_matrix((data, (i1, i2)), shape=shape)
        pattern = self.patterns.get((la, lb))
        if pattern is None:
            pattern = self.patterns[la, lb] = _pattern(la.indices(), lb.indices(), shape)
        for held_w, matrix in pattern.matrices:
            if held_w is w:
                return matrix
        data = np.ones(pattern.order.size) if w is None else np.broadcast_to(w, pattern.order.shape)[pattern.order]
        matrix = pattern.kind((data, pattern.indices, pattern.indptr), shape=shape)
        pattern.matrices.insert(0, (w, matrix))  # the ones and the data's values alternate each sweep
        del pattern.matrices[PAIRS_KEPT:]
        return matrix


def _pattern(i1: np.ndarray, i2: np.ndarray, shape: tuple) -> Pattern:
    by_columns = shape[0] < shape[1]
    major, minor = (i2, i1) if by_columns else (i1, i2)
    order = np.lexsort((minor, major))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=shape[by_columns]))])
    return Pattern(sp.csc_matrix if by_columns else sp.csr_matrix, order, minor[order], indptr, [])
