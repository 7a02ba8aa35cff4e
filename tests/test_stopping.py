"""The stopping rule of stochastic fits (tol=, vmp/inference/stopping.py): learning-curve
extrapolation, against a direct least-squares computation, Monte Carlo coverage on curves with a
known limit, and hindsight on mixture SVI fits."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import vmp
from tests.helpers import factorized_mixture
from tests.golden_fits import _blobs, _mf
from vmp.inference import stopping
from vmp.inference.stopping import TOL_CLOCK, TOL_MIN, TOL_SCALES, headroom, stop_at

EVERY, TOL = 5, 3e-4
FIRST = 7  # evaluations after step 0 before the rule may stop (TOL_MIN + TOL_PATIENCE - 1)


def _direct(steps, values) -> float:
    """The module docstring's headroom, curve by curve: b = c + a f_theta as a design matrix
    [1, f] solved by np.linalg.lstsq, Var(c) = s^2 (1 + r) / (1 - r) [(X^T X)^-1]_00."""
    t = steps[-1]
    first = min(int(np.searchsorted(steps, stopping.TOL_HISTORY * t)), len(steps) - TOL_MIN)
    s, y = steps[first:], values[first:]
    fits = []
    for theta in TOL_SCALES:
        x = np.column_stack([np.ones_like(s), np.exp(-((s / t) ** TOL_CLOCK - 1) / (TOL_CLOCK * theta))])
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        fits.append((float(np.sum((y - x @ coef) ** 2)), coef[0], np.linalg.inv(x.T @ x)[0, 0], y - x @ coef))
    sse = np.array([f[0] for f in fits])
    s2 = sse.min() / (len(y) - 3)
    res = fits[int(sse.argmin())][3]
    r = float(np.clip(np.correlate(res[1:], res[:-1])[0] / np.dot(res, res), 0, 0.95))
    v = s2 * (1 + r) / (1 - r)
    w = np.exp(-(sse - sse.min()) / (2 * v))
    w = w / w.sum()
    gap = np.array([f[1] for f in fits]) - y[-1]
    var = np.array([v * f[2] for f in fits])
    mean = w @ gap
    return mean + stopping.TOL_Z * np.sqrt(w @ (var + (gap - mean) ** 2)) + stopping.TOL_NOISE_Z * np.sqrt(s2)


def _curve(rng, n=40, every=5, theta=0.3, left=20.0, noise=0.5):
    """n evaluations every ``every`` steps of 100 - left f_theta(s) plus noise: ``left`` below
    the limit 100 at the last one."""
    steps = every * np.arange(1.0, n + 1)
    f = np.exp(-((steps / steps[-1]) ** TOL_CLOCK - 1) / (TOL_CLOCK * theta))
    return steps, 100.0 - left * f + noise * rng.normal(size=n)


def test_headroom_is_the_averaged_least_squares_limit_plus_its_upper_limit():
    rng = np.random.default_rng(0)
    for _ in range(5):
        steps, y = _curve(rng, n=int(rng.integers(TOL_MIN, 60)))
        assert headroom(steps, y)[0] == pytest.approx(_direct(steps, y), rel=1e-9, abs=1e-9)


def test_headroom_does_not_depend_on_the_units_of_steps_and_bound():
    steps, y = _curve(np.random.default_rng(1))
    room = headroom(steps, y)[0]
    assert headroom(7.0 * steps, y)[0] == pytest.approx(room, rel=1e-9)
    assert headroom(steps, 3.0 * y - 1e4)[0] == pytest.approx(3.0 * room, rel=1e-7)


@pytest.mark.parametrize("theta", [0.3, 1.0])
def test_headroom_covers_the_rise_left_near_the_limit(theta):
    """Monte Carlo: on 300 noisy curves (noise sd 0.5) that end 1.0 below their limit of 100,
    with a time constant in the rule's range, the headroom is above the rise left (100 - y_t)
    in at least 90% of draws (measured 95% at theta = 1, 100% at 0.3; 85% and 99% with the
    tried TOL_Z = TOL_NOISE_Z = 1.5) and above it by at most 10 noise sds on average (measured
    2.2 and 7.5): an upper limit, not an unbounded one."""
    rng = np.random.default_rng(2)
    draws = [_curve(rng, theta=theta, left=1.0) for _ in range(300)]
    rooms = np.array([headroom(s, y)[0] for s, y in draws])
    left = np.array([100.0 - y[-1] for _, y in draws])
    assert np.mean(rooms >= left) >= 0.9
    assert np.mean(rooms - left) <= 10 * 0.5


def test_a_curve_still_far_from_its_limit_has_headroom():
    """On a curve slower than the rule assumes (time constant 3 t, past TOL_SCALES) 20 below its
    limit, the headroom falls short of the rise left but still sees it go on: many noise sds."""
    steps, y = _curve(np.random.default_rng(3), theta=3.0, noise=0.05)
    assert headroom(steps, y)[0] > 1.0


def test_stop_at_needs_patience_and_the_first_evaluations():
    steps, y = np.arange(1.0, 20.0), np.full(19, -50.0)
    assert stop_at(steps[:FIRST - 1], y[:FIRST - 1], 1.0) is None
    assert stop_at(steps[:FIRST], y[:FIRST], 1e-12) is not None
    rising = y + np.r_[np.zeros(18), 5.0]                # the last evaluation jumps: not flat
    assert stop_at(steps, rising, 1e-3) is None
    assert stop_at(steps[:-1], rising[:-1], 1e-3) is not None


def _svi(seed, **more):
    model = factorized_mixture(_blobs(3000, seed=seed), 3)
    return model.fit(method="stochastic", subsample=vmp.Minibatch("data", 500), evaluate_every=EVERY, seed=seed,
                     progress=False, **more)


#: 400-step fits of _svi's mixture, seeds 0 to 11, the bound evaluated at every step on the
#: subsample an evaluate_every=5 fit uses (examples/tol_replay.py; the rule's constants were
#: chosen on these runs)
RECORDED = json.loads((pathlib.Path(__file__).resolve().parents[1] / "docs" / "figures" / "tol_replay.json").read_text())


def _series(seed: int) -> tuple[np.ndarray, np.ndarray]:
    run = RECORDED[str(seed)]
    return np.array(run["iteration"][1:], float), np.array(run["elbo"][1:])


def _trend(b: np.ndarray) -> np.ndarray:
    """Pool adjacent violators: the non-decreasing least-squares fit to ``b``, the last tenth
    of it pooled into one block (an isotonic fit's last value is otherwise the largest mean of
    any suffix, one evaluation included)."""
    k = max(1, round(0.1 * len(b)))
    blocks = [[float(v), 1.0] for v in b[:-k]] + [[float(b[-k:].mean()), float(k)]]
    merged = []
    for mean, weight in blocks:
        merged.append([mean, weight, 1 if weight == 1.0 else k])
        while len(merged) > 1 and merged[-2][0] > merged[-1][0]:
            (m1, w1, n1), (m2, w2, n2) = merged.pop(), merged.pop()
            merged.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([np.full(n, m) for m, _, n in merged])


def _stops_improving(steps, b, tol) -> tuple[int, np.ndarray]:
    """With hindsight: the first step at which the bound's trend (its isotonic regression) is
    within tol |b| of the trend's final value; and the trend."""
    trend = _trend(b)
    return int(steps[np.argmax(trend >= trend[-1] - tol * abs(trend[-1]))]), trend


