"""The stopping rule of a stochastic fit (``tol=``): patience on the evaluated bound.

As scikit-learn's ``n_iter_no_change`` and Keras' ``EarlyStopping(min_delta, patience)``, with a
patience that grows with the run. At an evaluation at step t the window is the last

    w(t) = max(patience x evaluate_every, WINDOW x t)

steps, the reference b* is the best evaluated bound at or before step t - w(t), and b_w the
best in the window. The bound improved over the window when

    b_w - b* > tol |b*|   and   b_w - b* > STDERR_Z se(b_w - b*),

and the fit stops at the first evaluation where it did not, once the steps before the window
hold ``patience`` evaluations too (t - w(t) >= patience x evaluate_every: from step
patience x evaluate_every / (1 - WINDOW) = 200 on with the defaults). Earlier the reference is
one to four of the first evaluations, and a bound whose estimate moves by more than tol with q
(the change's standard error exceeds tol: a mixture of 10^5 points evaluated on 256 of them)
shows no improvement over a few evaluations whether or not it still rises.

A stochastic fit's bound approaches its plateau as a power of t (the steps rho_t ~ t^-kappa
shrink the noise it carries), so a window of fixed length stops it while it still rises by more
than tol over the rest of the run. With the rise left A t^-a, the rise over the last c t steps is A t^-a ((1 - c)^-a - 1): with c = 3/4 the
fit stops when the rise left is at most tol / ((1 - c)^-a - 1), below tol for a >= 0.5, at
((1 - c)^-a - 1)^(1/a) times the step P at which it fell below tol (1 at a = 0.5, 1.5 at 0.6,
1.9 at 0.7; 2.4 at 0.8, where it leaves half a tol). The largest evaluation of the window
(rather than the last) is compared so that a dip of the noisy bound does not end the fit.

se(b_t - b*) is the standard error of the change as an estimate of the change of the full bound.
A minibatch fit evaluates the bound on one fixed subsample of n of the N elements of its data
plate (drawn once), b = G + (N / n) sum_i l_i, with G the global nodes' terms and l_i an
element's local terms; the change on the same rows is a paired difference, so

    se(b_t - b*) = N s_d / sqrt(n) sqrt(1 - n / N),   s_d the spread of l_i(t) - l_i(*)

(simple random sampling without replacement), below the standard error of either estimate: the
rows that are hard to fit are hard at both evaluations. An exact bound (PerNode plans,
``evaluate="full"``) has se = 0. Without the standard error a fit whose bound wanders by more
than tol |b| on the subsample would find an improvement every few evaluations and never stop.
With it, a rise below STDERR_Z se is not seen: where se exceeds tol |b| the rule stops once the
rise over the window falls below the estimate's resolution, not below tol; a larger
``Minibatch(evaluation_size=)`` (se ~ 1 / sqrt(n)) restores the resolution.

The rule's memory is plain data (:class:`Plateau`, kept in the fit's State): the running
maxima since the reference and the window's descending maxima, with their per-row terms, so a
resumed fit stops where the uninterrupted one does.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

#: evaluations the window holds at least
PATIENCE = 5
#: the window's share of the run
WINDOW = 0.75
#: standard errors of the change an improvement must exceed
STDERR_Z = 2.0


@dataclass(frozen=True)
class Plateau:
    """What the rule remembers, as (step, value, per-row terms or None) triples: the running
    maxima of the evaluated bound from the current reference on, and the window's descending
    maxima (each larger than every later evaluation in the window; the first is the window's
    largest); and ``stop``, why the rule ends the fit at its last evaluation (None: it goes on).
    Plain data: a checkpoint keeps it in the State's LoopState."""

    maxima: list = field(default_factory=list)
    recent: list = field(default_factory=list)
    stop: str | None = None


def change_stderr(terms: np.ndarray | None, best_terms: np.ndarray | None, size: int) -> float:
    """se of the change of the bound between two evaluations on the same ``terms.size`` rows of a
    plate of ``size`` elements (module docstring); 0 when either is exact (None)."""
    if terms is None or best_terms is None or terms.size < 2 or terms.shape != best_terms.shape:
        return 0.0
    n = terms.size
    spread = float(np.std(terms - best_terms, ddof=1))
    return size * spread / np.sqrt(n) * np.sqrt(max(1.0 - n / size, 0.0))


def window(t: int, every: int, patience: int = PATIENCE, share: float = WINDOW) -> float:
    """w(t): the steps the rule looks back over at step t."""
    return max(patience * every, share * t)


def observe(memory: Plateau, t: int, value: float, terms: np.ndarray | None, size: int, tol: float,
            every: int, patience: int = PATIENCE, share: float = WINDOW, z: float = STDERR_Z,
            lead: int | None = None) -> Plateau:
    """The rule after the evaluation ``value`` at step ``t`` (per-row local terms ``terms`` on a
    subsample of a plate of ``size`` elements, or None for an exact bound; evaluations every
    ``every`` steps): the new memory, whose ``stop`` says why the fit stops (None: it goes on).
    ``lead``: the evaluations the steps before the window must hold (default ``patience``)."""
    if not np.isfinite(value):
        return replace(memory, stop=None)
    w = window(t, every, patience, share)
    new = (t, float(value), terms)
    recent = [m for m in memory.recent if m[0] > t - w and m[1] > value] + [new]
    maxima = list(memory.maxima)
    if not maxima or value > maxima[-1][1]:
        maxima.append(new)
    before = [m for m in maxima if m[0] <= t - w]
    maxima = maxima[len(before) - 1:] if before else maxima
    if not before or t - w < (patience if lead is None else lead) * every:
        return Plateau(maxima, recent)
    ref, top = before[-1], recent[0]
    gain, se = top[1] - ref[1], change_stderr(top[2], ref[2], size)
    if gain > tol * abs(ref[1]) and gain > z * se:
        return Plateau(maxima, recent)
    why = (f"the evaluated bound has not improved by more than tol={tol:g} relative (and {z:g} standard errors "
           f"of the change) over the last {w:g} steps (the larger of {patience} evaluations and {share:g} of the "
           f"run): at most {top[1]:.8g} (iteration {top[0]}) against {ref[1]:.8g} at iteration {ref[0]} (the best of "
           f"the first {t - w:g} steps)")
    if z * se > tol * abs(ref[1]):
        why += (f"; the estimate does not resolve tol: {z:g} standard errors of the change are "
                f"{z * se / (tol * abs(ref[1])):.1f} tol, and a rise below them is not seen (a larger "
                f"Minibatch(evaluation_size=) than {terms.size} rows resolves more)")
    return Plateau(maxima, recent, why)

