"""Sums over the child's plates contracted first and kept between the messages and the bound."""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from ...factors.terms import DIRECT
from ..leaves import memoizable
from .base import Strategy

#: arrays of ones kept (one per shape of the child plates a term does not read: the full data
#: plate, and a minibatch's sizes)
ONES_KEPT = 4


class Sum(NamedTuple):
    operands: list  # weak references
    value: np.ndarray


class PlateSums(Strategy):
    """The operands over the child's plates n, where n is summed out, contracted first to what
    the other operands and the output need:

        sum_n prod_o E[u_o] = sum_{rest} (prod_{o off n} E[u_o]) (sum_n prod_{o on n} E[u_o]),

    (sum_n E[z_nk] x_n, sum_n E[z_nk], ...: small), so that the messages to several parents and
    the bound that read the same data statistics between two updates of a local form them once.

    Caches: per plate-sum structure (the operands' letters, the sum's), one ``Sum`` (weak
    references to its operands, the value), serving while the operands are the same objects;
    kept only in a ``memoizable`` Context (a minibatch's moments may be written in place), but
    split the same way in any, so one Chunked block keeps Serial's bits. The ones over child
    letters no operand carries (a term's count of elements), read-only, per shape, the last
    ONES_KEPT, so that their sum is kept too."""

    name = "plate_sums"
    hooks = ("einsum",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.sums: dict = {}
        self.ones_kept: dict = {}

    def ones(self, shape: tuple[int, ...]) -> np.ndarray:
        ones = self.ones_kept.pop(shape, None)
        if ones is None:
            ones = np.ones(shape)
            ones.flags.writeable = False
        self.ones_kept[shape] = ones
        if len(self.ones_kept) > ONES_KEPT:
            del self.ones_kept[next(iter(self.ones_kept))]
        return ones

    def einsum(self, e, call, inner):
        inputs = e.inputs + [(self.ones(e.counted_shape), e.counted)] if e.counted else e.inputs
        e = e._replace(inputs=inputs, counted="", counted_shape=())
        summed = set(self.factor.child_letters) - set(e.output)
        local = [k for k, (_, letters) in enumerate(inputs) if summed & set(letters)]
        if not local or sum(np.size(inputs[k][0]) for k in local) <= DIRECT:
            return inner(e, call)
        rest = [inputs[k] for k in range(len(inputs)) if k not in local]
        need = set(e.output).union(*(letters for _, letters in rest))
        letters = "".join(dict.fromkeys(ch for k in local for ch in inputs[k][1] if ch in need))
        key = (",".join(inputs[k][1] for k in local), letters)
        arrays = [inputs[k][0] for k in local]
        keep = memoizable(call.ctx)
        hit = self.sums.get(key) if keep else None
        if hit is not None and len(hit.operands) == len(arrays) and all(r() is a for r, a in zip(hit.operands, arrays)):
            value = hit.value
        else:
            value = inner(e._replace(inputs=[inputs[k] for k in local], output=letters, shape=(), coef=1.0,
                                     plate_sum=True), call)
            if keep:
                try:
                    self.sums[key] = Sum([weakref.ref(a) for a in arrays], value)
                except TypeError:  # an operand that cannot be referenced weakly: not kept
                    pass
        return inner(e._replace(inputs=rest + [(value, letters)]), call)
