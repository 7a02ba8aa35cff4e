"""A factor bound to the graph: its expanded terms (``binding.py``) evaluated as einsum
contractions over leaves.

Each expanded term stays linear in every leaf element, so the message to a leaf is the einsum of
the term without that operand (Winn & Bishop eq. (5)); the ELBO term is the full contraction.
"""
from __future__ import annotations

import itertools
import math
import weakref

import numpy as np
import scipy.sparse as sp

from ..factors.terms import DIRECT, accumulate, contract_to, inner_product, scale
from ..families._linalg import PACK_ORDER, pack_symmetric, unpack_symmetric
from . import folded
from .binding import Binder, Expanded, Operand
from .leaves import Context, EventGatherLeaf, GatherLeaf, IndicatorLeaf, memoizable, moments_of, restricted

#: sparse matrices kept per pair of gathers (one per weight array: ones, the data, a policy's)
PAIRS_KEPT = 4
#: arrays of ones kept per factor (one per shape of the plates a term does not read: the full
#: data plate, and a minibatch's sizes)
ONES_KEPT = 4


class ScaledProduct:
    """A message s Y kept by its factor as its two factors: Y a kept sparse product
    (``CompiledFactor._product``, read-only) and s a number (E[tau] times the term's
    coefficient). The bound reads a kept message only where the node is not at its optimum;
    ``value`` forms it again there with the same numbers (y * s, as ``contract_to`` formed it),
    so the array sent to the engine is not kept, and the prior's message is added into it in
    place (one array of the message's size per update instead of two)."""

    __slots__ = ("y", "s")

    def __init__(self, y: np.ndarray, s):
        y.flags.writeable = False
        self.y, self.s = y, np.array(s)  # s may be a q's moment (a 0-d array): kept as it was

    def value(self) -> np.ndarray:
        return self.y * self.s


def kept_value(kept):
    """A kept message as an array (a ``ScaledProduct`` formed again)."""
    return kept.value() if isinstance(kept, ScaledProduct) else kept


def _symmetric(leaf, comp: int, b: np.ndarray) -> bool:
    """Is moment ``comp`` of the leaf's family an outer product x x^T (symmetric matrices of
    order at least PACK_ORDER in the last two axes of ``b``)."""
    fam = leaf.family
    return (comp in fam.outer and fam.event_ndims[comp] == 2 and b.ndim >= 3
            and b.shape[-1] == b.shape[-2] >= PACK_ORDER)


