"""Deterministic annealing (Mandt et al., Variational Tempering, section 2.2).

The factors of the data plate (the likelihood and the local priors) are weighted 1/T_t; the
priors of the global nodes are not. T_t falls to 1; at T = 1 the policy is switched off exactly
(no weight is applied), so a run that ends at T = 1 optimizes the true bound.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .base import Policy


class Annealing(Policy):
    def __init__(self, schedule: Callable[[int], float] | Sequence[float]):
        """``schedule``: T as a function of the step t (t = 1, 2, ...) or a sequence of
        temperatures (the last one is kept after it ends). Temperatures must be >= 1."""
        self.schedule = schedule

    @classmethod
    def linear(cls, start: float, steps: int) -> "Annealing":
        """T falls linearly from ``start`` to 1 over ``steps`` steps."""
        return cls(lambda t: max(1.0, start + (1.0 - start) * (t - 1) / max(steps - 1, 1)))

    @classmethod
    def geometric(cls, start: float, steps: int) -> "Annealing":
        """T falls geometrically from ``start`` to 1 over ``steps`` steps."""
        return cls(lambda t: max(1.0, start ** (1.0 - (t - 1) / max(steps - 1, 1))))

    def temperature(self, t: int) -> float:
        if callable(self.schedule):
            temp = float(self.schedule(t))
        else:
            seq = self.schedule
            temp = float(seq[min(t, len(seq)) - 1])
        if not temp >= 1.0 or not np.isfinite(temp):
            raise ValueError(f"Annealing: temperatures must be finite and >= 1, got {temp} at step {t}")
        return temp

    def weights(self, t, rows, rng, st):
        temp = self.temperature(t)
        if temp == 1.0:
            return None, None
        return 1.0 / temp, 1.0 / temp

    def tempered_weight(self, t, rows, st):
        temp = self.temperature(max(t, 1))
        return None if temp == 1.0 else 1.0 / temp

    def record(self, t, rows, st):
        return {"temperature": self.temperature(t)}
