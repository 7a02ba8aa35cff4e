"""Message-weighting policies: every one is a weight on the data plate's factors.

For a minibatch S of the data plate, a policy returns two weights, each None (no change), a
number, or an array over the drawn elements (one per datapoint, shared by every factor that
datapoint's messages come from):

- ``local``: multiplies the factors in the local updates (annealing: 1/T);
- ``global_``: multiplies the factors in the global targets, on top of N/|S| (SVI+:
  1 + eps_n - mean(eps); annealing: 1/T).

Weights compose by multiplication with the subsampling scale and with data weights (counts).
"""
from __future__ import annotations

import numpy as np


class Policy:
    def weights(self, t: int, rows: np.ndarray, rng: np.random.Generator):
        """(local, global_) weights for step t on the drawn rows."""
        return None, None

    def record(self, t: int) -> dict:
        """Values for the history at step t (e.g. {'temperature': T})."""
        return {}


def combine(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a * b
