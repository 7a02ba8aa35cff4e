"""Smoothed and filtered states and forecasts of a Gaussian chain (vmp/time_series.py).

With constant parameters the filter is the Kalman filter (hand-written in
tests/test_gaussian_chain.py) to 1e-10, and a forecast's draws have the exact predictive's mean
C A^k m and covariance C P_k C^T + R (P_{k+1} = A P_k A^T + Q from the last step's smoothed
covariance). With learned or switching dynamics the last step's filter is its smoothed marginal.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import vmp
from tests.test_gaussian_chain import _simulate, _system, _vector_model, kalman
from vmp.models import linear_dynamical_system, switching_lds


def _fitted():
    rng = np.random.default_rng(5)
    a, q, c, r, m0, p0 = _system(rng)
    lengths = np.array([10, 6])
    y, seen = np.zeros((2, 10, 3)), np.arange(10) < lengths[:, None]
    seen[0, 4] = False
    for i, n in enumerate(lengths):
        y[i, :n] = _simulate(rng, a, q, c, r, m0, p0, n)[1]
    model = _vector_model(y, seen, lengths, a, q, c, r, m0, p0)
    model.fit(iterations=2)
    return model, (a, q, c, r, m0, p0), y, seen, lengths


def test_filter_is_the_kalman_filter_and_intervals_are_normal():
    model, system, y, seen, lengths = _fitted()
    filt, smooth = model["x"].filtered(level=0.9), model["x"].smoothed(level=0.9)
    for i, n in enumerate(lengths):
        ms, ps, _, _ = kalman(y[i, :n], seen[i, :n], *system)
        mf, pf = kalman.filtered
        np.testing.assert_allclose(filt.mean[i, :n], mf, rtol=0, atol=1e-10)
        np.testing.assert_allclose(filt.covariance[i, :n], pf, rtol=0, atol=1e-10)
        np.testing.assert_allclose(smooth.mean[i, :n], ms, rtol=0, atol=1e-10)
    sd = np.sqrt(np.diagonal(smooth.covariance, axis1=-2, axis2=-1))
    np.testing.assert_allclose(smooth.upper - smooth.mean, 1.6448536269514722 * sd, rtol=1e-12)
    np.testing.assert_allclose(smooth.mean - smooth.lower, smooth.upper - smooth.mean, rtol=1e-12)


def test_forecast_draws_have_the_exact_predictive_moments():
    model, (a, q, c, r, _, _), _, _, lengths = _fitted()
    f = model.forecast(4, draws=20000, seed=1)
    assert f.draws.shape == (20000, 2, 4, 3) and f.states.shape == (20000, 2, 4, 2)
    p = model["x"].parameters
    for i, n in enumerate(lengths):
        m, cov = p["mean"][i, n - 1], p["covariance"][i, n - 1]
        for k in range(4):
            m, cov = a @ m, a @ cov @ a.T + q
            want_mean, want_cov = c @ m, c @ cov @ c.T + r
            got = f.draws[:, i, k]
            se = np.sqrt(np.diag(want_cov) / len(got))
            assert np.all(np.abs(got.mean(0) - want_mean) < 5 * se)
            np.testing.assert_allclose(np.cov(got.T), want_cov, rtol=0.05, atol=0.05 * np.max(want_cov))
    again = model.forecast(4, draws=20000, seed=1)
    np.testing.assert_array_equal(again.draws, f.draws)


def test_last_filtered_step_is_the_smoothed_one_with_learned_and_switching_dynamics():
    rng = np.random.default_rng(6)
    y = np.cumsum(rng.normal(size=(60, 2)), axis=0) + rng.normal(size=(60, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        for model in (linear_dynamical_system(y, 2), switching_lds(y, 2, 2)):
            model.fit(iterations=5)
            filt, smooth = model["x"].filtered(), model["x"].smoothed()
            np.testing.assert_allclose(filt.mean[:, -1], smooth.mean[:, -1], rtol=0, atol=1e-9)
            np.testing.assert_allclose(filt.covariance[:, -1], smooth.covariance[:, -1], rtol=0, atol=1e-9)
            assert np.all(filt.sd[:, :-1] >= smooth.sd[:, :-1] - 1e-12)  # the smoother reads more data
            f = model.forecast(3, draws=50)
            assert f.mean.shape == (1, 3, 2) and np.all(np.isfinite(f.draws))


def test_forecast_errors():
    model, *_ = _fitted()
    with pytest.raises(vmp.GraphError, match="steps"):
        model.forecast(0)
    with pytest.raises(vmp.GraphError, match="'x'.*observed"):
        model.forecast(2, name="x")
    rng = np.random.default_rng(0)
    with vmp.Model("inputs") as m:
        with vmp.Plate("time", 5):
            x = vmp.GaussianMarkovChain("x", np.zeros(1), np.eye(1), np.eye(1), np.eye(1),
                                        inputs=(np.ones((1, 1)), np.ones((5, 1))))
            vmp.Normal("y", vmp.dot(x, [1.0]), 1.0, observed=rng.normal(size=5))
    m.fit(iterations=2)
    with pytest.raises(vmp.GraphError, match="inputs"):
        m.forecast(2)
    assert m.forecast(2, inputs=np.zeros((2, 1)), draws=10).mean.shape == (2,)
