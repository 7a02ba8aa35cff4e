"""The stopping rule of stochastic fits (tol=, vmp/inference/stopping.py): patience on the
evaluated bound with the standard error of its change, against a hand-written replay, Monte Carlo
for the standard error, and fits (the message and history, a fixed evaluation subsample whatever
evaluate_every is, resume)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import gaussian_mixture
from tests.golden_fits import _blobs, _mf
from vmp.inference.stopping import PATIENCE, Plateau, change_stderr, observe
from vmp.inference.subsample import EVALUATION_SIZE


def _replay(values, tol, patience):
    """The rule in words, for exact bounds: keep the best; count evaluations that do not beat it
    by more than tol |best|; stop at the patience-th in a row. Returns the index of the stop."""
    best, waited = values[0], 0
    for i, v in enumerate(values[1:], 1):
        if v - best > tol * abs(best):
            best, waited = v, 0
        else:
            waited += 1
            if waited == patience:
                return i
    return None


def _run(values, tol, patience=PATIENCE, terms=None, size=0):
    memory = Plateau()
    for i, v in enumerate(values):
        memory, why = observe(memory, i, v, None if terms is None else terms[i], size, tol, patience)
        if why is not None:
            return i, why
    return None, None


def test_exact_bounds_stop_as_the_rule_in_words():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = 80
        values = -1000 + 900 * (1 - np.exp(-np.arange(n) / rng.uniform(3, 30))) + rng.normal(0, rng.uniform(0, 1), n)
        tol, patience = rng.choice([1e-4, 1e-3, 1e-2]), int(rng.integers(1, 8))
        assert _run(values, tol, patience)[0] == _replay(values, tol, patience)


def test_slow_gains_add_up_until_they_count():
    """+0.4 tol |b| per evaluation never counts alone, but beats the best every 3rd evaluation."""
    values = -1000.0 * (1 - 0.4e-3 * np.arange(30))
    assert _run(values, 1e-3, patience=3)[0] is None
    assert _run(values, 1e-3, patience=2)[0] == 2


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
    subsample wanders by tens of tol |b|. Without the standard error the walk keeps setting new
    bests (the stop comes later than patience on most of 20 runs); with it none counts."""
    late, stops = 0, []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        rows, big_n = 200, 100_000
        base = rng.normal(-5.0, 1.0, rows)
        terms = list(base + np.cumsum(rng.normal(0, 0.02, (60, rows)), axis=0))
        values = [big_n / rows * t.sum() for t in terms]
        plain = _run(values, 1e-5)[0]
        late += plain is None or plain > PATIENCE
        stop, why = _run(values, 1e-5, terms=terms, size=big_n)
        stops.append(stop)
    assert late >= 10 and stops == [PATIENCE] * 20, (late, stops)
    assert "standard errors" in why


def _svi(seed, n=3000, **more):
    model = gaussian_mixture(_blobs(n, seed=seed), 3)
    return model.fit(method="stochastic", subsample=vmp.Minibatch("data", 200), seed=seed, progress=False, **more)


def test_a_plateaued_fit_stops_and_says_why():
    result = _svi(0, iterations=2000, tol=1e-3)
    assert result.converged and result.iterations < 2000
    assert "has not improved by more than tol=0.001" in result.message and "for 5 evaluations" in result.message
    events = [e for e in result.history["events"] if e["source"] == "tol"]
    assert [e["iteration"] for e in events] == [result.iterations] and events[0]["message"] == result.message
    best = int(result.message.split(" at iteration ")[1].split(",")[0])
    assert result.iterations - best == PATIENCE * 10  # evaluate_every=10 by default
    longer = _svi(0, iterations=2000, tol=1e-3, patience=10)
    assert longer.iterations > result.iterations and "for 10 evaluations" in longer.message


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


def test_a_resumed_fit_stops_where_an_uninterrupted_one_does():
    whole = _svi(2, iterations=2000, tol=1e-3)
    model = gaussian_mixture(_blobs(3000, seed=2), 3)
    kw = dict(method="stochastic", subsample=vmp.Minibatch("data", 200), seed=2, progress=False, tol=1e-3)
    first = model.fit(iterations=42, **kw)
    more = model.fit(iterations=2000, resume=first, **kw)
    assert whole.converged and more.iterations == whole.iterations and more.message == whole.message


def test_tol_and_patience_are_checked():
    with pytest.raises(vmp.VMPError, match="evaluate_every"):
        _mf(True).fit(method="stochastic", subsample=vmp.PerNode(2), tol=1e-3, evaluate_every=0)
    with pytest.raises(vmp.OptionError, match="patience= takes a positive integer"):
        _mf(True).fit(method="stochastic", subsample=vmp.PerNode(2), tol=1e-3, patience=0)
    with pytest.raises(vmp.VMPError, match="patience"):
        _mf(True).fit(patience=3)
