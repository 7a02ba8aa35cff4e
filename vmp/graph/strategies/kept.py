"""Kept derivatives: the bound's terms that read an operand, as one inner product with the
message last sent to it."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...factors.terms import inner_product
from ..leaves import IndicatorLeaf, memoizable, moments_of, restricted
from .base import Strategy, formed, same, stamps


class Entry(NamedTuple):
    """A component's message m = sum_t c_t d(term_t)/d(operand) and what it was formed from."""

    leaf: object
    comp: int
    reads: list  # the Reads of the component
    stamps: list  # per read, the moments objects of its other operands
    weight: object
    leaf_level: np.ndarray | None  # in the leaf's layout
    node_level: object  # in the node's layout: an array, a Deferred, or None
    terms: frozenset


class KeptDerivatives(Strategy):
    """Each term is linear in each operand, so while the other operands of the terms that read
    a component are unchanged, their sum in the bound is <m, E[u]> (Winn & Bishop eq. (5)):
    one inner product with the message m last formed for it, instead of a contraction per term.
    The engine also reads the node at its optimum through them (``held``/``standing``).

    Cache: per (target leaf, component), one ``Entry``, replaced by every message to the leaf
    over all its elements (no slice) in a ``memoizable`` Context; an entry serves while its
    weight and every moments object it read are the same objects. A component that a term
    reads twice is not kept (the product would count it twice)."""

    name = "kept_derivatives"
    hooks = ("sums", "bound")

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.kept: dict = {}
        #: per node, the terms that read it
        self.reading = {node.name: {ti for ti, t in enumerate(self.factor.terms)
                                    if any(o.leaf is not None and o.leaf.node is node for o in t.operands)}
                        for node in self.factor.nodes()}

    def sums(self, call, leaf, inner):
        s = inner(call, leaf)
        if call.plate is None and memoizable(call.ctx):
            self.remember(call, leaf, s)
        return s

    def remember(self, call, leaf, s) -> None:
        reads = self.evaluator.reads[leaf]
        for comp, parts in enumerate(s.parts):
            self.kept.pop((leaf, comp), None)
            mine = [r for r in reads if r.operand.comp == comp]
            terms = [r.term for r in mine]
            if not mine or len(set(terms)) != len(terms):
                continue
            node_parts = [p for p in parts if p.node_level]
            node_level = s.node_level[comp]
            if len(node_parts) == 1 and node_parts[0].kept is not None and node_level is node_parts[0].value:
                node_level = node_parts[0].kept  # the array sent out stays writeable
            for kept in (s.leaf_level[comp], node_level):
                if isinstance(kept, np.ndarray):
                    kept.flags.writeable = False  # the message it sums into must not change it
            self.kept[leaf, comp] = Entry(leaf, comp, mine, [stamps(r.rest, call.ctx) for r in mine], call.weight,
                                          s.leaf_level[comp], node_level, frozenset(terms))

    def stands(self, e: Entry, weight, ctx) -> bool:
        return e.weight is weight and all(same(st, stamps(r.rest, ctx)) for r, st in zip(e.reads, e.stamps))

    def bound(self, call, per_element: bool, terms: list, inner):
        if per_element or not call.cached or not memoizable(call.ctx):
            return inner(call, per_element, terms)
        ctx, remaining, total = call.ctx, set(terms), 0.0
        for e in reversed(list(self.kept.values())):
            if not e.terms <= remaining or not self.stands(e, call.weight, ctx):
                continue
            o = e.reads[0].operand
            if e.leaf_level is not None:
                total = total + inner_product(e.leaf_level, o.value(ctx, self.factor.plate_of))
            if e.node_level is not None:
                total = total + inner_product(formed(e.node_level), moments_of(o.leaf.node, ctx)[o.comp])
            remaining -= e.terms
        return total + inner(call, per_element, [ti for ti in terms if ti in remaining])

    def held(self, node) -> tuple | None:
        """The entries of the messages to ``node``, for :meth:`standing`; None where a term
        reads it through an affine map (a Bernoulli's indicator (1 - p, p)): there a term is
        not <message, E[u]>."""
        mine = [leaf for leaf in self.factor.targets if leaf.node is node]
        if any(isinstance(leaf, IndicatorLeaf) for leaf in mine):
            return None
        return tuple(e for e in self.kept.values() if e.leaf in mine)

    def standing(self, node, weight, ctx, held: tuple) -> frozenset | None:
        """The terms that read ``node`` if the entries ``held`` are still kept and stand at
        ``weight`` (the bound's) and ``ctx``, and between them cover every such term: their
        sum is then <message, E[u(node)]>. None otherwise."""
        if restricted(ctx):
            return None
        terms: set = set()
        for e in held:
            if self.kept.get((e.leaf, e.comp)) is not e or not self.stands(e, weight, ctx):
                return None
            terms |= e.terms
        return frozenset(terms) if terms == self.reading[node.name] else None