class CompiledFactor:
    """The factor of ``child`` with terms bound to leaves; computes messages and its ELBO term."""

    def __init__(self, child):
        self.child = child
        bound = Binder(child)
        self.letters, self.child_letters, self.plate_of = bound.letters, bound.child_letters, bound.plate_of
        self.sizes, self._leaves, self._gates = bound.sizes, bound._leaves, bound._gates
        self.terms: list[Expanded] = bound.terms
        self.coupled: dict = bound.coupled
        self.targets = bound.targets
        self.child_shape = child.plate_shape
        self._cache: dict = {}
        self._patterns: dict = {}
        self._products: dict = {}
        self._routes: dict = {}  # _fused: (id(ops), id(target), output) -> (ops, target, _route)
        self._layouts: dict = {}  # _materialize: (id(ops), output, weight is None) -> (ops, _layout)
        self._constant: dict = {}
        self._constant_terms: dict = {}
        self._node_rests: dict = {}  # node name -> _rests_of
        self._rest_ops: dict = {}  # (term, operand) -> the term's other operands
        self._leaf_reads: dict = {}  # id(leaf) -> _reads_of
        self._reading: dict = {}  # node name -> the terms that read it (standing)
        self._reduced: dict = {}  # _reduce_plates: (subscripts) -> (weak operands, sum)
        self._ones_kept: dict = {}  # _ones: shape -> read-only ones, in order of last use
        self.keep: np.ndarray | None = None  # child elements with a live descendant (missing.resolve)
        self._kept_memo: tuple = (None, None)
        self._folded: dict = {}  # folded.product's data, rows last; folded.reduction's stacks
        self._data_reads = folded.reads(self.terms, child) if child.observed else {}

    # ----- evaluation -------------------------------------------------------------------
    def _weight(self, weight, ctx):
        if not restricted(ctx):
            return weight
        if weight is not None:
            weight = ctx.take(weight, self.child.plates)
        if ctx.scale is not None:
            scale = np.broadcast_to(ctx.scale, ctx.shape(self.child.plates))
            weight = scale if weight is None else weight * scale
        return weight

    def _kept(self, weight, ctx):
        """The weight times ``keep``: barren child elements send nothing to the parents and add
        nothing to the bound (the same object for the same weight, so cached derivatives match)."""
        if self.keep is None:
            return weight
        if ctx is not None:
            keep = ctx.take(self.keep, self.child.plates)
            return keep.astype(float) if weight is None else weight * keep
        if self._kept_memo[0] is not weight or self._kept_memo[1] is None:
            self._kept_memo = (weight, self.keep.astype(float) if weight is None else weight * self.keep)
        return self._kept_memo[1]

    def element_weight(self, node, weight: np.ndarray | None, ctx: Context | None = None) -> np.ndarray | None:
        """The weight over the child's elements (restricted and scaled by ``ctx``) that multiplies
        the messages to ``node``: barren elements send nothing to the parents."""
        weight = self._weight(weight, ctx)
        return weight if node is self.child else self._kept(weight, ctx)

    def _size(self, ch: str, ctx) -> int:
        if ctx is not None and self.plate_of.get(ch) in ctx.subset:
            return len(ctx.subset[self.plate_of[ch]])
        return self.sizes[ch]

    def _materialize(self, ops: list[Operand], weight, output: str, select: dict, ctx=None, coef: float = 1.0):
        """Operand arrays with their letters; selected letters are fixed at an index. Operands
        reading one leaf component share one array (so that contract sees x (x) x as such).
        ``coef`` multiplies the smallest operand read once (not a pass over the result); the
        second value says whether it found one."""
        key = (id(ops), output, weight is None)
        held = None if select else self._layouts.get(key)
        if held is None or held[0] is not ops:
            held = (ops,) + self._layout(ops, weight is not None, output, select)
            if not select:
                self._layouts[key] = held
        _, reads, which, missing = held
        values = [o.value(ctx, self.plate_of) for o in reads]
        inputs = [(values[k], o.letters) for k, o in zip(which, ops)]
        if weight is not None:
            inputs.append((weight, self.child_letters))
        fixed = inputs
        if select:
            fixed = []
            for v, letters in inputs:
                for ch, idx in select.items():
                    if ch in letters:
                        v = np.take(v, idx, axis=letters.index(ch))
                        letters = letters.replace(ch, "")
                fixed.append((v, letters))
        if missing:
            fixed.append((self._ones(tuple(self._size(ch, ctx) for ch in missing)), missing))
        if coef == 1.0:
            return fixed, True
        sizes = {ch: n for v, letters in fixed for ch, n in zip(letters, np.shape(v))}
        out_size = math.prod(sizes[ch] for ch in output if ch in sizes)
        if out_size <= DIRECT:
            return fixed, False
        once = [k for k, (v, _) in enumerate(fixed) if sum(u is v for u, _ in fixed) == 1]
        k = min(once, key=lambda k: np.size(fixed[k][0]), default=None)
        if k is None or np.size(fixed[k][0]) >= out_size:
            return fixed, False
        fixed[k] = (coef * fixed[k][0], fixed[k][1])
        return fixed, True

    def _layout(self, ops: list[Operand], weighted: bool, output: str, select: dict) -> tuple:
        """``_materialize``'s structure: the operands read (one per leaf component: those that
        read one share one array), the one each operand takes, and the child letters that no
        operand, the weight, the output or ``select`` carries (their ones are added)."""
        first: dict = {}
        which = []
        for o in ops:
            key = (id(o.leaf), o.comp) if o.leaf is not None else id(o)
            which.append(first.setdefault(key, len(first)))
        reads = list({k: o for o, k in zip(ops, which)}.values())
        letters = [o.letters for o in ops] + ([self.child_letters] if weighted else [])
        present = set("".join(letters)) | set(output) | set(select)
        return reads, which, "".join(ch for ch in self.child_letters if ch not in present)

    def _ones(self, shape: tuple[int, ...]) -> np.ndarray:
        """Ones over child plates that a term does not read (its count of elements, as the N/2
        of E[log tau]), read-only and kept per shape (the last ONES_KEPT), so that
        ``_reduce_plates`` keeps their sum instead of forming N ones and summing them per message."""
        ones = self._ones_kept.pop(shape, None)
        if ones is None:
            ones = np.ones(shape)
            ones.flags.writeable = False
        self._ones_kept[shape] = ones
        if len(self._ones_kept) > ONES_KEPT:
            del self._ones_kept[next(iter(self._ones_kept))]
        return ones

    def _reduce_plates(self, inputs: list, output: str, ctx=None) -> list:
        """The operands over the child's plates contracted first, over those plates, to what the
        others and the output need; that sum (sum_n E[z_nk] x_n, sum_n E[z_nk], ...: small) is
        kept by the identity of its operands, so the messages to several parents and the bound
        that read the same data statistics between two updates of a local compute them once
        (not kept in a Context that is not ``memoizable``: a minibatch's moments may be written
        in place, and its subset changes from step to step)."""
        keep = memoizable(ctx)
        summed = set(self.child_letters) - set(output)
        local = [k for k, (_, letters) in enumerate(inputs) if summed & set(letters)]
        if not local or sum(np.size(inputs[k][0]) for k in local) <= DIRECT:
            return inputs
        rest = [inputs[k] for k in range(len(inputs)) if k not in local]
        need = set(output).union(*(letters for _, letters in rest))
        letters = "".join(dict.fromkeys(ch for k in local for ch in inputs[k][1] if ch in need))
        key = (",".join(inputs[k][1] for k in local), letters)
        arrays = [inputs[k][0] for k in local]
        hit = self._reduced.get(key) if keep else None
        if hit is not None and len(hit[0]) == len(arrays) and all(r() is a for r, a in zip(hit[0], arrays)):
            return rest + [(hit[1], letters)]
        value = None
        if keep and folded.ENABLED and self._data_reads:
            data = [(leaf.value(comp, ctx), twice) for (leaf, comp), twice in self._data_reads.items()]
            value = folded.reduction([inputs[k] for k in local], letters, self.child_letters, data, self._folded)
        if value is None:
            value = contract_to([inputs[k] for k in local], letters, ())
        if not keep:
            return rest + [(value, letters)]
        try:
            self._reduced[key] = ([weakref.ref(a) for a in arrays], value)
        except TypeError:  # an operand that cannot be referenced weakly: not kept
            pass
        return rest + [(value, letters)]

    def _fused(self, ops: list[Operand], weight, output: str, shape, target: Operand | None, ctx=None,
               coef: float = 1.0):
        """coef times two gathers over one data plate R (as in dot(u[rows], v[cols])) without
        forming per-datum moments: sum_r w_r A[rows_r] (x) B[cols_r] = A (x) (S B) with the
        sparse S = P_rows^T diag(w) P_cols; coef multiplies a scalar operand (E[tau]) where
        there is one. Returns None where the pattern does not apply, else (the array, whether it
        is exactly symmetric in its last two axes: a message that is S B for a symmetric moment B,
        unpacked from its unique entries, times numbers only, and the message as a
        ``ScaledProduct`` where it is S B times one number, else None)."""
        key = (id(ops), id(target), output)
        held = self._routes.get(key)
        if held is None or held[0] is not ops or held[1] is not target:
            held = self._routes[key] = (ops, target, self._route(ops, output, target))
        route = held[2]
        if route is None:
            return None
        g1, g2, node_level, reads = route
        w = weight
        glob = []
        for o, per_datum in reads:
            if per_datum:
                v = o.value(ctx, self.plate_of)
                w = v if w is None else w * v
            else:
                glob.append((o.value(ctx, self.plate_of), o.letters))
        k = next((k for k, (v, _) in enumerate(glob) if np.ndim(v) == 0), None)
        if k is not None and coef != 1.0:
            glob[k], coef = (coef * glob[k][0], glob[k][1]), 1.0
        if not node_level and self._held(g2.leaf, g1.leaf, g1.comp, w, ctx):
            g1, g2 = g2, g1  # the other orientation was computed for a message already
        y = self._product(g1.leaf, g2.leaf, g2.comp, w, ctx)
        m1 = y.shape[0]
        inputs = [(y, g2.letters)] + glob
        if node_level:
            exact = (all(np.ndim(v) == 0 for v, _ in glob) and _symmetric(g2.leaf, g2.comp, y)
                     and set(output[-2:]) == set(g2.letters[-2:]))
            made = (ScaledProduct(y, glob[0][0]) if coef == 1.0 and len(glob) == 1 and np.ndim(glob[0][0]) == 0
                    and g2.letters == output else None)  # contract_to's array-times-scalar case
            return scale(coef, contract_to(inputs, output, (m1,) + tuple(shape[1:]))), exact, made
        inputs.append((g1.leaf.source(g1.comp, ctx), g1.letters))
        return scale(coef, contract_to(inputs, output, shape)), False, None

    def _route(self, ops: list[Operand], output: str, target: Operand | None) -> tuple | None:
        """``_fused``'s pattern, which depends on structure alone (the operands, the target, the
        output letters): None where it does not apply, else (g1, g2, node_level, the other
        operands each with whether it is per datum, over the data plate R alone, in order)."""
        lazy = [o for o in ops if isinstance(o.leaf, GatherLeaf)]
        if target is not None and isinstance(target.leaf, GatherLeaf):
            if len(lazy) != 1:
                return None
            g1, g2, node_level = target, lazy[0], True
        else:
            if len(lazy) != 2:
                return None
            g1, g2 = lazy
            node_level = False
        r = g1.letters[0]
        if (g2.letters[0] != r or g1.leaf.node is g2.leaf.node or self.child_letters != r
                or (r in output) != node_level):
            return None
        reads = []
        for o in ops:
            if o is g1 or o is g2:
                continue
            if r in o.letters and o.letters != r:
                return None
            reads.append((o, r in o.letters))
        return g1, g2, node_level, reads

    def _held(self, la, lb, comp, w, ctx=None) -> bool:
        """Is S_ab @ (lb's moment ``comp``) with weights ``w`` kept from an earlier message."""
        if not memoizable(ctx):
            return False
        hit = self._products.get((id(la), id(lb), comp))
        return hit is not None and hit[0] is w and hit[1] is lb.source(comp, ctx)

    def _product(self, la, lb, comp, w, ctx=None) -> np.ndarray:
        """Y = S B: S = P_a^T diag(w) P_b (``_pair``) times B, lb's moment ``comp`` with each
        source element flattened (E[vv^T] as n x K^2, or its K(K+1)/2 unique entries:
        ``_symmetric``): one sparse-dense product. On full data
        Y is kept with (w, B), compared by identity, so a second message reading the same
        moments (the noise precision's and then the user factors' in matrix factorization)
        reuses it."""
        b = lb.source(comp, ctx)
        key = (id(la), id(lb), comp)
        if memoizable(ctx):
            hit = self._products.get(key)
            if hit is not None and hit[0] is w and hit[1] is b:
                return hit[2]
        pair = self._pair(la, lb, w, ctx)
        if _symmetric(lb, comp, b):  # D(D+1)/2 columns instead of D^2, the same sums
            y = np.asarray(pair @ pack_symmetric(b).reshape(b.shape[0], -1))
            y = unpack_symmetric(y.reshape((pair.shape[0],) + b.shape[1:-2] + (-1,)), b.shape[-1])
        else:
            y = np.asarray(pair @ np.ascontiguousarray(b).reshape(b.shape[0], -1))
            y = y.reshape((pair.shape[0],) + b.shape[1:])
        if memoizable(ctx):
            self._products[key] = (w, b, y)
        return y

    def _pair(self, la, lb, w, ctx=None) -> sp.csr_matrix | sp.csc_matrix:
        """Sparse matrix with w_r at (rows_r, cols_r); the full-data sparsity pattern is kept, and
        the matrix itself while ``w`` is the same object. With fewer rows than columns it is
        stored by columns (CSC): the product then streams the large operand once and adds into
        the small result, which stays in cache; each result row sums its terms in the same
        order (by column) either way, so the numbers are the same."""
        shape = (la.source(0, ctx).shape[0], lb.source(0, ctx).shape[0])
        if restricted(ctx):
            i1, i2 = la.indices(ctx), lb.indices(ctx)
            data = np.ones(i1.size) if w is None else np.broadcast_to(w, i1.shape)
            return sp.csr_matrix((data, (i1, i2)), shape=shape)
        key = (id(la), id(lb))
        pattern = self._patterns.get(key)
        if pattern is None:
            i1, i2 = la.indices(), lb.indices()
            by_columns = shape[0] < shape[1]
            major, minor = (i2, i1) if by_columns else (i1, i2)
            order = np.lexsort((minor, major))
            indptr = np.concatenate([[0], np.cumsum(np.bincount(major, minlength=shape[by_columns]))])
            kind = sp.csc_matrix if by_columns else sp.csr_matrix
            pattern = self._patterns[key] = (kind, order, minor[order], indptr, [])
        kind, order, indices, indptr, held = pattern
        for held_w, pair in held:
            if held_w is w:
                return pair
        data = np.ones(order.size) if w is None else np.broadcast_to(w, order.shape)[order]
        pair = kind((data, indices, indptr), shape=shape)
        held.insert(0, (w, pair))  # the ones and the data's values (S and R) alternate each sweep
        del held[PAIRS_KEPT:]
        return pair

    def _evaluate(self, ops, weight, output, shape, target=None, select=None, ctx=None, coef: float = 1.0):
        """coef times the contraction of ``ops`` (times the weight) to ``output``; (array,
        node_level, exact: known to be exactly symmetric in its last two axes, the array as a
        ``ScaledProduct`` or None)."""
        if not select:
            fused = self._fused(ops, weight, output, shape, target, ctx, coef)
            if fused is not None:
                return fused[0], target is not None and isinstance(target.leaf, GatherLeaf), fused[1], fused[2]
        inputs, scaled = self._materialize(ops, weight, output, select or {}, ctx, coef)
        inputs = self._reduce_plates(inputs, output, ctx)
        out = contract_to(inputs, output, shape)
        return (out if scaled else scale(coef, out)), False, False, None

    @staticmethod
    def _stamp(ops: list[Operand], ctx) -> tuple:
        """The moments objects the operands were read from (a memo key compared by identity)."""
        return tuple(None if o.leaf is None else o.leaf.stamp(ctx) for o in ops)

    @staticmethod
    def _same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))

    def messages(self, node, weight: np.ndarray | None = None, plate=None, index: int | None = None,
                 ctx: Context | None = None, _weighted: bool = False, only=None):
        """Sum over terms of d(term)/d(moments of node), in the node's layout (None if unconnected).

        With ``plate`` and ``index``, only the slice of the node at that index of that plate
        (the coordinate update of elements coupled in a factorized dot). With ``ctx``, only the
        plate elements the context keeps (the message is over the node's kept elements).
        Each full partial derivative is kept with the moments of the operands it came from, so
        that ``elog`` reuses it (term = <derivative, operand>) while they are unchanged.
        """
        if not _weighted:
            weight = self.element_weight(node, weight, ctx)
        key = None
        if plate is None and only is None and node.clamp is None and memoizable(ctx):
            key = self._constant_key(node, ctx)
        if key is not None:
            held = self._constant.get(node.name)
            if held is not None and held[0] is weight and self._same(held[1], key):
                return held[2]
        total = self._sum_messages(node, weight, plate, index, ctx, only)
        if key is not None and total is not None:
            for m in total:
                if isinstance(m, np.ndarray):
                    m.flags.writeable = False
            self._constant[node.name] = (weight, key, total)
        return total

    def _constant_key(self, node, ctx) -> tuple | None:
        """None if the message to ``node`` reads some q (then it changes with the state); else
        what it reads that could change: the data of the observed nodes in its terms (a prior
        with fixed hyperparameters, or data-only terms, send the same message every sweep)."""
        data = []
        for rest in self._rests_of(node):
            held = None if rest is None else self._data_key(rest, ctx)
            if held is None:
                return None
            data.extend(held)
        return tuple(data)

    def _rests_of(self, node) -> list:
        """Per term that reads ``node``, the operands besides it (None where the term reads the
        node twice): structure, found once per node."""
        rests = self._node_rests.get(node.name)
        if rests is None:
            mine = [leaf for leaf in self.targets if leaf.node is node]
            rests = []
            for t in self.terms:
                ops = [o for o in t.operands if o.leaf is not None]
                if not any(o.leaf in mine for o in ops):
                    continue
                rest = [o for o in ops if o.leaf not in mine]
                rests.append(rest if len(rest) == len(ops) - 1 else None)
            self._node_rests[node.name] = rests
        return rests

    @staticmethod
    def _data_key(ops: list[Operand], ctx) -> tuple | None:
        """None if some operand reads a q; else the moments objects of the observed nodes they
        read (compared by identity: new data are new objects)."""
        data = []
        for o in ops:
            if o.leaf is None:
                continue
            if o.leaf.stamp(ctx) is not None:
                return None
            owner = getattr(o.leaf, "node", None)
            if owner is not None:
                data.append(moments_of(owner, ctx))
        return tuple(data)

    def _sum_messages(self, node, weight, plate, index, ctx, only):
        total = symmetric = None
        for leaf in self.targets if only is None else only:
            if leaf.node is not node:
                continue
            shapes = leaf.shapes(ctx)
            node_shapes = node.component_shapes(None if ctx is None else ctx.shape(node.plates))
            if plate is not None and isinstance(leaf, EventGatherLeaf):
                # the scatter needs the whole layout: evaluate fully, keep the slice
                full = self.messages(node, weight, ctx=ctx, _weighted=True, only=[leaf])
                ax = node.plates.index(plate)
                msg = tuple(np.take(m, index, axis=ax) for m in full)
                total = msg if total is None else tuple(a + b for a, b in zip(total, msg))
                symmetric = set()
                continue
            axis = None if plate is None else leaf.plates.index(plate)
            if axis is not None:
                shapes = [s[:axis] + s[axis + 1:] for s in shapes]
                node_shapes = [s[:axis] + s[axis + 1:] for s in node_shapes]
            acc = [None] * len(shapes)
            acc_node = [None] * len(shapes)
            exact = [True] * len(shapes)  # per component: every part exactly symmetric as formed
            recipe = [None] * len(shapes)  # per component: its last node-level part as a ScaledProduct
            keep = plate is None and memoizable(ctx)
            read: list = [[] for _ in shapes]  # per component: (term, operand position, stamp)
            fold: list = [[] for _ in shapes]  # per component: the parts of folded.product
            foldable = axis is None and folded.applies(leaf, shapes)
            for ti, i, t, o, rest in self._reads_of(leaf):
                if keep:
                    read[o.comp].append((ti, i, self._stamp(rest, ctx)))
                parts = folded.split(rest, o.letters, self.child, self.child_letters) if foldable else None
                if parts is not None:
                    fold[o.comp].append((t.coef,) + parts + (o.letters[len(self.child_letters):], rest, o))
                    continue
                out = o.letters
                select = None
                if axis is not None:
                    select = {o.letters[axis]: index}
                    out = out.replace(o.letters[axis], "")
                grad, node_level, born, made = self._evaluate(rest, weight, out, shapes[o.comp], o, select, ctx,
                                                              t.coef)
                target = acc_node if node_level else acc
                target[o.comp] = (target[o.comp] or []) + [grad]
                if node_level:
                    recipe[o.comp] = made
                exact[o.comp] = exact[o.comp] and node_level and born
            for comp, parts in enumerate(fold):
                exact[comp] = exact[comp] and not parts
                if folded.worth(parts):
                    grad = folded.product(parts, len(self.child_letters), weight, ctx, self.plate_of, shapes[comp],
                                          self._folded)
                    acc[comp] = [grad] + (acc[comp] or [])
                    continue
                for coef, _, _, _, _, rest, o in parts:
                    grad = self._evaluate(rest, weight, o.letters, shapes[comp], o, None, ctx, coef)[0]
                    acc[comp] = (acc[comp] or []) + [grad]
            acc = [None if a is None else accumulate(a) for a in acc]
            parts_node = acc_node
            acc_node = [None if a is None else accumulate(a) for a in acc_node]
            if keep:  # a message of one ScaledProduct that accumulate returned as it came is kept as that
                self._remember(leaf, read, weight, acc, [
                    r if r is not None and len(p) == 1 and a is p[0] else a
                    for a, p, r in zip(acc_node, parts_node, recipe)])
            if any(a is not None for a in acc):
                filled = tuple(np.zeros(s) if a is None else a for a, s in zip(acc, shapes))
                # a leaf that reads some of the node's components (an event gather) sends them all
                msg = tuple(m if a is None else m + a for m, a in itertools.zip_longest(leaf.to_node(filled, ctx), acc_node))
            else:
                msg = tuple(np.zeros(s) if a is None else a if a.shape == tuple(s) else np.zeros(s) + a
                            for a, s in zip(acc_node, node_shapes))
            total = msg if total is None else tuple(a + b for a, b in zip(total, msg))
            known = {comp for comp, e in enumerate(exact) if e and acc_node[comp] is not None}
            symmetric = known if symmetric is None else symmetric & known
        if total is None:
            return None
        if node.clamp is not None and node is not self.child:
            total = node.clamp.free(total, ctx, plate, index)
            symmetric = set()
        return node.family.symmetrize(total, frozenset(symmetric))

    def elog(self, weight: np.ndarray | None = None, per_element: bool = False, cached: bool = True,
             ctx: Context | None = None, skip: frozenset = frozenset()):
        """Weighted E[log p(child | parents)], summed (or per child plate element), without the
        terms ``skip`` (those :meth:`standing` found: the bound adds them through the node's
        optimum)."""
        weight = self._kept(self._weight(weight, ctx), ctx)
        out = self.child_letters if per_element else ""
        shape = (self.child_shape if ctx is None else ctx.shape(self.child.plates)) if per_element else ()
        done: set = set(skip)
        total = 0.0
        if cached and not per_element and memoizable(ctx):
            for key in reversed(list(self._cache)):
                reads, w, grads, node_grads, terms = self._cache[key]
                if w is not weight or terms & done or not all(
                        self._same(stamp, self._stamp(self._rest(ti, i), ctx)) for ti, i, stamp in reads):
                    continue
                o = self.terms[reads[0][0]].operands[reads[0][1]]
                if grads is not None:
                    total = total + inner_product(grads, o.value(ctx, self.plate_of))
                if node_grads is not None:
                    total = total + inner_product(kept_value(node_grads), moments_of(o.leaf.node, ctx)[o.comp])
                done |= terms
        for ti, t in enumerate(self.terms):
            if ti in done:
                continue
            key = None if per_element or not cached or not memoizable(ctx) else self._data_key(t.operands, ctx)
            if key is not None:  # a term that reads no q (a prior's log-normalizer): kept per weight
                held = self._constant_terms.get(ti)
                if held is None or held[0] is not weight or not self._same(held[1], key):
                    value = self._evaluate(t.operands, weight, out, shape, ctx=ctx)[0]
                    held = self._constant_terms[ti] = (weight, key, value)
                total = total + t.coef * held[2]
                continue
            total = total + t.coef * self._evaluate(t.operands, weight, out, shape, ctx=ctx)[0]
        return total

    def held(self, node) -> tuple | None:
        """The messages to ``node`` that :meth:`_remember` keeps, as those objects (per leaf and
        component), for :meth:`standing`; None where a term reads ``node`` through an affine
        map (a Bernoulli's indicator (1 - p, p)): there a term is not <message, E[u]>."""
        mine = [leaf for leaf in self.targets if leaf.node is node]
        if any(isinstance(leaf, IndicatorLeaf) for leaf in mine):
            return None
        ids = {id(leaf) for leaf in mine}
        return tuple((key, entry[2], entry[3]) for key, entry in self._cache.items() if key[0] in ids)

    def standing(self, node, weight, ctx: Context | None, held: tuple) -> frozenset | None:
        """The terms that read ``node`` if the messages ``held`` (:meth:`held`) are still kept,
        with the weight the bound uses and the moments they read, and between them cover every
        such term: their sum is then <message, E[u(node)]>. None otherwise."""
        if restricted(ctx):
            return None
        weight = self._kept(self._weight(weight, ctx), ctx)
        terms: set = set()
        for key, grads, node_grads in held:
            entry = self._cache.get(key)
            if entry is None or entry[1] is not weight or entry[2] is not grads or entry[3] is not node_grads:
                return None
            if not all(self._same(stamp, self._stamp(self._rest(ti, i), ctx)) for ti, i, stamp in entry[0]):
                return None
            terms |= entry[4]
        reading = self._reading.get(node.name)
        if reading is None:
            reading = self._reading[node.name] = {ti for ti, t in enumerate(self.terms)
                                                  if any(o.leaf is not None and o.leaf.node is node for o in t.operands)}
        return frozenset(terms) if terms == reading else None

    def _reads_of(self, leaf) -> list:
        """(term index, operand position, term, operand, the other operands) for every operand
        reading ``leaf``, in term order: structure, found once per leaf."""
        reads = self._leaf_reads.get(id(leaf))
        if reads is None:
            reads = self._leaf_reads[id(leaf)] = [(ti, i, t, o, self._rest(ti, i))
                                                  for ti, t in enumerate(self.terms)
                                                  for i, o in enumerate(t.operands) if o.leaf is leaf]
        return reads

    def _rest(self, ti: int, i: int) -> list[Operand]:
        rest = self._rest_ops.get((ti, i))
        if rest is None:
            ops = self.terms[ti].operands
            rest = self._rest_ops[ti, i] = ops[:i] + ops[i + 1:]
        return rest

    def _remember(self, leaf, read: list, weight, acc: list, acc_node: list) -> None:
        """Keep each component's message sum_t c_t d(term_t)/d(operand) with the moments of the
        other operands it came from: while they are unchanged, the sum of those terms in the
        bound is one inner product, <message, operand> (each term is linear in the operand).
        A component that a term reads twice is not kept (the product would count it twice)."""
        for comp, reads in enumerate(read):
            key = (id(leaf), comp)
            self._cache.pop(key, None)
            terms = [ti for ti, _, _ in reads]
            if reads and len(set(terms)) == len(terms):
                for kept in (acc[comp], acc_node[comp]):
                    if isinstance(kept, np.ndarray):
                        kept.flags.writeable = False  # the message it sums into must not change it
                self._cache[key] = (reads, weight, acc[comp], acc_node[comp], frozenset(terms))

    def nodes(self) -> list:
        return list({id(l.node): l.node for l in self.targets}.values())

    def leaves(self) -> list:
        """Every leaf the factor's terms read (nodes, gathers, constants)."""
        return list({id(o.leaf): o.leaf for t in self.terms for o in t.operands if o.leaf is not None}.values())
