"""The stopping rule of stochastic fits (tol=, vmp/inference/stopping.py): learning-curve
extrapolation, against a direct least-squares computation, Monte Carlo coverage on curves with a
known limit, and hindsight on mixture SVI fits."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import gaussian_mixture
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
    in at least 90% of draws (measured 95% at theta = 1, 100% at 0.3) and above it by at most
    10 noise sds on average (measured 2.2 and 7.5): an upper limit, not an unbounded one."""
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
    model = gaussian_mixture(_blobs(3000, seed=seed), 3)
    return model.fit(method="stochastic", subsample=vmp.Minibatch("data", 500), evaluate_every=EVERY, seed=seed,
                     progress=False, **more)


def _stops_improving(result, tol) -> int:
    """With hindsight: the first evaluated step after which no evaluation exceeds its bound by
    more than tol relative (the last evaluated step if there is none)."""
    ev = result.history["evaluations"]
    it, b = ev["iteration"][1:], ev["elbo"][1:]
    return next(int(t) for k, t in enumerate(it) if b[k:].max() - b[k] <= tol * abs(b[k]))


LATE = 30 * EVERY


def test_tol_ends_a_mixture_svi_fit_after_its_bound_stops_improving():
    """Over 8 seeds the rule never stops before 90% of the step at which, with hindsight (a
    300-step run of the same seed), the bound stops improving by more than tol, and stops at most
    LATE = 30 evaluations after it; a fit whose bound still improves near 300 steps runs on.
    (Measured: 10 to 140 steps late (seed 1: P = 20, stopped at 160: its evaluations stay within 2 noise sds of tol); seed 6 improves until the end.)"""
    for seed in range(8):
        stopped = _svi(seed, iterations=300, tol=TOL)
        whole = _svi(seed, iterations=300)
        plateau = _stops_improving(whole, TOL)
        np.testing.assert_array_equal(stopped.elbo, whole.elbo[:len(stopped.elbo)])
        if plateau >= 300 - LATE:
            assert stopped.iterations > plateau - 0.1 * plateau, seed
            continue
        assert stopped.converged, seed
        assert plateau - 0.1 * plateau <= stopped.iterations <= plateau + LATE, (seed, plateau, stopped.iterations)
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
    model = gaussian_mixture(_blobs(3000, seed=2), 3)
    kw = dict(method="stochastic", subsample=vmp.Minibatch("data", 500), evaluate_every=EVERY, seed=2, progress=False)
    first = model.fit(iterations=42, tol=TOL, **kw)
    more = model.fit(iterations=300, tol=TOL, resume=first, **kw)
    assert whole.converged and more.iterations == whole.iterations and more.message == whole.message
