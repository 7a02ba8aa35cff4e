"""The auxiliary allocation of a sum of positive variables (Poisson factorization).

For m = sum_k theta_k beta_k with independent Gamma q's (``vmp.dot`` of two Gamma nodes over a
shared plate K), E[m] = sum_k E[theta_k] E[beta_k] is multilinear, and E[log m] is bounded by
Jensen's inequality with an allocation phi over K (Gopalan et al. 2015, eq. (3)-(5); the
multinomial q of the latent counts y_k whose sum is y):

    E[log m] >= sum_k phi_k (E[log theta_k] + E[log beta_k] - log phi_k),

with equality at phi_k ∝ exp(E[log theta_k] + E[log beta_k]). The bound enters a factor with a
non-negative coefficient (a Poisson's y, a Gamma's shape, a precision's 1/2), so the factor's
expected log-density stays a lower bound. phi is recomputed from the current moments wherever
it is read, so the bound is the collapsed max over phi: its gradient in the moments of theta is
the message at that phi (the envelope theorem), and a node's update at fixed phi followed by the
new phi is coordinate ascent (Gopalan et al.'s batch algorithm). The bound is convex, not
linear, in E[log theta] and E[log beta]; every other term stays multilinear.
"""
from __future__ import annotations

import numpy as np

from .leaves import Context, Leaf, restricted


class AllocationLeaf(Leaf):
    """phi (component 0) and phi log phi (component 1) over the letters ``letters`` (the dot's
    plates, then K last), from the E[log] operands of the two sides. Not a target: no message
    goes to phi (it is optimal at every evaluation)."""

    def __init__(self, parts: list, letters: str, name: str):
        self.parts, self.letters, self.name = parts, letters, name
        #: (the moments objects of the parts, (phi, phi log phi)) of the last unrestricted read
        self._memo: tuple = ((), None)

    def _aligned(self, operand, ctx) -> np.ndarray:
        value = operand.value(ctx)
        order = [operand.letters.index(ch) for ch in self.letters if ch in operand.letters]
        value = np.transpose(value, order)
        return value.reshape([value.shape[order.index(operand.letters.index(ch))] if ch in operand.letters else 1
                              for ch in self.letters])

    def _compute(self, ctx: Context | None) -> tuple[np.ndarray, np.ndarray]:
        s = sum(self._aligned(o, ctx) for o in self.parts)
        s = s - s.max(axis=-1, keepdims=True)
        phi = np.exp(s)
        total = phi.sum(axis=-1, keepdims=True)
        phi /= total
        s -= np.log(total)
        return phi, phi * s

    def _values(self, ctx: Context | None) -> tuple[np.ndarray, np.ndarray]:
        if restricted(ctx):
            return self._compute(ctx)
        key = tuple(o.leaf.stamp(ctx) for o in self.parts)
        old, values = self._memo
        if values is None or len(old) != len(key) or any(a is not b for a, b in zip(old, key)):
            values = self._compute(ctx)
            self._memo = (key, values)
        return values

    def value(self, comp: int, ctx: Context | None = None) -> np.ndarray:
        return self._values(ctx)[comp]

    def stamp(self, ctx: Context | None = None):
        """phi itself: a new array whenever the moments it is computed from change; in a
        restricted evaluation (phi recomputed at each read) a new object at each call, never None
        (None says "reads no q", and a stable Context's memos would keep the term as a constant)."""
        return object() if restricted(ctx) else self._values(ctx)[0]
