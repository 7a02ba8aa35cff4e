"""A term's coefficient multiplied into its smallest operand, not into the result."""
from __future__ import annotations

import math

import numpy as np

from ...factors.terms import DIRECT
from .base import Strategy


class Coefficients(Strategy):
    """c * contract(inputs) = contract(inputs with c times one operand read once): where the
    output has more than DIRECT elements, the coefficient multiplies the smallest operand read
    once if it is smaller than the output (a pass over it instead of over the result). Cache:
    where each output letter's size is read, per (input letters, output letters): structure,
    never invalidated."""

    name = "coefficients"
    hooks = ("einsum",)

    def __init__(self, evaluator):
        super().__init__(evaluator)
        self.axes: dict = {}

    def output_axes(self, letters: tuple, output: str) -> tuple:
        """(input, axis) of the last input carrying each output letter that an input carries:
        structure, per (input letters, output letters)."""
        key = (letters, output)
        if key not in self.axes:
            last = {ch: (k, s.rindex(ch)) for k, s in enumerate(letters) for ch in s}
            self.axes[key] = tuple(last[ch] for ch in output if ch in last)
        return self.axes[key]

    def einsum(self, e, call, inner):
        if e.coef == 1.0 or math.prod(e.shape) <= DIRECT:  # the output's elements bound out_size
            return inner(e, call)
        axes = self.output_axes(tuple(letters for _, letters in e.inputs), e.output)
        out_size = math.prod(np.shape(e.inputs[k][0])[axis] for k, axis in axes)
        if out_size <= DIRECT:
            return inner(e, call)
        once = [k for k, (v, _) in enumerate(e.inputs) if sum(u is v for u, _ in e.inputs) == 1]
        k = min(once, key=lambda k: np.size(e.inputs[k][0]), default=None)
        if k is None or np.size(e.inputs[k][0]) >= out_size:
            return inner(e, call)
        inputs = list(e.inputs)
        inputs[k] = (e.coef * inputs[k][0], inputs[k][1])
        return inner(e._replace(inputs=inputs, coef=1.0), call)
