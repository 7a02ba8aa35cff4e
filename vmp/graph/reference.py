"""The reference evaluator: a factor's messages and bound terms by their definition.

A factor's expected log-density is a sum of expanded terms (``binding.py``), each a coefficient
times a product of operands, each operand one moment component E[u_o] of a leaf (a node, a
gather of its rows, a constant...) with einsum letters, summed over the child's elements n
with their weights w_n (Winn & Bishop eq. (5)):

    E[log p(x | pa)] = sum_t c_t sum_letters w_n prod_{o in t} E[u_o].

Each term is linear in each operand, so the message to a leaf is the partial derivative

    d E[log p] / d E[u_o] = sum_{t reads o} c_t sum_{letters not o's} w_n prod_{o' in t, o' != o} E[u_o'],

the term with the operand removed, contracted to the operand's letters. The leaf maps it back
to its node (``Leaf.to_node``: a gather scatters its rows, an indicator applies its chain rule,
an event gather scatters to the observed categories); a partially observed node's Clamp frees
its observed elements (they send nothing); the family symmetrizes. A bound term is the full
contraction. Child letters that no operand carries are summed as ones (a term's count of
elements). Everything else an evaluation does is a strategy (``vmp/graph/strategies/``); the
values an evaluation passes around are in ``calls.py``.
"""
from __future__ import annotations

from itertools import zip_longest

import numpy as np

from ..factors.terms import PlanCache, accumulate, contract_to, scale
from .calls import Call, Contraction, Einsum, Part, Read, Sums
from .leaves import EventGatherLeaf

#: no plan kept: the reference plans each contraction afresh
UNCACHED = PlanCache(0)


def reads_of(terms: list, leaf) -> list[Read]:
    """Every operand of every term that reads ``leaf``, in term order."""
    return [Read(ti, i, t.coef, o, tuple(t.operands[:i] + t.operands[i + 1:]))
            for ti, t in enumerate(terms) for i, o in enumerate(t.operands) if o.leaf is leaf]


def fixed(value: np.ndarray, letters: str, select: dict) -> tuple[np.ndarray, str]:
    """``value`` with the letters of ``select`` taken at their index (and dropped)."""
    for ch, idx in select.items():
        if ch in letters:
            value = np.take(value, idx, axis=letters.index(ch))
            letters = letters.replace(ch, "")
    return value, letters


