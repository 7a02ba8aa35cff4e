"""Monitors watch a stochastic run and give verdicts; the loop acts on them.

``action``: 'warn' (record an event and warn, go on; never marks the fit diverged), 'stop' (end
the run, ``result.diverged = True``) or 'backoff' (reject the step, or return to the last good
state after a bad bound, divide the step size by ``factor``, go on). A step that leaves a
family's domain and is applied anyway ends the run as diverged.

A monitor keeps no state of its own: what it remembers (recent steps, say) is plain data ``st``
in the fit's State, started by :meth:`Monitor.start` and returned anew by each check. Every hook
is declared here.
"""
from __future__ import annotations

from ..domains import choice, number

ACTIONS = ("warn", "stop", "backoff")


class Monitor:
    #: evaluate the bound at least every that many steps (None: the fit's ``evaluate_every``)
    every: int | None = None

    def __init__(self, action: str = "backoff", factor: float = 2.0):
        who = type(self).__name__
        self.action = choice(f"{who}(action=)", action, ACTIONS)
        self.factor = number(f"{who}(factor=)", factor, 1.0, above=True)

    @property
    def name(self) -> str:
        return type(self).__name__

    def start(self) -> dict:
        """The monitor's initial state (plain data)."""
        return {}

    def check_step(self, node, old, new, st: dict) -> tuple[str | None, dict]:
        """Before a node's new natural parameters are applied: (a problem or None, new state)."""
        return None, st

    def check_elbo(self, t: int, values: list, st: dict) -> tuple[str | None, dict]:
        """After an evaluation of the bound (all values so far): (a problem or None, new state)."""
        return None, st
