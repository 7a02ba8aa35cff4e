"""SVI+ (Paisley, Fazelnia & Barr, Definition 1 and Alg. 1): SVI with a tuneable effective batch size.

Each datapoint n of the minibatch S gets the weight 1 + eps_n - mean(eps), eps_n ~ N(0, |S|/M - 1),
on every global message it sends, so that the natural gradient from |S| points is as noisy as
that of a minibatch of size M < |S| (stochastic annealing). M >= |S| switches it off.

The weights are negative for a share of the datapoints when M is small (about 30% at M = 0.2|S|),
so a global target can leave its domain (negative Dirichlet counts, an indefinite Wishart scale).
The paper is silent on this; vmp rejects such a draw and draws the eps again (at most
``redraws`` times), then skips the global step for that minibatch, recording an event.
"""
from __future__ import annotations

import numpy as np

from ..errors import OptionError
from ..domains import integer, number
from ..inference.policy import Policy


class SVIPlus(Policy):
    batch = False
    batch_refusal = ("SVIPlus adds noise to a minibatch's natural gradient (Paisley et al., Definition 1): "
                     "use method='stochastic' with subsample=vmp.Minibatch(plate, size)")

    def __init__(self, effective, redraws: int = 10):
        """``effective``: M, a number or a function of the step t (the paper uses M_t = 50 t)."""
        if not callable(effective):
            number("SVIPlus(effective=)", effective, 0.0, above=True)
        self.effective, self.redraws = effective, integer("SVIPlus(redraws=)", redraws, 0)

    def size(self, t: int) -> float:
        m = self.effective(t) if callable(self.effective) else self.effective
        if not m > 0:
            raise OptionError(f"SVIPlus: the effective batch size must be positive, got {m!r} at step {t}")
        return float(m)

    def weights(self, t, rows, rng, st):
        s = len(rows)
        m = self.size(t)
        if m >= s:
            return None, None
        eps = rng.normal(0.0, np.sqrt(s / m - 1.0), size=s)
        return None, 1.0 + eps - eps.mean()

    def record(self, t, rows, st):
        return {"effective_batch": self.size(t)}