class Reference:
    """Messages and bound terms of one bound factor (``CompiledFactor``), by definition."""

    plans: PlanCache = UNCACHED

    def __init__(self, factor):
        self.factor = factor
        self.child_letters = factor.child_letters
        self.reads = {leaf: reads_of(factor.terms, leaf) for leaf in factor.targets}
        #: per leaf, its reads by the moment component they read
        self.by_component = {leaf: {r.operand.comp: [q for q in reads if q.operand.comp == r.operand.comp]
                                    for r in reads} for leaf, reads in self.reads.items()}

    # ----- one contraction ---------------------------------------------------------------
    def inputs(self, ops, call: Call, select: dict | None = None) -> list:
        """(E[u_o], letters) per operand, each leaf component read once (so that x (x) x is one
        array twice), then the weight over the child's letters; ``select``'s letters fixed."""
        plate_of, read, out = self.factor.plate_of, {}, []
        for o in ops:
            key = (id(o.leaf), o.comp) if o.leaf is not None else id(o)
            if key not in read:
                read[key] = o.value(call.ctx, plate_of)
            out.append((read[key], o.letters))
        if call.weight is not None:
            out.append((call.weight, self.child_letters))
        return [fixed(v, letters, select) for v, letters in out] if select else out

    def contraction(self, c: Contraction, call: Call) -> Part:
        """coef * sum_{letters not in the output} w_n prod_{o in ops} E[u_o], the child's letters
        that no operand carries summed as ones (the term's count of elements)."""
        inputs = self.inputs(c.ops, call, c.select)
        carried = set("".join(letters for _, letters in inputs)).union(c.output, c.select or ())
        counted = "".join(ch for ch in self.child_letters if ch not in carried)
        shape = tuple(self.factor.size(ch, call.ctx) for ch in counted)
        return Part(self.einsum(Einsum(inputs, c.output, c.shape, c.coef, counted, shape), call))

    def einsum(self, e: Einsum, call: Call) -> np.ndarray:
        """coef * einsum(inputs, ones over ``counted`` -> output)."""
        ones = [(np.ones(e.counted_shape), e.counted)] if e.counted else []
        return scale(e.coef, contract_to(e.inputs + ones, e.output, e.shape, self.plans))

    # ----- messages ----------------------------------------------------------------------
    def component(self, call: Call, leaf, comp: int, reads: list, shapes: list) -> list[Part]:
        """c_t d(term_t)/d(operand) for each read of component ``comp`` of ``leaf``."""
        axis = None if call.plate is None else leaf.plates.index(call.plate)
        parts = []
        for r in reads:
            output, select = r.operand.letters, None
            if axis is not None:
                select = {output[axis]: call.index}
                output = output.replace(output[axis], "")
            c = Contraction(r.rest, output, tuple(shapes[comp]), r.coef, r.operand, select, (r.term, r.position))
            parts.append(self.contraction(c, call))
        return parts

    def sums(self, call: Call, leaf) -> Sums:
        """The parts of each component u_c of the message to ``leaf`` and their sums,
        sum_{t reads u_c} c_t d(term_t)/dE[u_c]."""
        shapes = leaf.shapes(call.ctx)
        if call.plate is not None:
            axis = leaf.plates.index(call.plate)
            shapes = [s[:axis] + s[axis + 1:] for s in shapes]
        reads = self.by_component[leaf]
        parts = [self.component(call, leaf, comp, reads[comp], shapes) if comp in reads else []
                 for comp in range(len(shapes))]
        leaf_level = [[p.value for p in ps if not p.node_level] for ps in parts]
        node_level = [[p.value for p in ps if p.node_level] for ps in parts]
        return Sums(shapes, parts, [accumulate(v) if v else None for v in leaf_level],
                    [accumulate(v) if v else None for v in node_level])

    def leaf_message(self, call: Call, leaf, node) -> tuple[tuple, set]:
        """The message to ``node`` through ``leaf``, and the components known to be exactly
        symmetric as formed."""
        if call.plate is not None and isinstance(leaf, EventGatherLeaf):  # its scatter needs every row
            full, _ = self.leaf_message(call._replace(plate=None, index=None), leaf, node)
            axis = node.plates.index(call.plate)
            return tuple(np.take(m, call.index, axis=axis) for m in full), set()
        s = self.sums(call, leaf)
        ctx = call.ctx
        if any(a is not None for a in s.leaf_level):
            filled = tuple(np.zeros(sh) if a is None else a for a, sh in zip(s.leaf_level, s.shapes))
            # a leaf that reads some of the node's components (an event gather) sends them all
            msg = tuple(m if a is None else m + a for m, a in zip_longest(leaf.to_node(filled, ctx), s.node_level))
        else:
            shapes = node.component_shapes(None if ctx is None else ctx.shape(node.plates))
            if call.plate is not None:
                axis = node.plates.index(call.plate)
                shapes = [sh[:axis] + sh[axis + 1:] for sh in shapes]
            msg = tuple(np.zeros(sh) if a is None else a if a.shape == tuple(sh) else np.zeros(sh) + a
                        for a, sh in zip(s.node_level, shapes))
        exact = {comp for comp, ps in enumerate(s.parts)
                 if s.node_level[comp] is not None and all(p.node_level and p.exact for p in ps)}
        return msg, exact

    def message(self, node, call: Call) -> tuple | None:
        """sum over the leaves of ``node`` of their messages (None if the factor reads no
        leaf of it), freed at a Clamp's observed elements, symmetrized."""
        total = symmetric = None
        for leaf in self.factor.targets:
            if leaf.node is not node:
                continue
            msg, exact = self.leaf_message(call, leaf, node)
            total = msg if total is None else tuple(a + b for a, b in zip(total, msg))
            symmetric = exact if symmetric is None else symmetric & exact
        if total is None:
            return None
        if node.clamp is not None and node is not self.factor.child:
            total = node.clamp.free(total, call.ctx, call.plate, call.index)
            symmetric = set()
        return node.family.symmetrize(total, frozenset(symmetric))

    # ----- the bound ---------------------------------------------------------------------
    def term(self, call: Call, ti: int, per_element: bool):
        """c_t sum_letters w_n prod_o E[u_o]: summed, or per child element."""
        f = self.factor
        output, shape = "", ()
        if per_element:
            output = self.child_letters
            shape = f.child_shape if call.ctx is None else call.ctx.shape(f.child.plates)
        t = f.terms[ti]
        return t.coef * self.contraction(Contraction(tuple(t.operands), output, shape, key=(ti, None)), call).value

    def bound(self, call: Call, per_element: bool, terms: list):
        """sum over ``terms`` (indices) of :meth:`term`."""
        total = 0.0
        for ti in terms:
            total = total + self.term(call, ti, per_element)
        return total
