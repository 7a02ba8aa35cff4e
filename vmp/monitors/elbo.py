"""The bound is not finite, falls over ``patience`` evaluations by more than its noise, or ends
far below the best it reached."""
from __future__ import annotations

import numpy as np

from ..domains import integer, number
from .base import Monitor


class ElboMonitor(Monitor):
    """``every``: evaluate the bound at least every that many iterations (on top of the fit's
    ``evaluate_every``); ``patience``: falls in a row that count as divergence; ``tolerance``:
    relative size a fall must exceed; ``noise``: how many standard deviations of the bound's
    recent changes a fall must exceed (:func:`change_noise`: a stochastic fit's
    evaluated bound moves with q's noise, and a fall within that noise is not a divergence);
    ``window``: how many recent changes that spread is taken over; ``drop``: a bound more than
    this fraction of its best value's magnitude below the best its steps reached counts as
    divergence whatever came between (a run that blew up and came partly back; the bound at the
    start is not a step's, and a first step at rho = 1 from one child per node may fall far
    below it and recover). Until two changes are known there is no noise estimate, and only a
    bound that is not finite counts."""

    def __init__(self, every: int | None = None, patience: int = 3, tolerance: float = 1e-3,
                 drop: float = 0.25, noise: float = 5.0, window: int = 10, action: str = "backoff",
                 factor: float = 2.0):
        super().__init__(action, factor)
        self.every = None if every is None else integer("ElboMonitor(every=)", every, 1)
        self.patience = integer("ElboMonitor(patience=)", patience, 1)
        self.tolerance = number("ElboMonitor(tolerance=)", tolerance, 0.0)
        self.drop = number("ElboMonitor(drop=)", drop, 0.0, above=True)
        self.noise = number("ElboMonitor(noise=)", noise, 0.0)
        self.window = integer("ElboMonitor(window=)", window, 2)

    def check_elbo(self, t, values, st):
        last = values[-1]
        if not np.isfinite(last):
            return f"the ELBO is not finite at iteration {t}", st
        finite = np.asarray([v for v in values if np.isfinite(v)], float)
        if change_noise(finite[:-1], self.window) is None:
            return None, st
        best = float(finite[1:-1].max())
        if last < best - self.drop * abs(best):
            return (f"the ELBO fell to {last:.6g} at iteration {t}, far below its best {best:.6g} "
                    f"(more than {self.drop:g} of its size)"), st
        if len(finite) > self.patience and all(self._fall(finite[:len(finite) - k]) for k in range(self.patience)):
            return (f"the ELBO fell at {self.patience} evaluations in a row, each by more than {self.noise:g} "
                    f"standard deviations of its recent changes, to {last:.6g} at iteration {t}"), st
        return None, st

    def _fall(self, values: np.ndarray) -> bool:
        """Whether the last of ``values`` fell from the one before by more than ``tolerance``
        relative and ``noise`` times the spread of the changes before it."""
        spread = change_noise(values[:-1], self.window)
        change = values[-1] - values[-2]
        return spread is not None and change < -max(self.tolerance * abs(values[-1]), self.noise * spread)


def change_noise(values: np.ndarray, window: int) -> float | None:
    """The standard deviation of the last ``window`` changes of ``values`` about their mean (a
    steady trend is not noise); None with fewer than two changes."""
    changes = np.diff(values[-window - 1:])
    if changes.size < 2:
        return None
    return float(np.std(changes, ddof=1))
