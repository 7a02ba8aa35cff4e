"""The builders for everyday models: linear regression (closed form), Bayesian PCA with ARD
(switches off the components the data do not need), matrix factorization with biases, and the
mixture of regressions; each builder's input validation."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import vmp
from models import PriorScaleWarning, factor_analysis, linear_regression, matrix_factorization, mixture_of_regressions


def test_linear_regression_is_the_closed_form():
    rng = np.random.default_rng(0)
    x = np.c_[np.ones(25), rng.normal(size=(25, 2))]
    y = x @ np.array([0.5, 1.0, -1.0]) + 0.5 * rng.normal(size=25)
    model = linear_regression(x, y, noise_precision=4.0, prior_precision=0.5)
    res = model.fit(iterations=5)
    prec = 0.5 * np.eye(3) + 4.0 * x.T @ x
    assert np.allclose(model["w"].mean, np.linalg.solve(prec, 4.0 * x.T @ y), rtol=1e-10)
    evidence = stats.multivariate_normal(np.zeros(25), 2.0 * x @ x.T + np.eye(25) / 4.0).logpdf(y)
    assert res.final_elbo == pytest.approx(evidence, rel=1e-11)


def test_the_learned_weight_precision_is_hand_written_coordinate_ascent():
    """alpha ~ Gamma(a0, b0), w ~ N(0, I / alpha), tau ~ Gamma(c0, d0): PRML eqs. (10.93)-(10.97)
    with a Gamma noise precision, iterated here with numpy."""
    rng = np.random.default_rng(3)
    x = np.c_[np.ones(30), rng.normal(size=(30, 2))]
    y = x @ np.array([0.5, 2.0, -1.0]) + 0.4 * rng.normal(size=30)
    a0, b0, c0, d0 = 2.0, 1.0, 2.0, 0.5
    model = linear_regression(x, y, precision_prior=(a0, b0), noise_prior=(c0, d0))
    model.fit(iterations=300, tol=0)
    alpha, tau = a0 / b0, c0 / d0
    for _ in range(300):
        s = np.linalg.inv(alpha * np.eye(3) + tau * x.T @ x)
        m = tau * s @ x.T @ y
        alpha = (a0 + 1.5) / (b0 + 0.5 * (m @ m + np.trace(s)))
        tau = (c0 + 15) / (d0 + 0.5 * (np.sum((y - x @ m) ** 2) + np.trace(x.T @ x @ s)))
    assert np.allclose(model["w"].mean, m, rtol=1e-9)
    assert model["alpha"].mean == pytest.approx(alpha, rel=1e-9)
    assert model["tau"].mean == pytest.approx(tau, rel=1e-9)


def _diabetes_folds(ard: bool):
    """5-fold RMSE and 95% interval coverage of linear_regression's defaults (with an intercept
    column) and of scikit-learn's BayesianRidge or ARDRegression on the raw diabetes data."""
    sklearn = pytest.importorskip("sklearn")
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import ARDRegression, BayesianRidge
    from sklearn.model_selection import KFold

    x, y = load_diabetes(return_X_y=True)
    errors, inside = {"vmp": [], "sklearn": []}, {"vmp": [], "sklearn": []}
    for train, test in KFold(5, shuffle=True, random_state=0).split(x):
        model = linear_regression(np.c_[np.ones(train.size), x[train]], y[train], ard=ard)
        model.fit()
        model.set_data("X", np.c_[np.ones(test.size), x[test]])
        pred = model.predict("y")
        peer = (ARDRegression() if ard else BayesianRidge()).fit(x[train], y[train])
        mean, sd = peer.predict(x[test], return_std=True)
        for who, (mu, s) in {"vmp": (pred.mean, np.sqrt(pred.variance)), "sklearn": (mean, sd)}.items():
            errors[who].append((mu - y[test]) ** 2)
            inside[who].append(np.abs(mu - y[test]) <= stats.norm.ppf(0.975) * s)
    assert sklearn is not None
    return ({k: float(np.sqrt(np.mean(np.concatenate(v)))) for k, v in errors.items()},
            {k: float(np.mean(np.concatenate(v))) for k, v in inside.items()})


@pytest.mark.parametrize("ard", [False, True], ids=["BayesianRidge", "ARDRegression"])
def test_the_defaults_fit_raw_diabetes_as_scikit_learn_does(ard):
    """Raw targets (25 to 346) and inputs (about +-0.1): RMSE within 2% of scikit-learn's
    evidence-maximizing peer (measured: 54.58 against 54.58; ARD 54.64 against 54.58), 95%
    intervals covering 0.90 to 0.98 of the held-out targets (0.966; ARD 0.962)."""
    rmse, coverage = _diabetes_folds(ard)
    assert rmse["vmp"] <= 1.02 * rmse["sklearn"], rmse
    assert 0.90 <= coverage["vmp"] <= 0.98, coverage


def test_a_fixed_prior_far_from_the_data_scale_warns():
    rng = np.random.default_rng(0)
    x = np.c_[np.ones(40), 0.05 * rng.normal(size=(40, 2))]
    y = 150 + x[:, 1:] @ np.array([600.0, -300.0]) + 50 * rng.normal(size=40)
    with pytest.warns(PriorScaleWarning, match="prior_precision=1 is .* orders of magnitude tighter"):
        linear_regression(x, y, prior_precision=1.0)
    with pytest.warns(PriorScaleWarning, match="noise_precision=100 is .* tighter"):
        linear_regression(x, y, noise_precision=100.0)
    standard = (y - y.mean()) / y.std()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        linear_regression(x / np.sqrt(np.mean(x ** 2, 0)), standard, prior_precision=1.0, noise_precision=1.0)


