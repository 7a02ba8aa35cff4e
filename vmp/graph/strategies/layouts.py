"""Each contraction's layout built once per bound factor."""
from __future__ import annotations

from typing import NamedTuple

from ..calls import Einsum, Part
from ..reference import fixed
from .base import Strategy


class Layout(NamedTuple):
    """What one contraction reads, found once."""

    reads: tuple  # one operand per leaf component read (constants each their own)
    which: tuple  # per operand, the position in ``reads`` of the array it takes
    counted: str  # the child letters that no operand, the weight, the output or a selection carries


class Layouts(Strategy):
    """The reference's contraction (``Reference.contraction``)

        coef * sum_{letters not in the output} w_n prod_{o in ops} E[u_o]

    with its structure found once: which operands read one leaf component (one array read for
    them all, so that x (x) x is one array twice) and which child letters no operand, the weight,
    the output or a selection carries (summed as ones). Each evaluation then reads the arrays
    and hands the same ``Einsum`` to the einsum chain.

    Cache: per (term, operand position or None for a bound term, output letters, whether a
    slice is selected, whether a weight multiplies) one ``Layout`` (the selected letter is the
    one the output lacks). A bound factor's terms are fixed, so the key names the operands;
    nothing invalidates a layout (a factor bound again builds a new evaluator). A contraction
    without a key goes to the reference."""

    name = "layouts"
    hooks = ("contraction",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.layouts: dict = {}

    def layout(self, c, weighted: bool) -> Layout:
        first: dict = {}
        which = tuple(first.setdefault((id(o.leaf), o.comp) if o.leaf is not None else id(o), len(first)) for o in c.ops)
        reads = tuple({k: o for o, k in zip(c.ops, which)}.values())
        f = self.factor
        carried = set("".join(o.letters for o in c.ops)).union(c.output, c.select or ())
        if weighted:
            carried.update(f.child_letters)
        counted = "".join(ch for ch in f.child_letters if ch not in carried)
        return Layout(reads, which, counted)

    def contraction(self, c, call, inner):
        if not c.key:
            return inner(c, call)
        key = (c.key, c.output, c.select is None, call.weight is None)
        lay = self.layouts.get(key)
        if lay is None:
            lay = self.layouts[key] = self.layout(c, call.weight is not None)
        ctx, f = call.ctx, self.factor
        values = [o.value(ctx, f.plate_of) for o in lay.reads]
        inputs = [(values[k], o.letters) for k, o in zip(lay.which, c.ops)]
        if call.weight is not None:
            inputs.append((call.weight, f.child_letters))
        if c.select:
            inputs = [fixed(v, letters, c.select) for v, letters in inputs]
        shape = tuple(f.size(ch, ctx) for ch in lay.counted) if lay.counted else ()
        return Part(self.evaluator.einsum(Einsum(inputs, c.output, c.shape, c.coef, lay.counted, shape), call))
