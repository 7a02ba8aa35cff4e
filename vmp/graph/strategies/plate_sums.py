"""Sums over the child's plates contracted first and kept between the messages and the bound."""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from ...factors.terms import DIRECT
from ..calls import Einsum
from ..leaves import memoizable
from .base import Strategy

#: arrays of ones kept (one per shape of the child plates a term does not read: the full data
#: plate, and a minibatch's sizes)
ONES_KEPT = 4


class Sum(NamedTuple):
    operands: list  # weak references
    value: np.ndarray


class Split(NamedTuple):
    local: tuple  # the inputs over a summed child letter
    rest: tuple  # the others
    letters: str  # what their sum keeps
    key: tuple  # the sum's key in ``PlateSums.sums``


def elements(arrays: list) -> int:
    """The number of elements of ``arrays`` together."""
    n = 0
    for a in arrays:
        n += a.size if isinstance(a, np.ndarray) else np.size(a)
    return n


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
    ONES_KEPT, so that their sum is kept too. The split of a contraction's inputs, per (input
    letters, output letters): structure, never invalidated."""

    name = "plate_sums"
    hooks = ("einsum",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.sums: dict = {}
        self.splits: dict = {}
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

    def split(self, letters: tuple, output: str) -> Split | None:
        """Which inputs carry a summed child letter (``local``), the others (``rest``), and the
        letters their sum keeps: structure alone, found once per (input letters, output)."""
        key = (letters, output)
        if key not in self.splits:
            summed = set(self.factor.child_letters) - set(output)
            local = tuple(k for k, s in enumerate(letters) if summed & set(s))
            rest = tuple(k for k in range(len(letters)) if k not in local)
            need = set(output).union(*(letters[k] for k in rest))
            kept = "".join(dict.fromkeys(ch for k in local for ch in letters[k] if ch in need))
            self.splits[key] = Split(local, rest, kept, (",".join(letters[k] for k in local), kept)) if local else None
        return self.splits[key]

    def einsum(self, e, call, inner):
        if e.counted:
            e = Einsum(e.inputs + [(self.ones(e.counted_shape), e.counted)], e.output, e.shape, e.coef,
                       plate_sum=e.plate_sum)
        inputs = e.inputs
        if elements([v for v, _ in inputs]) <= DIRECT:  # no sum over the child's plates can be larger
            return inner(e, call)
        sp = self.split(tuple([letters for _, letters in inputs]), e.output)
        if sp is None or elements([inputs[k][0] for k in sp.local]) <= DIRECT:
            return inner(e, call)
        arrays = [inputs[k][0] for k in sp.local]
        keep = memoizable(call.ctx)
        hit = self.sums.get(sp.key) if keep else None
        if hit is not None and len(hit.operands) == len(arrays) and all(r() is a for r, a in zip(hit.operands, arrays)):
            value = hit.value
        else:
            value = inner(Einsum([inputs[k] for k in sp.local], sp.letters, (), 1.0, plate_sum=True), call)
            if keep:
                try:
                    self.sums[sp.key] = Sum([weakref.ref(a) for a in arrays], value)
                except TypeError:  # an operand that cannot be referenced weakly: not kept
                    pass
        return inner(Einsum([inputs[k] for k in sp.rest] + [(value, sp.letters)], e.output, e.shape, e.coef,
                            plate_sum=e.plate_sum), call)
