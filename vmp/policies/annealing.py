"""Deterministic annealing (Mandt et al., Variational Tempering, section 2.2).

The factors of the data plate (the likelihood and the local priors) are weighted 1/T_t; the
priors of the global nodes are not. T_t falls to 1; at T = 1 the policy is switched off exactly
(no weight is applied), so a run that ends at T = 1 optimizes the true bound.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..errors import OptionError
from ..domains import integer, number, refuse
from ..inference.policy import Policy


def _start_and_steps(kind: str, start, steps) -> tuple[float, int]:
    return (number(f"Annealing.{kind}(start=)", start, 1.0),
            integer(f"Annealing.{kind}(steps=)", steps, 1))


class Annealing(Policy):
    def __init__(self, schedule: Callable[[int], float] | Sequence[float]):
        """``schedule``: T as a function of the step t (t = 1, 2, ...) or a sequence of
        temperatures (the last one is kept after it ends). Temperatures must be >= 1."""
        if not callable(schedule):
            if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence) and not isinstance(
                    schedule, np.ndarray):
                raise refuse("Annealing(schedule=)", "a function of the step t or a sequence of temperatures >= 1",
                             schedule)
            for t in range(1, len(schedule) + 1):
                self._checked(schedule[t - 1], t)
            if not len(schedule):
                raise refuse("Annealing(schedule=)", "a non-empty sequence of temperatures >= 1", schedule)
        self.schedule = schedule

    @classmethod
    def linear(cls, start: float, steps: int) -> "Annealing":
        """T falls linearly from ``start`` to 1 over ``steps`` steps."""
        start, steps = _start_and_steps("linear", start, steps)
        return cls(lambda t: max(1.0, start + (1.0 - start) * (t - 1) / max(steps - 1, 1)))

    @classmethod
    def geometric(cls, start: float, steps: int) -> "Annealing":
        """T falls geometrically from ``start`` to 1 over ``steps`` steps."""
        start, steps = _start_and_steps("geometric", start, steps)
        return cls(lambda t: max(1.0, start ** (1.0 - (t - 1) / max(steps - 1, 1))))

    def temperature(self, t: int) -> float:
        if callable(self.schedule):
            return self._checked(self.schedule(t), t)
        seq = self.schedule
        return float(seq[min(t, len(seq)) - 1])

    @staticmethod
    def _checked(temp, t: int) -> float:
        """``temp`` as a float, or an OptionError: a temperature is a finite number >= 1."""
        try:
            return number("Annealing: a temperature", temp, 1.0)
        except OptionError as err:
            raise OptionError(f"{err} at step {t}") from None

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
