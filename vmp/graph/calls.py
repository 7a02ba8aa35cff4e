"""The values an evaluation passes between the reference evaluator's methods and the strategies
around them (``reference.py``, ``strategies/``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .binding import Operand
from .leaves import Context


class Read(NamedTuple):
    """Operand ``position`` of term ``term`` (coefficient ``coef``) reads a target leaf."""

    term: int
    position: int
    coef: float
    operand: Operand
    rest: tuple  # the term's other operands


class Call(NamedTuple):
    """One evaluation: the weight over the child's elements (restricted by the Context, barren
    elements at 0), the Context, the slice ``index`` of ``plate`` (coupled elements), and
    whether memos may serve a bound (``cached``)."""

    weight: np.ndarray | None
    ctx: Context | None
    plate: object = None
    index: int | None = None
    cached: bool = True


class Contraction(NamedTuple):
    """coef * sum over the letters not in ``output`` of w_n prod_{o in ops} E[u_o]; ``target``:
    the operand removed (a message) or None (a bound term); ``select``: letters fixed at an
    index; ``key``: (term, operand position) for a message, (term, None) for a bound term."""

    ops: tuple
    output: str
    shape: tuple
    coef: float = 1.0
    target: Operand | None = None
    select: dict | None = None
    key: tuple = ()


class Einsum(NamedTuple):
    """coef * contraction of ``inputs`` ((array, letters)) and ones over ``counted`` (sizes
    ``counted_shape``) to ``output``, of shape ``shape`` (a plate sum's, () with coef 1: its
    letters are all carried); ``plate_sum``: a sum over the child's plates alone."""

    inputs: list
    output: str
    shape: tuple
    coef: float = 1.0
    counted: str = ""
    counted_shape: tuple = ()
    plate_sum: bool = False


class Part(NamedTuple):
    """One partial derivative: its array in the leaf's layout, or already in the node's
    (``node_level``); ``exact``: exactly symmetric in its last two axes as formed; ``kept``:
    the form a strategy keeps it in (or None)."""

    value: np.ndarray
    node_level: bool = False
    exact: bool = False
    kept: object = None


class Sums(NamedTuple):
    """A leaf's message per component: its shape in the leaf's layout, its parts, their sum in
    the leaf's layout and in the node's (None where there is none)."""

    shapes: list
    parts: list
    leaf_level: list
    node_level: list
