"""Step-size schedules rho_t, t = 1, 2, ... (Robbins & Monro 1951; Paquet section 2.2)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..errors import OptionError


class Schedule(ABC):
    @abstractmethod
    def __call__(self, t: int) -> float:
        """rho_t for step t = 1, 2, ..."""


@dataclass(frozen=True)
class RobbinsMonro(Schedule):
    """rho_t = rho1 * ((t + tau) / (1 + tau)) ** -kappa, so that rho_1 = rho1.

    tau is scikit-learn's ``learning_offset``, kappa its ``learning_decay``; kappa in (0.5, 1]
    satisfies sum rho = inf, sum rho^2 < inf. With rho1 = (1 + tau)^-kappa this is Hoffman et
    al.'s (t + tau)^-kappa.
    """

    tau: float = 1.0
    kappa: float = 0.6
    rho1: float = 1.0

    def __post_init__(self):
        if self.tau < 0 or not 0 <= self.kappa <= 1 or not 0 < self.rho1 <= 1:
            raise OptionError(f"RobbinsMonro needs tau >= 0, 0 <= kappa <= 1, 0 < rho1 <= 1; got {self}")

    def __call__(self, t: int) -> float:
        return self.rho1 * ((t + self.tau) / (1.0 + self.tau)) ** -self.kappa


@dataclass(frozen=True)
class Constant(Schedule):
    """rho_t = rho."""

    rho: float

    def __post_init__(self):
        if not 0 < self.rho <= 1:
            raise OptionError(f"Constant step needs 0 < rho <= 1, got {self.rho}")

    def __call__(self, t: int) -> float:
        return self.rho


@dataclass(frozen=True)
class Warmup(Schedule):
    """rho = 1 for the first ``iterations`` steps, then ``then(t - iterations)`` (the warm-up of
    the recommender system Paquet describes)."""

    iterations: int
    then: Schedule = RobbinsMonro()

    def __call__(self, t: int) -> float:
        return 1.0 if t <= self.iterations else self.then(t - self.iterations)


def per_node(step, names) -> dict:
    """Resolve ``step=`` (one schedule, or a dict from node names to schedules with an optional
    'default') to a schedule for every name."""
    if isinstance(step, Schedule) or callable(step) and not isinstance(step, dict):
        return {n: step for n in names}
    if not isinstance(step, dict):
        raise ValueError("step= takes a schedule or a dict from node names to schedules")
    default = step.get("default", RobbinsMonro())
    unknown = set(step) - set(names) - {"default"}
    if unknown:
        raise ValueError(f"step=: no hidden node named {sorted(unknown)}")
    return {n: step.get(n, default) for n in names}
