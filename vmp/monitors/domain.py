"""A natural parameter leaves its domain: a precision or scale not positive definite, a shape,
rate or concentration not positive, or anything not finite."""
from __future__ import annotations

import numpy as np

from .base import Monitor


class DomainMonitor(Monitor):
    def check_step(self, node, old, new, st):
        ok = node.family.valid(new)
        if np.all(ok):
            return None, st
        bad = int(np.size(ok) - np.count_nonzero(ok))
        return f"node '{node.name}': the step leaves the {node.family.name} domain at {bad} element(s)", st
