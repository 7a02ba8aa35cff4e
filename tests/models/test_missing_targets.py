"""NaN targets of the regression builders and NaN entries of factor analysis are missing
values: the fit equals the fit without them (closed form for the regression), and the
imputed entries are the posterior predictive."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import factor_analysis, linear_regression, mixture_of_regressions


def _regression(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = np.c_[np.ones(n), rng.normal(size=(n, 2))]
    return x, x @ np.array([0.5, 1.0, -1.0]) + 0.5 * rng.normal(size=n)


def test_nan_targets_of_a_linear_regression_drop_out_and_are_predicted():
    x, y = _regression()
    gone = np.zeros(len(y), bool)
    gone[[3, 17, 30]] = True
    model = linear_regression(x, np.where(gone, np.nan, y), noise_precision=4.0, prior_precision=0.5)
    res = model.fit(iterations=5)
    prec = 0.5 * np.eye(3) + 4.0 * x[~gone].T @ x[~gone]
    cov = np.linalg.inv(prec)
    mean = cov @ (4.0 * x[~gone].T @ y[~gone])
    np.testing.assert_allclose(model["w"].mean, mean, rtol=1e-10)
    kept = linear_regression(x[~gone], y[~gone], noise_precision=4.0, prior_precision=0.5)
    assert res.final_elbo == pytest.approx(kept.fit(iterations=5).final_elbo, rel=1e-12)
    out = model.impute("y")
    np.testing.assert_allclose(out.mean, x[gone] @ mean, rtol=1e-10)
    np.testing.assert_allclose(out.variance, np.einsum("ni,ij,nj->n", x[gone], cov, x[gone]) + 0.25, rtol=1e-10)


def test_nan_targets_with_a_learned_noise_equal_the_fit_without_those_rows():
    x, y = _regression(seed=1)
    gone = np.arange(len(y)) % 4 == 1
    model = linear_regression(x, np.where(gone, np.nan, y))
    kept = linear_regression(x[~gone], y[~gone])
    a, b = model.fit(iterations=50, tol=0.0), kept.fit(iterations=50, tol=0.0)
    assert a.final_elbo == pytest.approx(b.final_elbo, rel=1e-12)
    np.testing.assert_allclose(model["w"].mean, kept["w"].mean, rtol=1e-12)
    np.testing.assert_allclose(model["tau"].mean, kept["tau"].mean, rtol=1e-12)


def test_nan_targets_of_a_mixture_of_regressions_drop_their_rows():
    rng = np.random.default_rng(3)
    n = 120
    x = np.c_[np.ones(n), rng.uniform(0.5, 2.0, size=n)]
    z = rng.integers(0, 2, n)
    y = np.sum(x * np.array([[1.0, 2.0], [-1.0, -2.0]])[z], 1) + 0.1 * rng.normal(size=n)
    gone = rng.uniform(size=n) < 0.2
    model = mixture_of_regressions(x, np.where(gone, np.nan, y), 2, noise_prior=(1e-2, 1e-2))
    kept = mixture_of_regressions(x[~gone], y[~gone], 2, noise_prior=(1e-2, 1e-2))
    a, b = model.fit(iterations=300, tol=1e-12, seed=0), kept.fit(iterations=300, tol=1e-12, seed=0)
    assert a.final_elbo == pytest.approx(b.final_elbo, rel=1e-9)
    order = lambda m: np.argsort(m["w"].mean[:, 0])  # noqa: E731
    np.testing.assert_allclose(model["w"].mean[order(model)], kept["w"].mean[order(kept)], atol=1e-6)
    assert model["z"].barren.sum() == gone.sum()


def test_nan_entries_of_factor_analysis_are_its_mask():
    rng = np.random.default_rng(0)
    y = rng.normal(size=(30, 3)) @ rng.normal(size=(5, 3)).T + 0.3 * rng.normal(size=(30, 5))
    seen = rng.uniform(size=y.shape) > 0.15
    a = factor_analysis(np.where(seen, y, np.nan), 3)
    b = factor_analysis(np.where(seen, y, 123.0), 3, mask=seen)
    ra, rb = a.fit(iterations=20, seed=0), b.fit(iterations=20, seed=0)
    assert ra.final_elbo == rb.final_elbo
    np.testing.assert_array_equal(a["W"].mean, b["W"].mean)
    np.testing.assert_array_equal(a.impute("y").mean, b.impute("y").mean)
    assert a.impute("y").mean.shape == ((~seen).sum(),)


@pytest.mark.parametrize("build,error,words", [
    (lambda: linear_regression(np.full((5, 2), np.nan), np.ones(5)), vmp.DataError, "inputs contains NaN"),
    (lambda: linear_regression(np.ones((5, 2)), np.full(5, np.nan)), vmp.DataError, "targets has no observed entry"),
    (lambda: linear_regression(np.ones((5, 2)), np.r_[np.ones(4), np.inf]), vmp.DataError, "targets contains inf"),
    (lambda: mixture_of_regressions(np.ones((5, 2)), np.r_[np.ones(4), -np.inf], 2), vmp.DataError, "inf"),
    (lambda: factor_analysis(np.ones(5), 2), vmp.ShapeError, "2-D"),
    (lambda: factor_analysis(np.ones((5, 3)), 2, mask=np.ones((5, 3))), vmp.DataError, "booleans"),
    (lambda: factor_analysis([[1.0, 2.0], [3.0]], 2), vmp.DataError, "factor_analysis: data must be numbers in a rectangular"),
    (lambda: linear_regression([[1.0, 2.0], [3.0]], [1.0, 2.0]), vmp.DataError, "inputs must be numbers"),
    (lambda: linear_regression(np.ones((2, 2)), [1.0, [2.0]]), vmp.DataError, "targets must be numbers"),
])
def test_missing_values_are_checked(build, error, words):
    with pytest.raises(error, match=words):
        build()
