"""Messages and bound terms that read no q: the same at every sweep while the data are."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..leaves import memoizable, moments_of
from .base import Strategy, same


class Held(NamedTuple):
    weight: object
    data: tuple
    value: object


def data_key(ops, ctx) -> tuple | None:
    """None if some operand reads a q; else the moments objects of the observed nodes the
    operands read (new data are new objects)."""
    data = []
    for o in ops:
        if o.leaf is None:
            continue
        if o.leaf.stamp(ctx) is not None:
            return None
        if o.leaf.node is not None:
            data.append(moments_of(o.leaf.node, ctx))
    return tuple(data)


class ConstantMessages(Strategy):
    """A message whose terms read no q besides the target's (a prior with fixed
    hyperparameters, terms of data alone) is sum_t c_t d(term_t)/d(operand) at the same
    numbers every sweep: kept, read-only.

    Cache: per node, one entry (the weight, the moments objects of the observed nodes the
    terms read, the message); it serves while the weight and those data are the same objects.
    Not for a slice of coupled elements, a partially observed node, or a Context that is not
    ``memoizable``."""

    name = "constant_messages"
    hooks = ("message",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.kept: dict = {}
        #: per node, per term reading it, the other operands (None where the term reads it twice)
        self.rests: dict = {}
        for node in self.factor.nodes():
            mine = [leaf for leaf in self.factor.targets if leaf.node is node]
            rests = []
            for t in self.factor.terms:
                ops = [o for o in t.operands if o.leaf is not None]
                if any(o.leaf in mine for o in ops):
                    rest = [o for o in ops if o.leaf not in mine]
                    rests.append(rest if len(rest) == len(ops) - 1 else None)
            self.rests[node.name] = rests

    def key(self, node, ctx) -> tuple | None:
        """None if the message to ``node`` reads some q; else the data it reads."""
        data = []
        for rest in self.rests[node.name]:
            held = None if rest is None else data_key(rest, ctx)
            if held is None:
                return None
            data.extend(held)
        return tuple(data)

    def message(self, node, call, inner):
        key = None
        if call.plate is None and node.clamp is None and memoizable(call.ctx):
            key = self.key(node, call.ctx)
        if key is not None:
            held = self.kept.get(node.name)
            if held is not None and held.weight is call.weight and same(held.data, key):
                return held.value
        total = inner(node, call)
        if key is not None and total is not None:
            for m in total:
                if isinstance(m, np.ndarray):
                    m.flags.writeable = False
            self.kept[node.name] = Held(call.weight, key, total)
        return total


class ConstantTerms(Strategy):
    """A bound term that reads no q (a prior's log-normalizer) is kept per weight.

    Cache: per term, one entry (the weight, the moments objects of the observed nodes it reads,
    c_t times its value); it serves while those are the same objects. Not for a bound per
    element, a bound asked uncached, or a Context that is not ``memoizable``."""

    name = "constant_terms"
    hooks = ("term",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.kept: dict = {}

    def term(self, call, ti: int, per_element: bool, inner):
        if per_element or not call.cached or not memoizable(call.ctx):
            return inner(call, ti, per_element)
        key = data_key(self.factor.terms[ti].operands, call.ctx)
        if key is None:
            return inner(call, ti, per_element)
        held = self.kept.get(ti)
        if held is None or held.weight is not call.weight or not same(held.data, key):
            held = self.kept[ti] = Held(call.weight, key, inner(call, ti, per_element))
        return held.value