def _replayed_stop(steps, b, tol, every) -> int | None:
    keep = steps % every == 0
    s, v = steps[keep], b[keep]
    return next((int(s[j]) for j in range(len(v)) if stop_at(s[:j + 1], v[:j + 1], tol) is not None), None)


SPACINGS, TOLS = (1, 2, 5, 10), (3e-4, 1e-3, 1e-4)
#: early stops (before 0.9 P) may leave at most this much rise of the trend, in tol |b|
LEFT = 2.0


def test_tol_stops_near_where_the_bound_stops_improving_over_seeds():
    """The rule replayed on the 12 recorded runs at tol 3e-4, 1e-3 and 1e-4, evaluations every
    1, 2, 5 and 10 steps (144 cases; a run that never stops counts as stopping at 400), against P, the
    step at which the trend stops improving by more than tol: within 10% of P (two-sided) on at
    least 8 cases (measured 10), never on the first 7 evaluations, at most 2 stops before 0.9 P
    (measured 1) each leaving at most LEFT = 2 tol of rise (measured 1.2), and a median lateness
    of at most 55 steps (measured 45.5): docs/stopping.md. With
    TOL_Z = TOL_NOISE_Z = 1.5 it is within 10% on 17 but stops early 8 times here and leaves up
    to 19 tol on held-out runs; the safer constants are kept. Most stops are late: the goal of
    the issue, within 10% on most runs, is not met."""
    within, early, lags = 0, [], []
    for seed in range(12):
        steps, b = _series(seed)
        for tol in TOLS:
            plateau, trend = _stops_improving(steps, b, tol)
            for every in SPACINGS:
                stop = _replayed_stop(steps, b, tol, every) or 400
                assert stop >= FIRST * every, (seed, tol, every, stop)
                within += abs(stop - plateau) <= 0.1 * plateau
                lags.append(stop - plateau)
                if stop < 0.9 * plateau:
                    left = (trend[-1] - trend[int(np.searchsorted(steps, stop))]) / (tol * abs(trend[-1]))
                    early.append(left)
                    assert left <= LEFT, (seed, tol, every, stop, plateau, left)
    assert within >= 8 and len(early) <= 2 and np.median(lags) <= 55, (within, early, np.median(lags))


