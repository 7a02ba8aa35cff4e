"""An observed child's terms folded into one product over its statistics (``graph/folded.py``)."""
from __future__ import annotations

from ..folded import Columns, DataRead, FoldedTerm, applies, product, reads, reduction, split, worth
from ..leaves import memoizable
from ..calls import Part
from .base import Strategy


class Folding(Strategy):
    """For an observed exponential-family child, E[log p] = eta(pa)^T u(x) - A(pa) (Winn &
    Bishop): the message to a per-element target (a gate's E[z_nk]) is one product of the
    statistics table [x_i x_j (i <= j), x, 1] by the stacked coefficients of every term reading
    it, m_nk = sum_t c_t <s_t(x_n), G_t[k]> (``folded.product``), and the plate sums that
    ``PlateSums`` asks for (sum_n r_nk x_n x_n^T, sum_n r_nk x_n, sum_n r_nk) come from one
    product of the transposed table by E[z] (``folded.reduction``).

    Caches: the splits of each read (structure, built with the factor); the data with its rows
    last, for the last array read, and the buffer the table's chunks are written in, of at most
    ``folded.CHUNK`` elements (``folded.Columns``: one entry each); per data read of the child,
    one ``folded.Stack`` (V and the partners it was formed from, compared by identity), in a
    ``memoizable`` Context only. Messages of at most ``folded.MIN_SIZE`` elements, slices and
    terms of other shapes go term by term."""

    name = "folding"
    hooks = ("component", "einsum")

    def __init__(self, evaluator):
        super().__init__(evaluator)
        f = self.factor
        self.data_reads = reads(f.terms, f.child) if f.child.observed else {}
        self.splits = {(r.term, r.position): split(r.rest, r.operand.letters, f.child, f.child_letters)
                       for leaf_reads in evaluator.reads.values() for r in leaf_reads}
        self.columns = Columns()
        self.stacks: dict = {}

    def component(self, call, leaf, comp: int, reads_: list, shapes: list, inner):
        if call.plate is not None or not applies(leaf, shapes):
            return inner(call, leaf, comp, reads_, shapes)
        n_lead = len(self.factor.child_letters)
        folds = [(r, self.splits[r.term, r.position]) for r in reads_]
        others = [r for r, s in folds if s is None]
        terms = [FoldedTerm(r.coef, s, r.operand.letters[n_lead:]) for r, s in folds if s is not None]
        if not worth(terms):
            folded_reads = [r for r, s in folds if s is not None]
            return inner(call, leaf, comp, others, shapes) + inner(call, leaf, comp, folded_reads, shapes)
        value = product(terms, n_lead, call.weight, call.ctx, self.factor.plate_of, shapes[comp], self.columns,
                        self.evaluator.plans)
        return [Part(value)] + inner(call, leaf, comp, others, shapes)

    def einsum(self, e, call, inner):
        if not e.plate_sum or not self.data_reads or not memoizable(call.ctx):
            return inner(e, call)
        data = [DataRead((leaf, comp), leaf.value(comp, call.ctx), twice)
                for (leaf, comp), twice in self.data_reads.items()]
        value = reduction(e.inputs, e.output, self.factor.child_letters, data, self.stacks, self.columns)
        return inner(e, call) if value is None else value
