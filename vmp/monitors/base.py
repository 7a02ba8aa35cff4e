"""Monitors watch a stochastic run and give verdicts; the loop acts on them.

``action``: 'warn' (record and warn, go on), 'stop' (end the run, result.diverged = True) or
'backoff' (reject the step, divide the node's step size by ``factor``, go on).
"""
from __future__ import annotations

ACTIONS = ("warn", "stop", "backoff")


class Monitor:
    def __init__(self, action: str = "backoff", factor: float = 2.0):
        if action not in ACTIONS:
            raise ValueError(f"{type(self).__name__}: action must be one of {ACTIONS}, got {action!r}")
        if not factor > 1:
            raise ValueError(f"{type(self).__name__}: factor must exceed 1, got {factor!r}")
        self.action, self.factor = action, float(factor)

    def check_step(self, node, old, new) -> str | None:
        """Before a node's new natural parameters are applied: a problem, or None."""
        return None

    def check_elbo(self, t: int, values: list) -> str | None:
        """After an evaluation of the full ELBO (all values so far): a problem, or None."""
        return None
