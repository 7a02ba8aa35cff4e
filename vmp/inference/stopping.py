"""The stopping rule of a stochastic fit (``tol=``): patience on the evaluated bound.

As scikit-learn's ``n_iter_no_change`` and Keras' ``EarlyStopping(min_delta, patience)``, with a
patience that grows with the run. At an evaluation at step t the window is the last

    w(t) = max(patience x evaluate_every, WINDOW x t)

steps. The rule compares two means of ``patience`` evaluations each: b_w, the mean of the last
``patience`` evaluations, and the reference b*, the mean of the last whole block of ``patience``
consecutive evaluations (blocks counted from the first evaluation after step 0) that ends at or
before step t - w(t). The bound improved over the window when

    b_w - b* > tol |b*|   and   b_w - b* > STDERR_Z se(b_w - b*),

and the fit stops at the first evaluation where it did not. The first comparison needs a whole
block before the window: from step patience x evaluate_every / (1 - WINDOW) = 200 on with the
defaults. Both sides average the same number of evaluations, so the noise of the estimate moves
b_w - b* up as often as down: the best of the window's evaluations against the best before it
would be biased upward (the window holds about three times as many evaluations), and a noisy
bound would seem to improve after it stopped rising.

A stochastic fit's bound approaches its plateau as a power of t (the steps rho_t ~ t^-kappa
shrink the noise it carries), so a window of fixed length stops it while it still rises by more
than tol over the rest of the run. With the rise left A t^-a, the rise over the last c t steps is
A t^-a ((1 - c)^-a - 1): with c = 3/4 the fit stops when the rise left is at most
tol / ((1 - c)^-a - 1), below tol for a >= 0.5, at ((1 - c)^-a - 1)^(1/a) times the step P at
which it fell below tol (1 at a = 0.5, 1.5 at 0.6, 1.9 at 0.7; 2.4 at 0.8, where it leaves half a
tol). A bound that reaches its plateau at once at step P (a jump, or an exponential approach)
stops at P / (1 - c) = 4 P.

se(b_w - b*) is the standard error of the change as an estimate of the change of the full bound.
A minibatch fit evaluates the bound on one fixed subsample of n of the N elements of its data
plate (drawn once), b = G + (N / n) sum_i l_i, with G the global nodes' terms and l_i an
element's local terms; a mean of evaluations is the same sum over the rows' mean terms, and the
change between two means on the same rows is a paired difference, so

    se(b_w - b*) = N s_d / sqrt(n) sqrt(1 - n / N),   s_d the spread of l_i(w) - l_i(*),

(simple random sampling without replacement; l_i(w) and l_i(*) the row's terms averaged over
the evaluations of each mean), below the standard error of either estimate: the rows that are
hard to fit are hard at both. An exact bound (PerNode plans, ``evaluate="full"``) has se = 0.
Without the standard error a fit whose bound wanders by more than tol |b| on the subsample would
find an improvement every few evaluations and never stop. With it, a rise below STDERR_Z se is
not seen: where se exceeds tol |b| the rule stops once the rise over the window falls below the
estimate's resolution, not below tol; a larger ``Minibatch(evaluation_size=)`` (se ~ 1 / sqrt(n))
restores the resolution.

The rule's memory is plain data (:class:`Plateau`, kept in the fit's State): the last
``patience`` evaluations and the blocks' means from the reference on, with their per-row terms
(about 3 / (4 patience) of the run's evaluations), so a resumed fit stops where the
uninterrupted one does.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

#: evaluations the window holds at least, and that each of the two compared means averages
PATIENCE = 5
#: the window's share of the run
WINDOW = 0.75
#: standard errors of the change an improvement must exceed
STDERR_Z = 2.0


@dataclass(frozen=True)
class Plateau:
    """What the rule remembers, as (step, value, per-row terms or None) triples: ``recent``, the
    last ``patience`` evaluations; ``blocks``, the means of the whole blocks of ``patience``
    consecutive evaluations (the first block the evaluations 1 to ``patience`` after step 0) from
    the current reference on, each at its last step; ``count``, the evaluations seen; and
    ``stop``, why the rule ends the fit at its last evaluation (None: it goes on). Plain data: a
    checkpoint keeps it in the State's LoopState."""

    recent: list = field(default_factory=list)
    blocks: list = field(default_factory=list)
    count: int = 0
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


def mean_of(evaluations: list) -> tuple:
    """(the last step, the mean value, the mean per-row terms or None) of (step, value, terms)
    evaluations: an evaluation of the mean of their bounds on the same rows."""
    rows = [e[2] for e in evaluations]
    same = all(r is not None for r in rows) and len({np.shape(r) for r in rows}) == 1
    return evaluations[-1][0], float(np.mean([e[1] for e in evaluations])), np.mean(rows, axis=0) if same else None


def observe(memory: Plateau, t: int, value: float, terms: np.ndarray | None, size: int, tol: float,
            every: int, patience: int = PATIENCE, share: float = WINDOW, z: float = STDERR_Z) -> Plateau:
    """The rule after the evaluation ``value`` at step ``t`` (per-row local terms ``terms`` on a
    subsample of a plate of ``size`` elements, or None for an exact bound; evaluations every
    ``every`` steps): the new memory, whose ``stop`` says why the fit stops (None: it goes on).
    Only evaluations at multiples of ``every`` after step 0 are counted: not the initial bound,
    one a monitor of another period asked for, one at a step already seen (a resumed fit's first),
    nor one that is not finite."""
    if not np.isfinite(value) or t <= 0 or t % every or (memory.recent and t <= memory.recent[-1][0]):
        return replace(memory, stop=None)
    w = window(t, every, patience, share)
    recent, count = (list(memory.recent) + [(t, float(value), terms)])[-patience:], memory.count + 1
    blocks = list(memory.blocks) + ([mean_of(recent)] if count % patience == 0 else [])
    before = [b for b in blocks if b[0] <= t - w]
    blocks = blocks[max(len(before) - 1, 0):]
    if not before or len(recent) < patience:
        return Plateau(recent, blocks, count)
    ref, top = before[-1], mean_of(recent)
    gain, se = top[1] - ref[1], change_stderr(top[2], ref[2], size)
    if gain > tol * abs(ref[1]) and gain > z * se:
        return Plateau(recent, blocks, count)
    return Plateau(recent, blocks, count, message(ref, top, w, tol, patience, share, z, se))


def message(ref: tuple, top: tuple, w: float, tol: float, patience: int, share: float, z: float,
            se: float) -> str:
    """The rule's message when it stops the fit (``top``: the mean of the last evaluations, ``ref`` the reference)."""
    why = (f"the evaluated bound has not improved by more than tol={tol:g} relative (and {z:g} standard errors "
           f"of the change) over the last {w:g} steps (the larger of {patience} evaluations and {share:g} of the "
           f"run): the mean of its last {patience} evaluations is {top[1]:.8g} against {ref[1]:.8g}, the mean of "
           f"{patience} evaluations up to iteration {ref[0]}")
    if z * se > tol * abs(ref[1]):
        why += (f"; the estimate does not resolve tol: {z:g} standard errors of the change are "
                f"{z * se / (tol * abs(ref[1])):.1f} tol, and a rise below them is not seen (a larger "
                f"Minibatch(evaluation_size=) than {top[2].size} rows resolves more)")
    return why
