"""The logit-link models on real data (scikit-learn's data sets) against scikit-learn and a
Polya-gamma Gibbs sampler, and on simulated data against the truth.

- breast_cancer, standardized, 5 stratified folds: held-out log-loss of ``logistic_regression``
  (prior precision 1/C, a flat intercept) at most 2% above scikit-learn's LogisticRegression(C=1)
  (the predictive integrates over q(w): it is lower, by 2.0%);
- the posterior mean of the linear predictor X w on the whole data set within 5% (relative
  norm) of a Polya-gamma Gibbs sampler's (Polson et al. 2013, section 3.1; written here, its
  posterior mean Rao-Blackwellized over the conditional means E[w | omega]), and each weight
  within 0.25 posterior standard deviations of it (the mean-field fixed point is not the exact
  posterior: the weights differ from the Gibbs mean by 5.8% in norm, at most 0.2 sd each, the
  linear predictor by 2.9%, measured with a 20,000-sweep chain);
- wine, 5 folds: ``multiclass_logistic_regression`` (stick-breaking) accuracy within 1 point of
  scikit-learn's multinomial LogisticRegression.
"""
from __future__ import annotations

import numpy as np
import pytest

from vmp.families.polya_gamma import PolyaGamma
from vmp.models import (hierarchical_logistic_regression, logistic_regression, multiclass_logistic_regression,
                        negative_binomial_regression)

sklearn = pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer, load_wine  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import accuracy_score, log_loss  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402


def _folds(x, y):
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        scale = StandardScaler().fit(x[train])
        yield scale.transform(x[train]), y[train], scale.transform(x[test]), y[test]


def test_breast_cancer_held_out_log_loss_is_scikit_learns_at_the_same_penalty():
    x, y = load_breast_cancer(return_X_y=True)
    ours, theirs = [], []
    for x_train, y_train, x_test, y_test in _folds(x, y):
        reference = LogisticRegression(C=1.0, max_iter=5000).fit(x_train, y_train)
        theirs.append(log_loss(y_test, reference.predict_proba(x_test)[:, 1]))
        model = logistic_regression(x_train, y_train, prior_precision=1.0)
        model.fit(iterations=200, tol=1e-5, seed=0)
        model.set_data("X", x_test)
        ours.append(log_loss(y_test, model.predict("y").mean))
    assert np.mean(ours) <= 1.02 * np.mean(theirs), (np.mean(ours), np.mean(theirs))


def _gibbs(x, y, prior, sweeps, start, rng):
    """Polya-gamma Gibbs: omega_n | w ~ PG(1, x_n . w); w | omega ~ N(V X^T kappa, V),
    V^-1 = X^T diag(omega) X + P0. Returns the Rao-Blackwellized mean of w over the sweeps after
    the first tenth, and those sweeps' conditional means (for the Monte Carlo error)."""
    kappa, w, means = y - 0.5, start, []
    pg = PolyaGamma.of(np.ones(len(y)))
    for _ in range(sweeps):
        omega = pg.sample(pg.natural_from(np.abs(x @ w)), rng)
        precision = prior + (x.T * omega) @ x
        mean = np.linalg.solve(precision, x.T @ kappa)
        means.append(mean)
        w = mean + np.linalg.solve(np.linalg.cholesky(precision).T, rng.standard_normal(len(w)))
    kept = np.array(means[sweeps // 10:])
    return kept.mean(0), kept


def test_breast_cancer_posterior_mean_is_the_gibbs_samplers():
    x, y = load_breast_cancer(return_X_y=True)
    x = StandardScaler().fit_transform(x)
    model = logistic_regression(x, y, prior_precision=1.0, intercept_precision=1e-4)
    model.fit(iterations=400, tol=1e-8, seed=0)
    ours = np.r_[model["w"].mean, model["b"].mean]
    design = np.c_[x, np.ones(len(y))]
    prior = np.diag([1.0] * x.shape[1] + [1e-4])
    mean, kept = _gibbs(design, y.astype(float), prior, 1500, ours, np.random.default_rng(0))
    batches = (kept[: len(kept) // 10 * 10].reshape(10, -1, len(mean)).mean(1) @ design.T)
    mc_error = np.linalg.norm(batches.std(0) / np.sqrt(10)) / np.linalg.norm(design @ mean)
    assert mc_error < 0.03, mc_error  # batch means over 10 batches: about twice the error against a long chain
    gap = np.linalg.norm(design @ (ours - mean)) / np.linalg.norm(design @ mean)
    assert gap < 0.05, gap
    sd = np.sqrt(np.r_[np.diag(model["w"].parameters["covariance"]), model["b"].parameters["variance"]])
    assert np.all(np.abs(ours - mean) < 0.25 * sd / 0.6), (ours - mean) / sd  # VB's sd is about 0.6-0.9 of the posterior's


def test_wine_multiclass_accuracy_is_scikit_learns():
    x, y = load_wine(return_X_y=True)
    ours, theirs = [], []
    for x_train, y_train, x_test, y_test in _folds(x, y):
        theirs.append(accuracy_score(y_test, LogisticRegression(C=1.0, max_iter=5000).fit(x_train, y_train)
                                     .predict(x_test)))
        model = multiclass_logistic_regression(x_train, y_train, 3, prior_precision=1.0)
        model.fit(iterations=100, tol=1e-5, seed=0)
        model.set_data("X", x_test)
        probabilities = model.predict("y").mean
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-12)
        ours.append(accuracy_score(y_test, probabilities.argmax(-1)))
    assert np.mean(ours) >= np.mean(theirs) - 0.01, (np.mean(ours), np.mean(theirs))


def test_negative_binomial_regression_recovers_the_weights_and_the_mean():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 2))
    w, b, r = np.array([0.6, -0.4]), 0.5, 3.0
    y = rng.negative_binomial(r, 1.0 / (1.0 + np.exp(x @ w + b)))
    model = negative_binomial_regression(x, y, r)
    model.fit(iterations=200, tol=1e-8, seed=0)
    np.testing.assert_allclose(model["w"].mean, w, atol=0.08)
    assert model["b"].mean == pytest.approx(b, abs=0.08)
    pred = model.predict("y")
    np.testing.assert_allclose(pred.mean.mean(), y.mean(), rtol=0.05)
    assert pred.method == "quadrature"


def test_hierarchical_logistic_regression_recovers_the_group_intercepts():
    rng = np.random.default_rng(1)
    groups = rng.integers(0, 6, size=3000)
    u = np.array([-1.5, -0.5, 0.0, 0.5, 1.0, 2.0])
    x = rng.normal(size=(3000, 2))
    y = (rng.random(3000) < 1.0 / (1.0 + np.exp(-(x @ np.array([1.0, -1.0]) + u[groups])))).astype(float)
    model = hierarchical_logistic_regression(x, y, groups)
    model.fit(iterations=300, tol=1e-8, seed=0)
    np.testing.assert_allclose(model["u"].mean, u, atol=0.25)
    model.set_data({"X": x[:5], "groups": groups[:5]})
    assert model.predict("y").mean.shape == (5,)