def test_linear_regression_with_ard_switches_off_irrelevant_inputs():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 6))
    y = x[:, :2] @ np.array([2.0, -1.5]) + 0.3 * rng.normal(size=200)
    model = linear_regression(x, y, ard=True)
    model.fit(iterations=500)
    alpha = model["alpha"].mean
    assert alpha[2:].min() > 100 * alpha[:2].max()
    assert np.allclose(model["w"].mean[:2], [2.0, -1.5], atol=0.1)


def test_bayesian_pca_with_ard_switches_off_the_unneeded_components():
    """3 real components out of 10: the other 7 get E[alpha_k] orders of magnitude larger."""
    rng = np.random.default_rng(0)
    n, d = 100, 12
    y = rng.normal(size=(n, 3)) @ rng.normal(size=(d, 3)).T + 0.3 * rng.normal(size=(n, d)) + 1.0
    model = factor_analysis(y, 10)
    model.fit(iterations=300, tol=0.0)
    alpha = np.sort(model["alpha"].mean)
    assert alpha[3:].min() > 100 * alpha[:3].max()
    assert np.allclose(model["mu"].mean, y.mean(0), atol=0.3)


def _ratings(rng, n_users=40, n_items=30, k=2, density=0.5):
    users, items = np.nonzero(rng.uniform(size=(n_users, n_items)) < density)
    u, v = rng.normal(size=(n_users, k)), rng.normal(size=(n_items, k))
    bu, bi = 2.0 * rng.normal(size=n_users), 2.0 * rng.normal(size=n_items)
    r = np.sum(u[users] * v[items], 1) + bu[users] + bi[items] + 3.0 + 0.3 * rng.normal(size=users.size)
    return users, items, r


def _rmse(model, users, items, r, biases):
    m = np.sum(model["u"].mean[users] * model["v"].mean[items], 1)
    if biases:
        m = m + model["user_bias"].mean[users] + model["item_bias"].mean[items] + model["offset"].mean
    return float(np.sqrt(np.mean((m - r) ** 2)))


@pytest.mark.parametrize("factorized", [False, True])
def test_matrix_factorization_with_biases_predicts_held_out_ratings_better(factorized):
    rng = np.random.default_rng(2)
    users, items, r = _ratings(rng)
    test = rng.uniform(size=r.size) < 0.2
    rmse = {}
    for biases in (False, True):
        model = matrix_factorization(users[~test], items[~test], r[~test], 2, n_users=40, n_items=30,
                                     biases=biases, factorized=factorized)
        res = model.fit(iterations=200, seed=0)
        assert np.all(np.diff(res.elbo) >= -1e-9 * np.abs(res.elbo[1:]))
        rmse[biases] = _rmse(model, users[test], items[test], r[test], biases)
    assert rmse[True] < rmse[False]
    assert rmse[True] < 0.6


def test_mixture_of_regressions_recovers_both_lines():
    rng = np.random.default_rng(3)
    n = 150
    x = np.c_[np.ones(n), rng.uniform(0.5, 2.0, size=n)]
    w = np.array([[1.0, 2.0], [-1.0, -2.0]])
    z = rng.integers(0, 2, n)
    y = np.sum(x * w[z], 1) + 0.1 * rng.normal(size=n)
    model = mixture_of_regressions(x, y, 2, noise_prior=(1e-2, 1e-2))
    model.fit(iterations=200, tol=1e-12)
    est = model["w"].mean
    order = np.argsort(est[:, 0])[::-1]
    assert np.allclose(est[order], w, atol=0.1)
    assert np.allclose(model["tau"].mean, 100.0, rtol=0.3)


@pytest.mark.parametrize("build,error,words", [
    (lambda: linear_regression(np.ones(5), np.ones(5)), vmp.ShapeError, "inputs must be a 2-D array"),
    (lambda: linear_regression(np.ones((5, 2)), np.ones(4)), vmp.ShapeError, "must have one length"),
    (lambda: linear_regression(np.ones((5, 2)), np.ones(5), noise_precision=-1.0), vmp.HyperparameterError,
     "noise_precision must be a positive number"),
    (lambda: linear_regression(np.full((5, 2), np.nan), np.ones(5)), vmp.DataError, "NaN"),
    (lambda: factor_analysis(np.ones((5, 3)), 0), vmp.ShapeError, "n_components"),
    (lambda: factor_analysis(np.ones((5, 3)), 2, mask=np.ones((5, 2), bool)), vmp.ShapeError, "mask"),
    (lambda: mixture_of_regressions(np.ones((5, 2)), np.ones(5), 1), vmp.ShapeError, "n_components"),
    (lambda: mixture_of_regressions(np.ones((5, 2)), np.ones((5, 1)), 2), vmp.ShapeError, "targets"),
    (lambda: matrix_factorization([0, 1], [0, 1], [1.0, 2.0], 2, biases=True, bias_precision=0.0),
     vmp.HyperparameterError, "bias_precision"),
])
def test_builders_validate_their_inputs(build, error, words):
    with pytest.raises(error, match=words):
        build()
