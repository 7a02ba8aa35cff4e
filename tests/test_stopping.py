"""The stopping rule of stochastic fits (tol=, vmp/inference/stopping.py): patience on the
evaluated bound with the standard error of its change, against a hand-written replay, Monte Carlo
for the standard error, and fits (the message and history, a fixed evaluation subsample whatever
evaluate_every is, resume)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.helpers import factorized_mixture
from tests.golden_fits import _blobs, _mf
from vmp.inference.stopping import PATIENCE, WINDOW, Plateau, change_stderr, observe
from vmp.inference.subsample import EVALUATION_SIZE


def _replay(steps, values, tol, every, patience, share):
    """The rule in words, for exact bounds, by brute force: at step t, with the window w =
    max(patience * every, share * t), the reference is the mean of the last whole block of
    patience evaluations (evaluations 1..patience, patience+1..2 patience, ...) whose last step is
    at or before t - w; the fit stops at the first t with a reference that the mean of the last
    patience evaluations does not beat by more than tol |reference|."""
    for i, t in enumerate(steps):
        w = max(patience * every, share * t)
        ends = [j for j in range(patience - 1, i + 1, patience) if steps[j] <= t - w]
        if ends and i + 1 >= patience:
            ref = np.mean(values[ends[-1] + 1 - patience:ends[-1] + 1])
            if np.mean(values[i + 1 - patience:i + 1]) - ref <= tol * abs(ref):
                return t
    return None


def _run(steps, values, tol, every, patience=PATIENCE, share=WINDOW, terms=None, size=0):
    memory = Plateau()
    for i, (t, v) in enumerate(zip(steps, values)):
        memory = observe(memory, int(t), v, None if terms is None else terms[i], size, tol, every, patience, share)
        if memory.stop is not None:
            return int(t), memory.stop
    return None, None


def test_exact_bounds_stop_as_the_rule_in_words():
    rng = np.random.default_rng(0)
    for _ in range(60):
        every = int(rng.choice([1, 5, 10]))
        steps = every * np.arange(1, 121)
        rise = 900 * rng.choice([0.0, 1.0])  # half the bounds are flat from the first evaluation on
        values = -1000 + rise * (1 - (1 + steps / rng.uniform(3, 300)) ** -rng.uniform(0.3, 2)) \
            + rng.normal(0, rng.uniform(0, 0.5), steps.size)
        tol, patience, share = rng.choice([1e-4, 1e-3, 1e-2]), int(rng.integers(1, 8)), rng.choice([0.0, 0.5, 0.75])
        assert _run(steps, values, tol, every, patience, share)[0] == _replay(list(steps), list(values), tol, every,
                                                                              patience, share)


def test_a_slowly_rising_bound_stops_when_little_is_left():
    """b(t) = -1000 - 50 (t / 10)^-a: the rise left at the stop is below tol |b| and the stop
    comes within twice the step P at which it fell below tol (module docstring)."""
    for a in (0.55, 0.6, 0.65):
        steps = 10 * np.arange(1, 5001)
        left = 50.0 * (steps / 10.0) ** -a
        values = -1000.0 - left
        tol = 1e-3
        stop = _run(steps, values, tol, 10)[0]
        p = steps[np.argmax(left <= tol * 1000.0)]
        assert stop is not None and p <= stop <= 2 * p, (a, stop, p)


def test_the_change_stderr_is_the_spread_of_paired_subsample_estimates():
    """Two bounds over N elements, each estimated on the same n rows drawn without replacement:
    the formula against the standard deviation of the estimated change over 20,000 draws."""
    rng = np.random.default_rng(1)
    big_n, n = 2000, 100
    before = rng.normal(-3.0, 1.0, big_n)
    after = before + rng.normal(0.01, 0.05, big_n)
    changes, formula = [], []
    for _ in range(20000):
        rows = rng.choice(big_n, n, replace=False)
        changes.append(big_n / n * (after[rows] - before[rows]).sum())
        formula.append(change_stderr(after[rows], before[rows], big_n))
    assert np.mean(formula) == pytest.approx(np.std(changes), rel=0.03)
    assert np.std(changes) < 0.1 * big_n * np.std(after) / np.sqrt(n)  # far below an estimate's own
    assert change_stderr(None, before[:n], big_n) == 0.0


def test_a_rise_within_the_standard_error_is_no_improvement():
    """q wanders at a plateau: each row's local terms take a random walk, the bound on the
    subsample wanders by tens of tol |b|. Without the standard error the walk's rises count (the
    stop comes later than the first possible one, 2 x patience evaluations with a window of
    patience, on about half the runs: the walk rises as often as it falls); with it none counts."""
    late, stops = 0, []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        rows, big_n = 200, 100_000
        base = rng.normal(-5.0, 1.0, rows)
        terms = list(base + np.cumsum(rng.normal(0, 0.02, (60, rows)), axis=0))
        values = [big_n / rows * t.sum() for t in terms]
        steps = np.arange(1, 61)
        plain = _run(steps, values, 1e-5, 1, share=0.0)[0]
        late += plain is None or plain > 2 * PATIENCE
        stop, why = _run(steps, values, 1e-5, 1, share=0.0, terms=terms, size=big_n)
        stops.append(stop)
    assert late >= 6 and stops == [2 * PATIENCE] * 20, (late, stops)
    assert "standard errors" in why


def test_a_hand_computed_stop():
    """patience 2, evaluations every step, a window of max(2, t / 2) steps, tol = 1e-2. Blocks:
    evaluations (1, 2), (3, 4), (5, 6). At t = 4 to 7 the reference is block (1, 2), mean -108,
    and the last two evaluations' means (-103.5, -102, -100.5, -100) beat it by 4.5 to 8 > 1.08;
    at t = 8 to 11 it is block (3, 4), mean -103.5, beaten by 4 to 4.4 > 1.035; at t = 12
    (t - w = 6) it is block (5, 6), mean -100.5, and the mean of evaluations 11 and 12, -99.5,
    beats it by 1.0 <= 1.005: the fit stops at 12."""
    values = [-110, -106, -104, -103, -101, -100, -100, -99, -99.2, -99.0, -99.4, -99.6, -99.0]
    stop, why = _run(np.arange(1, 14), values, 1e-2, 1, patience=2, share=0.5)
    assert stop == 12 and "the mean of its last 2 evaluations is -99.5 against -100.5" in why
    assert "the mean of 2 evaluations up to iteration 6" in why and "does not resolve" not in why
    assert _run(np.arange(1, 13), values[:11] + [-99.4], 1e-2, 1, patience=2, share=0.5)[0] is None


def test_only_the_evaluate_every_grid_counts():
    """Evaluations between the multiples of evaluate_every (a monitor of another period, the
    report's evaluation at a fit's last step) and the initial bound at step 0 leave the stop
    where the grid alone puts it (they would shift the blocks of patience evaluations)."""
    def bound(t):
        return -1000.0 - 50.0 * (np.maximum(t, 1) / 10.0) ** -1.0

    steps = 10 * np.arange(1, 401)
    alone = _run(steps, bound(steps), 1e-3, 10)[0]
    mixed = np.array(sorted(list(steps) + list(steps[:-1] + 5) + [0]))
    assert alone is not None and _run(mixed, bound(mixed), 1e-3, 10)[0] == alone, alone


def test_noise_alone_shows_no_rise():
    """An exact bound flat from the first evaluation, plus noise of 1 tol |b| on each evaluation:
    the window holds three times as many evaluations as the block it is compared with, and its
    best evaluation would beat the best before it by the noise's upper tail; the means do not, so
    the fit stops at its first possible step, 200, on nearly every run (the mean of 5 evaluations
    against another: noise of 0.63 tol)."""
    steps = 10 * np.arange(1, 301)
    stops = [_run(steps, -1000.0 + np.random.default_rng(seed).normal(0.0, 1.0, steps.size), 1e-3, 10)[0]
             for seed in range(40)]
    assert sum(s == 200 for s in stops) >= 36 and max(stops) <= 250, stops


def test_the_reference_holds_patience_evaluations_too():
    """A bound flat from its first evaluation stops once the steps before the window hold
    patience evaluations: at patience x every / (1 - share), 200 steps with the defaults, not at
    the first window's end (60) on the luck of one evaluation."""
    steps = 10 * np.arange(1, 101)
    for share, first in ((WINDOW, PATIENCE * 10 / (1 - WINDOW)), (0.0, 2 * PATIENCE * 10)):
        assert _run(steps, np.full(steps.size, -1000.0), 1e-3, 10, share=share)[0] == first


