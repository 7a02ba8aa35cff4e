"""Contraction plans kept between contractions."""
from __future__ import annotations

from ...factors.terms import PLANS
from .base import Strategy


class Plans(Strategy):
    """The evaluator's contractions plan through the process's ``terms.PLANS`` (greedy einsum
    paths, chunking and the symmetric-pair rewrite, which depend on the subscripts, the shapes
    and which operands are one array alone). Cache: ``terms.PlanCache``, an LRU of
    ``terms.PLAN_CACHE_SIZE`` plans shared by every factor; nothing invalidates a plan.
    Without it each contraction is planned afresh (the same plan)."""

    name = "plans"

    def __init__(self, evaluator):
        super().__init__(evaluator)
        evaluator.plans = PLANS
