"""A term's coefficient multiplied into its smallest operand, not into the result."""
from __future__ import annotations

import math

import numpy as np

from ...factors.terms import DIRECT
from .base import Strategy


class Coefficients(Strategy):
    """c * contract(inputs) = contract(inputs with c times one operand read once): where the
    output has more than DIRECT elements, the coefficient multiplies the smallest operand read
    once if it is smaller than the output (a pass over it instead of over the result). No
    cache."""

    name = "coefficients"
    hooks = ("einsum",)

    def einsum(self, e, call, inner):
        if e.coef == 1.0:
            return inner(e, call)
        sizes = {ch: n for v, letters in e.inputs for ch, n in zip(letters, np.shape(v))}
        out_size = math.prod(sizes[ch] for ch in e.output if ch in sizes)
        if out_size <= DIRECT:
            return inner(e, call)
        once = [k for k, (v, _) in enumerate(e.inputs) if sum(u is v for u, _ in e.inputs) == 1]
        k = min(once, key=lambda k: np.size(e.inputs[k][0]), default=None)
        if k is None or np.size(e.inputs[k][0]) >= out_size:
            return inner(e, call)
        inputs = list(e.inputs)
        inputs[k] = (e.coef * inputs[k][0], inputs[k][1])
        return inner(e._replace(inputs=inputs, coef=1.0), call)
