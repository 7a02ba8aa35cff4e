"""The bound is not finite, falls over ``patience`` evaluations by more than noise, or ends far
below the best it reached."""
from __future__ import annotations

import numpy as np

from ..errors import VMPError
from .base import Monitor


class ElboMonitor(Monitor):
    """``every``: evaluate the bound at least every that many iterations (on top of the fit's
    ``evaluate_every``); ``patience``: falls in a row that count as divergence; ``tolerance``:
    relative size of a fall beyond noise; ``drop``: a bound more than this fraction of its best
    value's magnitude below the best so far counts as divergence whatever came between (a run
    that blew up and came partly back)."""

    def __init__(self, every: int | None = None, patience: int = 3, tolerance: float = 1e-3,
                 drop: float = 0.25, action: str = "backoff", factor: float = 2.0):
        super().__init__(action, factor)
        if every is not None and (int(every) != every or every < 1):
            raise VMPError(f"ElboMonitor(every=...) needs a positive integer, got {every!r}")
        if not drop > 0:
            raise VMPError(f"ElboMonitor(drop=...) must be positive, got {drop!r}")
        self.every = None if every is None else int(every)
        self.patience, self.tolerance, self.drop = int(patience), float(tolerance), float(drop)

    def check_elbo(self, t, values, st):
        last = values[-1]
        if not np.isfinite(last):
            return f"the ELBO is not finite at iteration {t}", st
        finite = np.asarray([v for v in values[:-1] if np.isfinite(v)], float)
        if finite.size:
            best = float(finite.max())
            if last < best - self.drop * abs(best):
                return (f"the ELBO fell to {last:.6g} at iteration {t}, far below its best {best:.6g} "
                        f"(more than {self.drop:g} of its size)"), st
        if len(values) > self.patience:
            window = np.asarray(values[-self.patience - 1:], float)
            falls = np.diff(window) < -self.tolerance * np.abs(window[1:])
            if np.all(falls):
                return f"the ELBO fell at {self.patience} evaluations in a row, to {last:.6g} at iteration {t}", st
        return None, st