def test_a_fit_with_tol_stops_where_the_replay_does():
    """The replay above reads the evaluations a fit with evaluate_every=5 makes: the fit
    follows the recorded run and ends where the rule replayed on it ends."""
    steps, b = _series(0)
    stopped = _svi(0, iterations=300, tol=TOL)
    ev = stopped.history["evaluations"]
    np.testing.assert_allclose(ev["elbo"][1:], b[EVERY - 1::EVERY][:len(ev["elbo"]) - 1], rtol=1e-9)
    assert stopped.converged and stopped.iterations == _replayed_stop(steps, b, TOL, EVERY)
    assert "tol=" in stopped.message and any(e["source"] == "tol" for e in stopped.history["events"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tol_never_stops_the_first_steps(seed):
    result = _svi(seed, iterations=100, tol=1.0)  # any curve counts as flat
    assert result.iterations == FIRST * EVERY and result.converged
    assert [e["iteration"] for e in result.history["events"] if e["source"] == "tol"] == [result.iterations]


def test_tol_needs_evaluations():
    with pytest.raises(vmp.VMPError, match="evaluate_every"):
        _mf(True).fit(method="stochastic", subsample=vmp.PerNode(2), tol=1e-3, evaluate_every=0)


def test_a_resumed_fit_stops_where_an_uninterrupted_one_does():
    """The rule keeps no state: it reads the evaluations, which a resumed fit continues (the
    closing evaluation of the first part, at step 42, is for its report only)."""
    whole = _svi(2, iterations=300, tol=TOL)
    model = factorized_mixture(_blobs(3000, seed=2), 3)
    kw = dict(method="stochastic", subsample=vmp.Minibatch("data", 500), evaluate_every=EVERY, seed=2, progress=False)
    first = model.fit(iterations=42, tol=TOL, **kw)
    more = model.fit(iterations=300, tol=TOL, resume=first, **kw)
    assert whole.converged and more.iterations == whole.iterations and more.message == whole.message