def _estimated(p, a, noise, seed, big_n=100_000, rows=256, steps=2000, every=10):
    """A bound known exactly, b(t) = b_inf - A t^-a with A t^-a = tol |b_inf| at t = p (tol =
    1e-3), estimated as the rule reads it: N / n times the sum of n rows' terms, each row's term
    its share of b(t) plus a fluctuation (an AR(1) in the evaluations, spread ``noise``) that
    moves with q and that the pairing of rows does not cancel. Returns the steps, the estimates
    and the rows' terms; the rise still to come at step s is (s / p)^-a tol exactly."""
    rng = np.random.default_rng(seed)
    t = every * np.arange(1, steps // every + 1)
    b_inf = -5.0 * big_n
    exact = b_inf - 1e-3 * abs(b_inf) * (t / p) ** -a
    base, wobble, terms = rng.normal(-5.0, 1.0, rows), np.zeros(rows), []
    for i in range(t.size):
        wobble = 0.7 * wobble + np.sqrt(1 - 0.7 ** 2) * rng.normal(0.0, noise, rows)
        terms.append(base - base.mean() + exact[i] / big_n + wobble)
    return t, [big_n / rows * x.sum() for x in terms], terms


def test_a_bound_estimated_beyond_tol_stops_after_its_plateau():
    """The exact bound is within tol of its plateau from step p = 100 on (a mixture of 10^5
    points on minibatches of 100 gets there after 100 to 300 steps); its estimate on 256 rows
    moves by several tol with q (standard error of a change 2 to 3 tol), so the rule cannot see
    the last tol of the rise and stops at its first possible step, 200, or when the noise shows
    a rise, later: every stop comes after p and by 4 p (at most 1 tol still to come, (S / p)^-a
    exactly), and its message says that the estimate does not resolve tol."""
    for seed in range(5):
        t, values, terms = _estimated(100, 0.6, 0.15, seed)
        stop, why = _run(t, values, 1e-3, 10, terms=terms, size=100_000)
        assert stop is not None and 100 <= stop <= 400 and "does not resolve tol" in why, (seed, stop)


def test_a_precise_estimate_sees_a_slow_rise_that_a_coarse_one_does_not():
    """p = 600: with the rows' fluctuation 10 times below the previous test's (an evaluation
    subsample 100 times larger), the rise is resolved: every stop comes after p and within 2.5 p
    (1.5 p by the window's analysis at a = 0.6, module docstring, plus the noise's delays); with
    the coarse estimate every stop comes before p, with more than tol still to come (what a
    larger ``Minibatch(evaluation_size=)`` mends, docs/stopping.md), and its message says that
    the estimate does not resolve tol."""
    for noise, precise in ((0.015, True), (0.15, False)):
        stops, whys = [], []
        for seed in range(4):
            t, values, terms = _estimated(600, 0.6, noise, seed, steps=3000)
            stop, why = _run(t, values, 1e-3, 10, terms=terms, size=100_000)
            stops.append(stop)
            whys.append("does not resolve tol" in why and "evaluation_size=) than 256 rows" in why)
        if precise:
            assert all(s is not None and 600 <= s <= 1500 for s in stops) and not any(whys), (stops, whys)
        else:
            assert all(s is not None and s < 600 for s in stops) and all(whys), (stops, whys)


def _svi(seed, n=3000, **more):
    model = factorized_mixture(_blobs(n, seed=seed), 3)
    return model.fit(method="stochastic", subsample=vmp.Minibatch("data", 200), seed=seed, progress=False, **more)


def test_a_plateaued_fit_stops_and_says_why():
    result = _svi(0, iterations=2000, tol=1e-3)
    assert result.converged and result.iterations < 2000
    assert "has not improved by more than tol=0.001" in result.message and "5 evaluations" in result.message
    events = [e for e in result.history["events"] if e["source"] == "tol"]
    assert [e["iteration"] for e in events] == [result.iterations] and events[0]["message"] == result.message
    longer = _svi(0, iterations=2000, tol=1e-3, patience=10)
    assert longer.iterations > result.iterations and "10 evaluations" in longer.message


def test_the_evaluation_subsample_does_not_depend_on_evaluate_every():
    """A fixed default size (EVALUATION_SIZE rows, drawn once from the seed): fits evaluating
    every 5 and every 20 steps give the same bits at the steps both evaluate."""
    a = _svi(3, iterations=40, evaluate_every=5)
    b = _svi(3, iterations=40, evaluate_every=20)
    assert f"estimate from {EVALUATION_SIZE} of 3000" in a.extra["bound"] == b.extra["bound"]
    ea, eb = a.history["evaluations"], b.history["evaluations"]
    common = sorted(set(ea["iteration"]) & set(eb["iteration"]))
    assert common == [0, 20, 40]
    for t in common:
        i, j = list(ea["iteration"]).index(t), list(eb["iteration"]).index(t)
        assert ea["elbo"][i] == eb["elbo"][j] and ea["stderr"][i] == eb["stderr"][j]


def test_a_resumed_fit_stops_where_an_uninterrupted_one_does(tmp_path):
    """The rule's memory is in the State: a fit resumed from its checkpoint file stops where the
    uninterrupted one does."""
    whole = _svi(2, iterations=2000, tol=1e-3)
    model = factorized_mixture(_blobs(3000, seed=2), 3)
    kw = dict(method="stochastic", subsample=vmp.Minibatch("data", 200), seed=2, progress=False, tol=1e-3)
    path = tmp_path / "first.npz"
    model.fit(iterations=42, checkpoint=path, **kw)
    more = model.fit(iterations=2000, resume=path, **kw)
    assert whole.converged and more.iterations == whole.iterations and more.message == whole.message


def test_tol_and_patience_are_checked():
    with pytest.raises(vmp.VMPError, match="evaluate_every"):
        _mf(True).fit(method="stochastic", subsample=vmp.PerNode(2), tol=1e-3, evaluate_every=0)
    with pytest.raises(vmp.OptionError, match="patience= takes a positive integer"):
        _mf(True).fit(method="stochastic", subsample=vmp.PerNode(2), tol=1e-3, patience=0)
    with pytest.raises(vmp.VMPError, match="patience"):
        _mf(True).fit(patience=3)
