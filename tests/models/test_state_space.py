"""The state-space builders (models/state_space.py) on simulated data.

- local level: with its vague default priors, the posterior means of the noise precisions are the
  maximum-likelihood estimates (Nelder-Mead on the Kalman filter's prediction-error likelihood,
  written here) to 1%, with missing steps;
- the VB linear dynamical system recovers A's eigenvalues within 0.05 and smooths the signal C x
  within 5% of the RMSE of the Kalman smoother given the true parameters;
- with correlated output noise (``output_noise="full"``: y_t ~ N(C x_t, R^-1), a Wishart R),
  T = 2000, D = 2, M = 3: R^-1 within 10% (Frobenius) of the simulated covariance, A's
  eigenvalues within 0.05 and the smoothed signal within 5% of the true Kalman smoother's RMSE;
- the 2-regime switching LDS finds the regimes with at least 95% accuracy.
(The T = 10^4 runs of the issue are benchmarks/bench_kalman.py's.)
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

import vmp
from tests.test_gaussian_chain import kalman
from vmp.models import linear_dynamical_system, local_level, switching_lds


def _local_level_loglik(y, level_sd, noise_sd):
    seen = ~np.isnan(y)
    m, p, total = np.nanmean(y), 100 * np.nanvar(y), 0.0
    for t in range(len(y)):
        if t:
            p = p + level_sd ** 2
        if seen[t]:
            s = p + noise_sd ** 2
            e = y[t] - m
            total += -0.5 * (np.log(2 * np.pi * s) + e * e / s)
            k = p / s
            m, p = m + k * e, (1 - k) * p
    return total


def test_local_level_is_the_maximum_likelihood_fit():
    rng = np.random.default_rng(0)
    steps = 1000
    y = np.cumsum(rng.normal(0, 0.3, steps)) + rng.normal(0, 1, steps)
    y[100:110] = np.nan
    model = local_level(y)
    assert model.fit(iterations=300, tol=1e-9).converged
    level_sd = 1 / np.sqrt(model["level_precision"].mean[0])
    noise_sd = 1 / np.sqrt(model["noise_precision"].mean)
    best = minimize(lambda p: -_local_level_loglik(y, *np.exp(p)), np.log([0.5, 1.0]), method="Nelder-Mead",
                    options={"xatol": 1e-7, "fatol": 1e-10})
    np.testing.assert_allclose([level_sd, noise_sd], np.exp(best.x), rtol=0.01)
    gap = model.impute("y")
    assert gap.mean.shape == (10,) and np.all(np.isfinite(gap.mean))


def _simulate_lds(rng, steps, a, q, c, r):
    x = np.zeros((steps, len(a)))
    x[0] = rng.normal(size=len(a))
    for t in range(1, steps):
        x[t] = a @ x[t - 1] + rng.multivariate_normal(np.zeros(len(a)), q)
    return x, x @ c.T + rng.multivariate_normal(np.zeros(len(r)), r, size=steps)


def _smooths_like_the_true_kalman_smoother(model, x, y, a, q, c, r) -> None:
    """The smoothed signal E[C] E[x_t] within 5% of the RMSE of the Kalman smoother given the
    simulated parameters."""
    signal = x @ c.T
    ms = kalman(y, np.ones(len(y), bool), a, q, c, r, np.zeros(2), np.eye(2))[0]
    rmse_true = np.sqrt(np.mean((ms @ c.T - signal) ** 2))
    rmse_vb = np.sqrt(np.mean((model["x"].mean[0] @ model["C"].mean.T - signal) ** 2))
    assert rmse_vb <= 1.05 * rmse_true, (rmse_vb, rmse_true)


def test_lds_recovers_the_dynamics_and_smooths_like_the_true_kalman_smoother():
    rng = np.random.default_rng(1)
    a = np.array([[0.9, 0.2], [-0.1, 0.7]])
    c, q, r = rng.normal(size=(3, 2)), 0.1 * np.eye(2), 0.2 * np.eye(3)
    x, y = _simulate_lds(rng, 1000, a, q, c, r)
    model = linear_dynamical_system(y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        model.fit(iterations=80, seed=0)
    true, found = (np.sort_complex(np.linalg.eigvals(m)) for m in (a, model["A"].mean))
    assert np.max(np.abs(true - found)) < 0.05, (true, found)
    _smooths_like_the_true_kalman_smoother(model, x, y, a, q, c, r)


def test_lds_with_a_full_output_covariance():
    rng = np.random.default_rng(1)
    a = np.array([[0.95, 0.2], [-0.2, 0.9]])
    c, q = rng.normal(size=(3, 2)), 0.1 * np.eye(2)
    r = 0.2 * np.array([[1.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 1.0]])
    x, y = _simulate_lds(rng, 2000, a, q, c, r)
    model = linear_dynamical_system(y, 2, output_noise="full")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        model.fit(iterations=150, seed=0)
    found = np.linalg.inv(model["R"].mean)
    assert np.linalg.norm(found - r) < 0.1 * np.linalg.norm(r), (found, r)
    true, eig = (np.sort_complex(np.linalg.eigvals(m)) for m in (a, model["A"].mean))
    assert np.max(np.abs(true - eig)) < 0.05, (true, eig)
    _smooths_like_the_true_kalman_smoother(model, x, y, a, q, c, r)


def test_switching_lds_finds_the_regimes():
    """A persistent regime (x_{t+1} = 0.99 x_t, small noise) and a volatile one (0.6, large
    noise); the regime of step t governs the step to t + 1."""
    rng = np.random.default_rng(3)
    steps = 600
    s = np.zeros(steps, int)
    for t in range(1, steps):
        s[t] = s[t - 1] if rng.random() < 0.97 else 1 - s[t - 1]
    x = np.zeros(steps)
    for t in range(1, steps):
        x[t] = [0.99, 0.6][s[t - 1]] * x[t - 1] + np.sqrt([0.05, 1.0][s[t - 1]]) * rng.normal()
    y = (2.0 * x + 0.1 * rng.normal(size=steps))[:, None]
    model = switching_lds(y, 2, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        model.fit(iterations=30, seed=0)
    found = model["s"].mean[0, :-1].argmax(-1)
    accuracy = max(np.mean(found == s[:-1]), np.mean(found != s[:-1]))
    assert accuracy >= 0.95, accuracy


def test_sequences_of_different_lengths_and_missing_entries():
    """Two series padded into one plate with NaN entries: the padded entries are absent (weight
    0), the NaN ones latent (imputed)."""
    rng = np.random.default_rng(4)
    y1, y2 = rng.normal(size=(12, 2)), rng.normal(size=(7, 2))
    y1[3, 0] = np.nan
    model = linear_dynamical_system([y1, y2], 1, learn=("transition", "noise_precision"), loading=np.ones((2, 1)),
                                    output_precision=np.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        model.fit(iterations=5)
    assert model["x"].lengths.tolist() == [12, 7]
    assert model.impute("y").mean.shape == (1,)
    assert model["x"].mean.shape == (2, 12, 1)


def test_full_output_noise_with_different_lengths_and_missing_entries():
    """The padded steps weigh 0 (the full-noise y has one weight per step), a NaN entry is a
    latent coordinate of its step given the others; learned C @ x or a constant loading."""
    rng = np.random.default_rng(4)
    y1, y2 = rng.normal(size=(12, 3)), rng.normal(size=(7, 3))
    y1[3, 0] = np.nan
    for options in ({}, {"learn": ("transition", "noise_precision", "output_precision"), "loading": np.ones((3, 1))}):
        model = linear_dynamical_system([y1, y2], 1, output_noise="full", **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", vmp.ConvergenceWarning)
            model.fit(iterations=5)
        assert model["y"].event_shape == (3,) and model["R"].event_shape == (3, 3)
        assert model.impute("y").mean.shape == (1,)
        assert np.isfinite(model.elbo())
    given = linear_dynamical_system([y1, y2], 1, output_noise="full", learn=("transition", "loading"),
                                    noise_precision=np.ones(1), output_precision=np.full(3, 2.0))
    assert "R" not in given and given["y"].event_shape == (3,)
    with pytest.raises(vmp.ShapeError, match="node 'y'"):
        linear_dynamical_system([y1, y2], 1, output_noise="full", learn=("transition", "loading"),
                                noise_precision=np.ones(1), output_precision=np.eye(2))


@pytest.mark.parametrize("build,args,error", [
    (local_level, ([],), vmp.DataError),
    (local_level, ([np.ones((3, 2))],), vmp.ShapeError),
    (local_level, (np.full(5, np.nan),), vmp.DataError),
    (linear_dynamical_system, (np.ones((5, 2)), 0), vmp.ShapeError),
    (linear_dynamical_system, (np.ones((5, 2)), 1), None),
    (linear_dynamical_system, (np.ones((5, 2)), 1, "diag"), vmp.OptionError),
    (switching_lds, (np.ones((5, 2)), 1, 1), vmp.ShapeError),
])
def test_builder_errors_name_the_builder(build, args, error):
    if error is None:
        with pytest.raises(vmp.GraphError, match="lds.*'transition'"):
            build(*args, learn=("noise_precision", "loading", "output_precision"))
        with pytest.raises(vmp.GraphError, match="lds.*learn"):
            build(*args, learn=("dynamics",))
        return
    with pytest.raises(error, match="^mine: "):
        if len(args) == 3 and build is linear_dynamical_system:
            build(*args[:2], output_noise=args[2], name="mine")
        else:
            build(*args, name="mine")
