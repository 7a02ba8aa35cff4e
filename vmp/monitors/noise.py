"""Steps too noisy for their size: per node, the spread of the last ``window`` steps
rho_t (lambda^temp - lambda) against the size of lambda. With few children per draw (small C)
and a large rho_t the steps swing by more than the parameters they move (Paquet section 3)."""
from __future__ import annotations

import numpy as np

from ..domains import integer, number
from .base import Monitor


class NoiseMonitor(Monitor):
    def __init__(self, window: int = 10, threshold: float = 0.5, action: str = "backoff", factor: float = 2.0):
        super().__init__(action, factor)
        self.window = integer("NoiseMonitor(window=)", window, 2)
        self.threshold = number("NoiseMonitor(threshold=)", threshold, 0.0, above=True)

    def check_step(self, node, old, new, st):
        step = np.concatenate([(b - a).ravel() for a, b in zip(old, new)])
        if not np.all(np.isfinite(step)):
            return None, st  # the DomainMonitor's business
        steps = (list(st.get(node.name, [])) + [step])[-self.window:]
        st = dict(st, **{node.name: steps})
        if len(steps) < self.window:
            return None, st
        spread = float(np.linalg.norm(np.std(np.stack(steps), axis=0)))
        size = float(np.sqrt(sum(np.sum(a ** 2) for a in old)))
        ratio = spread / max(size, 1e-300)
        if ratio > self.threshold:
            return (f"node '{node.name}': the last {self.window} steps spread by {ratio:.3g} times the size of "
                    f"its natural parameters (threshold {self.threshold:g})"), dict(st, **{node.name: []})
        return None, st
