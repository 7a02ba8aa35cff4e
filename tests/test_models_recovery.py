"""Each builder of ``vmp.models`` fitted the way a new user would (the builder's defaults,
``model.fit()`` with no options) to data simulated from the builder's own generative story with
known parameters: the parameters come back (components matched by the Hungarian algorithm,
scipy.optimize.linear_sum_assignment) and the fit stops for the right reason."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import vmp
from vmp import models

CONVERGED = "relative ELBO change below"


def matched(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The permutation p of estimate's rows that best matches truth's rows (estimate[p] ~ truth)."""
    cost = ((estimate[:, None, :] - truth[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return rows[np.argsort(cols)]


def assert_converged(result) -> None:
    assert result.converged and result.message.startswith(CONVERGED), result
    assert np.all(np.diff(result.elbo) >= -1e-6 * np.abs(result.elbo[1:])), "batch VMP lowered the bound"


def factor_analysis_data(seed: int, n: int = 300, d: int = 8, k: int = 2):
    rng = np.random.default_rng(seed)
    w, mu = 2 * rng.normal(size=(d, k)), rng.normal(size=d)
    return rng.normal(size=(n, k)) @ w.T + mu + 0.5 * rng.normal(size=(n, d)), w, mu


def test_factor_analysis_minibatch_fit_starts():
    """A Minibatch fit's latent z is local (no q over the whole plate): starting W from its prior
    must not read z's q (it raised KeyError 'z')."""
    y, w, _ = factor_analysis_data(0)
    model = models.factor_analysis(y, 3)
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50), iterations=30, seed=0)
    assert np.isfinite(result.final_elbo) and not result.diverged


def test_factor_analysis_recovers_the_covariance_and_switches_off_the_rest():
    """Bayesian PCA with K = 4 on data of rank 2: W W^T is the true one within 8%, tau within
    15% of 1/0.5^2, and the two unneeded columns have E[alpha_k] > 100. ARD needs ~300-400
    sweeps here: the default iteration cap must let batch VMP reach tol."""
    y, w, mu = factor_analysis_data(0)
    model = models.factor_analysis(y, 4)
    result = model.fit()
    assert_converged(result)
    cov, true = model["W"].mean @ model["W"].mean.T, w @ w.T
    assert np.linalg.norm(cov - true) / np.linalg.norm(true) < 0.08
    assert abs(float(model["tau"].mean) - 4.0) < 0.6
    assert np.sum(model["alpha"].mean > 100) == 2


def test_batch_fit_that_runs_out_of_iterations_warns():
    """An unconverged batch fit says so (scikit-learn's ConvergenceWarning); a converged one does not."""
    y, _, _ = factor_analysis_data(0, n=50)
    model = models.factor_analysis(y, 3)
    with pytest.warns(vmp.ConvergenceWarning, match="iterations=5"):
        result = model.fit(iterations=5)
    assert not result.converged and result.message == "reached the iteration limit"
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", vmp.ConvergenceWarning)
        models.linear_regression(np.eye(3), np.ones(3)).fit()


def factorial_data(seed: int, n: int = 300, d: int = 8, k: int = 3):
    """mu_dk ~ N(0, 1) (the builder's prior), z_nk ~ Bernoulli(1/2), x ~ N(z_n . mu_d, 0.5^2)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(d, k))
    z = rng.random((n, k)) < 0.5
    return z @ mu.T + 0.5 * rng.normal(size=(n, d)), mu, z


def test_factorial_mixture_predictive_matches_its_draws():
    """E[x] and Var[x] of the predictive through dot(z, mu) with Bernoulli z (E[z^2] = E[z]; it
    raised ValueError) agree with 4000 exact ancestral draws."""
    x, _, _ = factorial_data(0, n=40, d=3, k=2)
    model = models.factorial_mixture(x, 2)
    model.fit(seed=0)
    pred = model.predict("x")
    draws = pred.sample(4000, rng=1)
    se = np.sqrt(pred.variance / 4000)
    assert np.all(np.abs(draws.mean(0) - pred.mean) < 5 * se)
    assert np.allclose(draws.var(0), pred.variance, rtol=0.15)


def test_count_predictives_match_closed_forms():
    """Binomial, Multinomial and Poisson nodes predict by exact draws (they raised 'no conditional
    at point values', and a Multinomial's mean was E[p], not n E[p]): the Beta-Binomial's
    mean and variance are scipy.stats.betabinom's; a count vector's mean sums to its n; a Poisson
    factorization's mean is E[theta_u] . E[beta_i] (q factorizes them)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    trials = rng.integers(1, 20, 30)
    successes = rng.binomial(trials, 0.3)
    model = models.beta_binomial(successes, trials, prior=(2.0, 3.0))
    model.fit()
    pred = model.predict("x", draws=4000)
    a, b = 2.0 + successes.sum(), 3.0 + (trials - successes).sum()
    exact = stats.betabinom(trials, a, b)
    assert np.all(np.abs(pred.mean - exact.mean()) < 5 * np.sqrt(exact.var() / 4000))
    assert np.allclose(pred.variance, exact.var(), rtol=0.15)

    counts = rng.multinomial(30, [0.2, 0.3, 0.5], size=20)
    mixture = models.multinomial_mixture(counts, 2)
    mixture.fit()
    assert np.allclose(mixture.predict("x").mean.sum(1), 30)

    y = rng.poisson(rng.gamma(1.0, 1.0, (8, 2)) @ rng.gamma(1.0, 1.0, (2, 10)))
    users, items = np.nonzero(y)
    pf = models.poisson_factorization(users, items, y[users, items], 2, n_users=8, n_items=10)
    pf.fit(seed=0)
    pred = pf.predict("y", draws=4000)
    rate = (pf["theta"].mean @ pf["beta"].mean.T)[users, items]
    assert np.all(np.abs(pred.mean - rate) < 5 * np.sqrt(pred.variance / 4000))
