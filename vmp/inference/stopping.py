"""The stopping rule of a stochastic fit (``tol=``): patience on the evaluated bound.

As scikit-learn's ``n_iter_no_change`` and Keras' ``EarlyStopping(min_delta, patience)``: the fit
keeps the best evaluated bound b* so far; an evaluation b_t improves on it when

    b_t - b* > tol |b*|   and   b_t - b* > STDERR_Z se(b_t - b*),

and the fit stops after ``patience`` evaluations in a row without an improvement. An improvement
smaller than tol does not move b*, so slow gains add up until they count.

se(b_t - b*) is the standard error of the change as an estimate of the change of the full bound.
A minibatch fit evaluates the bound on one fixed subsample of n of the N elements of its data
plate (drawn once), b = G + (N / n) sum_i l_i, with G the global nodes' terms and l_i an
element's local terms; the change on the same rows is a paired difference, so

    se(b_t - b*) = N s_d / sqrt(n) sqrt(1 - n / N),   s_d the spread of l_i(t) - l_i(*)

(simple random sampling without replacement), far below the standard error of either estimate:
the rows that are hard to fit are hard at both evaluations. An exact bound (batch-like plans,
``evaluate="full"``) has se = 0. Without the standard error a fit whose bound wanders by more
than tol |b| on the subsample would find a new best every few evaluations and never stop.

The rule's memory is plain data (:class:`Plateau`, kept in the fit's State), so a resumed fit
stops where the uninterrupted one does.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

#: evaluations in a row without an improvement after which ``tol=`` ends a stochastic fit
PATIENCE = 5
#: standard errors of the change an improvement must exceed
STDERR_Z = 2.0


@dataclass(frozen=True)
class Plateau:
    """What the rule remembers: the best evaluated bound, its step and per-row local terms (None
    for an exact bound), and the evaluations since it."""

    best: float | None = None
    step: int = 0
    terms: np.ndarray | None = None
    waited: int = 0

    def saved(self) -> dict:
        return asdict(self)

    @classmethod
    def load(cls, saved: dict | None) -> "Plateau":
        if not saved:
            return cls()
        terms = saved.get("terms")
        return cls(saved.get("best"), int(saved.get("step", 0)),
                   None if terms is None else np.asarray(terms, float), int(saved.get("waited", 0)))


def change_stderr(terms: np.ndarray | None, best_terms: np.ndarray | None, size: int) -> float:
    """se of the change of the bound between two evaluations on the same ``terms.size`` rows of a
    plate of ``size`` elements (module docstring); 0 when either is exact (None)."""
    if terms is None or best_terms is None or terms.size < 2 or terms.shape != best_terms.shape:
        return 0.0
    n = terms.size
    spread = float(np.std(terms - best_terms, ddof=1))
    return size * spread / np.sqrt(n) * np.sqrt(max(1.0 - n / size, 0.0))


def observe(memory: Plateau, t: int, value: float, terms: np.ndarray | None, size: int,
            tol: float, patience: int = PATIENCE, z: float = STDERR_Z) -> tuple[Plateau, str | None]:
    """The rule after the evaluation ``value`` at step ``t`` (per-row local terms ``terms`` on a
    subsample of a plate of ``size`` elements, or None for an exact bound): the new memory and,
    when the fit stops, why."""
    if not np.isfinite(value):
        return memory, None
    if memory.best is None:
        return Plateau(value, t, terms, 0), None
    gain = value - memory.best
    se = change_stderr(terms, memory.terms, size)
    if gain > tol * abs(memory.best) and gain > z * se:
        return Plateau(value, t, terms, 0), None
    memory = Plateau(memory.best, memory.step, memory.terms, memory.waited + 1)
    if memory.waited < patience:
        return memory, None
    return memory, (f"the evaluated bound has not improved by more than tol={tol:g} relative (and {z:g} "
                    f"standard errors of the change) for {patience} evaluations: best {memory.best:.8g} at "
                    f"iteration {memory.step}, {value:.8g} at iteration {t}")
