"""The quadratic of a regression's likelihood evaluated about q's mean, not as three expanded
terms."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...families import _gram
from ..leaves import ConstLeaf, GatherLeaf, NodeLeaf, restricted
from . import grouping
from .base import Strategy

#: the expanded sum is read centered where its value is below CANCELLED times the size of the
#: terms it sums (``Centered.magnitude``: more than 4 of its 16 digits cancelled); above, the
#: expanded terms give it to about 1e-11
CANCELLED = 1e-4


def _largest(second) -> float:
    """D max|E[w w^T]|: E[w w^T] is positive semidefinite, so its largest entry is on its
    diagonal (|A_ij| <= sqrt(A_ii A_jj))."""
    second = np.asarray(second, float)
    return second.shape[-1] * float(np.max(np.diagonal(second, axis1=-2, axis2=-1)))


def cancelled(value, magnitude) -> bool:
    """Whether some element of ``value`` is below CANCELLED times the same element of ``magnitude``."""
    return bool(np.any(np.abs(value) < CANCELLED * np.abs(magnitude)))


class Quadratic(NamedTuple):
    """Terms ``terms`` = k (-1/2 P x x + P x (C w) - 1/2 P (C w)(C w)^T) of a Normal child x
    observed, whose mean is the dot of a Gaussian node w (over its own plates, or gathered by
    rows) with a constant design C."""

    terms: frozenset
    xx: int  # the term -k/2 P x x
    coef: float
    precision: object  # the Operand of P (a node's or a constant's)
    x: object  # the Operand of x
    mean: object  # the Operand of E[w]
    design: object  # the Operand of C (letters: the child's, then w's event letter)


def _quadratic(factor) -> Quadratic | None:
    """The regression's quadratic among ``factor``'s terms, or None where it has none."""
    child, letters = factor.child, factor.child_letters
    if not child.observed or child.clamp is not None:
        return None
    found = {}
    for ti, t in enumerate(factor.terms):
        ops = t.operands
        if len(ops) < 3 or any(o.leaf is None for o in ops) or ops[0].comp != 0:
            continue
        kinds = tuple(type(o.leaf) for o in ops[1:])
        if kinds == (NodeLeaf, NodeLeaf) and all(o.leaf.node is child and o.comp == 0 for o in ops[1:]):
            found["xx"] = ti
        kinds = tuple(NodeLeaf if k is GatherLeaf else k for k in kinds)  # w read itself or gathered
        if kinds == (NodeLeaf, NodeLeaf, ConstLeaf) and type(ops[1].leaf) is NodeLeaf and ops[1].leaf.node is child \
                and ops[1].comp == ops[2].comp == 0:
            found["xm"] = ti
        elif kinds == (NodeLeaf, ConstLeaf, ConstLeaf) and ops[1].comp == 1:
            found["mm"] = ti
    if set(found) != {"xx", "xm", "mm"}:
        return None
    xx, xm, mm = (factor.terms[found[k]] for k in ("xx", "xm", "mm"))
    p, x, mean, design = xm.operands[0], xm.operands[1], xm.operands[2], xm.operands[3]
    w = mean.leaf.node
    same_p = all(t.operands[0].leaf is p.leaf and t.operands[0].letters == p.letters for t in (xx, mm))
    own, event = mean.letters[:-1], mean.letters[-1:]  # w's plate letters, its event letter
    ok = (same_p and isinstance(p.leaf, (NodeLeaf, ConstLeaf)) and set(p.letters) <= set(letters)
          and w.family.spreads and not w.observed and (grouping.readable(mean.leaf, letters, own) if w.plates else
                                                          type(mean.leaf) is NodeLeaf and not own)
          and event.islower()
          and x.letters == letters and design.letters == letters + event and mm.operands[1].leaf is mean.leaf
          and mm.operands[2].leaf is design.leaf and mm.operands[3].leaf is design.leaf
          and mm.operands[1].letters == own + mm.operands[2].letters[-1] + mm.operands[3].letters[-1]
          and mm.operands[2].letters[:-1] == letters == mm.operands[3].letters[:-1]
          and np.isclose(xx.coef, -0.5 * xm.coef) and np.isclose(mm.coef, -0.5 * xm.coef))
    reading = {ti for ti, t in enumerate(factor.terms) for o in t.operands if o.leaf is p.leaf and o.comp == 0}
    ok = ok and reading == set(found.values())
    return Quadratic(frozenset(found.values()), found["xx"], xm.coef, p, x, mean, design) if ok else None


class Centered(Strategy):
    """A Normal child x_n of mean c_n^T w (w a Gaussian node, or the element of a plated one
    that x_n reads, c_n a row of a constant design) and precision P_n reads w through the three
    terms of

        E[P_n (x_n - c_n^T w)^2] = E[P_n] (x_n^2 - 2 x_n c_n^T E[w] + c_n^T E[w w^T] c_n)
                                 = E[P_n] ((x_n - c_n^T E[w])^2 + c_n^T Sigma_w c_n)

    (Winn & Bishop section 4.1; Bishop PRML eq. (10.107) for the regression's noise precision).
    Expanded, the sum cancels to rounding of x_n^2 (at inputs and targets of 1e8 and a close fit
    the value is of order 1 and the rounding of order 1 too), and E[w w^T] = Sigma_w + E[w]E[w]^T
    does not hold Sigma_w below the rounding of E[w]E[w]^T. Centered, the residual is formed from
    E[w], and c_n^T Sigma_w c_n from q(w)'s natural parameters by a solve with the factor of
    Lambda_w (``Gaussian.spread``), each to rounding of itself. Serves the three terms of the bound
    (summed, or per element) and the message's E[P] component to P's node; every other term and
    message is the reference's (their values do not cancel). The centered form costs a pass over
    the rows where the expanded one is folded into sums over them (``folding``): it is read where
    the expanded value has cancelled (``CANCELLED``), the reference's numbers are kept elsewhere.

    Cache: |c_n|^2 of the design's rows read, and sum_n w_n x_n^2 and sum_n w_n |c_n|^2 over
    the letters not P's, one entry each, while the weight, data and design read are the same
    objects. Not for
    a slice of coupled elements, an x not observed or partially observed, a w read from an
    override or with no natural parameters in the state."""

    name = "centered"
    hooks = ("message", "bound")

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.quadratic = _quadratic(self.factor)
        self.norms: tuple = (None, None)  # (the design, |c_n|^2 over its rows)
        self.sums: tuple = (None, None, None, None, None)  # (weight, x, design, sum w x^2, sum w |c|^2)

    def splits(self, terms: frozenset) -> bool:
        """Whether ``terms`` hold some of the quadratic's terms but not all (the bound then reads
        the rest expanded)."""
        q = self.quadratic
        return q is not None and bool(q.terms & terms) and not q.terms <= terms

    def magnitude(self, call) -> np.ndarray:
        """x_n^2 + D max|E[w w^T]| |c_n|^2 over the child's elements: a bound, up to a small
        factor, on the terms the expanded x_n^2 - 2 x_n c_n^T E[w] + c_n^T E[w w^T] c_n sums
        (and on their partial sums), whose rounding is eps times it. |c_n|^2 is kept per design."""
        q, ctx, plate_of = self.quadratic, call.ctx, self.factor.plate_of
        design = q.design.value(ctx, plate_of)  # (the same object while the rows read are)
        if self.norms[0] is not design:
            self.norms = (design, np.einsum("...p,...p->...", design, design))
        norms = self.norms[1]
        x = np.asarray(q.x.value(ctx, plate_of), float)
        return x * x + _largest(q.mean.leaf.value(1, ctx)) * norms

    def reduced(self, call) -> np.ndarray:
        """sum over the child's letters not P's of w_n (x_n^2 + D max|E[w w^T]| |c_n|^2): the
        ``magnitude`` summed as the quadratic's message to P sums it, from sum w_n x_n^2 and
        sum w_n |c_n|^2 kept while the weight, the data and the design read are the same objects."""
        q, ctx, plate_of, letters = self.quadratic, call.ctx, self.factor.plate_of, self.factor.child_letters
        x, design = q.x.value(ctx, plate_of), q.design.value(ctx, plate_of)
        kept = self.sums
        if kept[0] is not call.weight or kept[1] is not x or kept[2] is not design:
            weight = np.ones(np.shape(x)) if call.weight is None else np.asarray(call.weight, float)
            spec = f"{letters},{letters}->{q.precision.letters}"
            xx = np.einsum(spec, weight, np.asarray(x, float) ** 2)
            cc = np.einsum(spec, weight, np.einsum("...p,...p->...", design, design))
            kept = self.sums = (call.weight, x, design, xx, cc)
        return kept[3] + _largest(q.mean.leaf.value(1, ctx)) * kept[4]

    def squares(self, call) -> np.ndarray | None:
        """E[(x_n - c_n^T w)^2] over the child's elements (as ``call.ctx`` restricts them), or
        None where the quadratic cannot be read centered."""
        q, ctx = self.quadratic, call.ctx
        if q is None or call.plate is not None:
            return None
        w = q.mean.leaf.node
        if restricted(ctx) and w.name in ctx.overrides:
            return None
        state = ctx.state if ctx is not None and ctx.state is not None else w.model.state
        natural = None if state is None else state.natural.get(w.name)
        if not isinstance(natural, tuple):
            return None
        if restricted(ctx) and any(p.name in ctx.subset for p in w.plates):
            return None
        plate_of = self.factor.plate_of
        x, m, c = (np.asarray(o.value(ctx, plate_of), float) for o in (q.x, q.mean, q.design))
        with np.errstate(all="ignore"):
            spread = self.spread(natural, c, ctx)
            if spread is None:
                return None
            residual = x - np.einsum(f"{q.design.letters},{q.mean.letters}->{self.factor.child_letters}", c, m)
            out = residual * residual + spread
        return out if np.all(np.isfinite(out)) else None

    def groups(self, ctx, plates: tuple) -> grouping.Groups | None:
        """The child's elements grouped by the element of w (plates ``plates``) each reads (None:
        groups too unequal to pad, ``grouping.PADDED``)."""
        q, f = self.quadratic, self.factor
        child = f.child_shape if ctx is None else ctx.shape(f.child.plates)
        return grouping.groups(q.mean.leaf, f.child_letters, q.mean.letters[:-1], child, plates, ctx)

    def spread(self, natural: tuple, c: np.ndarray, ctx) -> np.ndarray | None:
        """c_n^T Sigma_w c_n over the child's elements, each c_n with the q of the element of w
        it reads: the design's rows regrouped per element (``grouping``, ``Gaussian.spread``);
        None where they cannot be."""
        w = self.quadratic.mean.leaf.node
        if not w.plates:
            return w.family.spread(natural, c)
        g = self.groups(ctx, np.shape(natural[1])[:-2])
        return None if g is None else grouping.ungroup(g, w.family.spread(natural, grouping.regroup(g, c)))

    def contracted(self, call, squares: np.ndarray, output: str, shape: tuple, precision: bool = True) -> np.ndarray:
        """-k/2 sum over the letters not in ``output`` of w_n E[P_n] E[(x_n - c_n^T w)^2] (without
        E[P_n]: the derivative by E[P], the message to P)."""
        q, letters = self.quadratic, self.factor.child_letters
        inputs = [(squares, letters)]
        if precision:
            inputs.append((np.asarray(q.precision.value(call.ctx, self.factor.plate_of), float), q.precision.letters))
        if call.weight is not None:
            inputs.append((np.asarray(call.weight, float), letters))
        spec = ",".join(l for _, l in inputs) + "->" + output
        value = -0.5 * q.coef * np.einsum(spec, *(a for a, _ in inputs))
        return np.broadcast_to(value, shape) if np.shape(value) != tuple(shape) else value

    def bound(self, call, per_element: bool, terms: list, inner):
        q = self.quadratic
        if q is None or not q.terms <= set(terms):
            return inner(call, per_element, terms)
        output, shape = "", ()
        if per_element:
            f = self.factor
            output, shape = f.child_letters, f.child_shape if call.ctx is None else call.ctx.shape(f.child.plates)
        group, rest = inner(call, per_element, sorted(q.terms)), [ti for ti in terms if ti not in q.terms]
        if per_element:
            magnitude = self.contracted(call, self.magnitude(call), output, shape)
        else:
            p = np.asarray(q.precision.value(call.ctx, self.factor.plate_of), float)
            spec = f"{q.precision.letters},{q.precision.letters}->"
            magnitude = -0.5 * q.coef * np.einsum(spec, p, self.reduced(call))
        squares = self.squares(call) if cancelled(group, magnitude) else None
        if squares is not None:
            group = self.contracted(call, squares, output, shape)
        return group + inner(call, per_element, rest)

    def rows(self, call, plates: tuple):
        """(B, z) with B^T B = k sum_n w_n E[P_n] c_n c_n^T and B^T z = k sum_n w_n E[P_n] c_n x_n
        (this factor's message to w, of plates ``plates``, is (B^T z, -1/2 B^T B)): rows
        sqrt(k w_n E[P_n]) c_n and sqrt(k w_n E[P_n]) x_n, per element of w (``grouping``:
        shaped ``plates`` + (rows, D)); None where a product is negative."""
        q, letters, ctx = self.quadratic, self.factor.child_letters, call.ctx
        c = np.asarray(q.design.value(ctx, self.factor.plate_of), float)
        x = np.asarray(q.x.value(ctx, self.factor.plate_of), float)
        p = np.asarray(q.precision.value(ctx, self.factor.plate_of), float)
        scale = q.coef * np.einsum(f"{q.precision.letters},{letters}->{letters}", p, np.ones(c.shape[:-1]))
        if call.weight is not None:
            scale = scale * call.weight
        if np.any(scale < 0):
            return None
        root = np.sqrt(scale)
        if not q.mean.leaf.node.plates:
            return (root[..., None] * c).reshape(-1, c.shape[-1]), (root * x).reshape(-1)
        g = self.groups(ctx, plates)
        return None if g is None else (grouping.regroup(g, root[..., None] * c), grouping.regroup(g, root * x))

    def message(self, node, call, inner):
        total = inner(node, call)
        q = self.quadratic
        if total is not None and q is not None and node is q.mean.leaf.node and call.plate is None \
                and all(leaf is q.mean.leaf for leaf in self.factor.targets if leaf.node is node):
            _gram.declare(total[1], lambda: self.rows(call, np.shape(total[1])[:-2]))
        if total is None or q is None or not isinstance(q.precision.leaf, NodeLeaf) \
                or q.precision.leaf.node is not node or node.clamp is not None:
            return total
        if not cancelled(total[0], -0.5 * q.coef * self.reduced(call)):
            return total
        squares = self.squares(call)
        if squares is None:
            return total
        first = self.contracted(call, squares, q.precision.letters, np.shape(total[0]), precision=False)
        if np.shape(first) != np.shape(total[0]):
            return total
        return (np.array(first, dtype=float),) + tuple(total[1:])
