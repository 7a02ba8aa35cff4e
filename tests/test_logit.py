"""Logit links through Polya-gamma augmentation against a hand-written Jaakkola-Jordan fixed point.

Jaakkola & Jordan (2000) bound each (e^psi)^a / (1 + e^psi)^b below by a Gaussian in psi with a
variational xi per observation:

    log p >= (a - b/2) psi + b [log sigmoid(xi) - xi/2 - lambda(xi) (psi^2 - xi^2)],
    lambda(xi) = tanh(xi/2) / (4 xi),

and their VB alternates xi_n^2 = E[psi_n^2] with the Gaussian q(w) that the bound makes
conjugate. The engine's mean-field fixed point with q(omega_n) = PG(b_n, c_n) is the same point
(E[omega_n] = 2 b_n lambda(c_n)), and its bound the same number: checked to 1e-8 for a
Bernoulli, a Binomial and a NegativeBinomial child with a full-covariance prior on w, and for
stick-breaking logits, whose K - 1 sticks with separate weights are K - 1 such problems.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import vmp


def jaakkola_jordan(x, a, b, m0, p0, iterations=300, log_h=0.0):
    """The JJ fixed point for psi_n = w . x_n, w ~ N(m0, p0^-1): (mean, covariance, bound)."""
    xi = np.ones(len(a))
    kappa = a - b / 2
    for _ in range(iterations):
        lam = np.tanh(xi / 2) / (4 * xi)
        s = np.linalg.inv(p0 + 2 * (x.T * (b * lam)) @ x)
        m = s @ (p0 @ m0 + x.T @ kappa)
        xi = np.sqrt(np.einsum("nd,de,ne->n", x, s + np.outer(m, m), x))
    lam = np.tanh(xi / 2) / (4 * xi)
    e_psi2 = np.einsum("nd,de,ne->n", x, s + np.outer(m, m), x)
    ll = np.sum(kappa * (x @ m) + b * (np.log(special.expit(xi)) - xi / 2 - lam * (e_psi2 - xi**2)))
    d = len(m0)
    kl = 0.5 * (np.trace(p0 @ s) + (m - m0) @ p0 @ (m - m0) - d - np.linalg.slogdet(p0)[1] - np.linalg.slogdet(s)[1])
    return m, s, ll + np.sum(log_h) - kl


def _problem(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    m0 = np.array([0.2, 0.0, -0.3])
    a = rng.normal(size=(d, d))
    p0 = a @ a.T / d + 0.5 * np.eye(d)
    return rng, x, m0, p0


def _fit_and_compare(model, x, a, b, m0, p0, log_h=0.0):
    model.fit(iterations=120, tol=0.0, seed=0)
    m, s, bound = jaakkola_jordan(x, a, b, m0, p0, log_h=log_h)
    q = model["w"].parameters
    np.testing.assert_allclose(q["mean"], m, rtol=0, atol=1e-8)
    np.testing.assert_allclose(q["covariance"], s, rtol=0, atol=1e-8)
    assert model.elbo() == pytest.approx(bound, rel=0, abs=1e-8)


def test_bernoulli_is_the_jaakkola_jordan_fixed_point():
    rng, x, m0, p0 = _problem()
    y = (rng.random(60) < special.expit(x @ np.array([1.0, -2.0, 0.5]))).astype(float)
    with vmp.Model("lr") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("data", 60):
            vmp.Bernoulli("y", logit=vmp.dot(w, vmp.Data("X", x)), observed=y)
    _fit_and_compare(model, x, y, np.ones(60), m0, p0)
    assert "y.omega" in model and model["y.omega"].plates == model["y"].plates


def test_binomial_is_the_jaakkola_jordan_fixed_point():
    rng, x, m0, p0 = _problem(seed=1)
    n = rng.integers(0, 6, size=60).astype(float)
    y = rng.binomial(n.astype(int), special.expit(x @ np.array([0.5, 1.0, -1.0]))).astype(float)
    with vmp.Model("bin") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("data", 60):
            vmp.Binomial("y", n, logit=vmp.dot(w, x), observed=y)
    log_h = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    _fit_and_compare(model, x, y, n, m0, p0, log_h)


def test_negative_binomial_is_the_jaakkola_jordan_fixed_point():
    rng, x, m0, p0 = _problem(seed=2)
    r = 2.5
    y = rng.negative_binomial(r, 1 - special.expit(x @ np.array([0.5, -0.5, 0.3]))).astype(float)
    with vmp.Model("nb") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("data", 60):
            vmp.NegativeBinomial("y", r=r, logit=vmp.dot(w, x), observed=y)
    log_h = special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1)
    _fit_and_compare(model, x, y, y + r, m0, p0, log_h)
    np.testing.assert_allclose(model["y.omega"].b, y + r)


def test_stick_breaking_is_one_jaakkola_jordan_problem_per_stick():
    """With weights W_k of their own, stick k is a logistic regression of [y = k] on the rows with
    y >= k (b_k = [y >= k]); the bound is the sum of the sticks'."""
    rng, x, m0, p0 = _problem(n=80, seed=3)
    y = rng.integers(0, 3, size=80)
    with vmp.Model("mc") as model:
        with vmp.Plate("classes", 2):
            w = vmp.Gaussian("W", m0, p0)
        with vmp.Plate("data", 80):
            vmp.Categorical("y", logits=vmp.dot(w, vmp.Data("X", x)), observed=y)
    model.fit(iterations=120, tol=0.0, seed=0)
    q = model["W"].parameters
    total = 0.0
    for k in range(2):
        m, s, bound = jaakkola_jordan(x, (y == k).astype(float), (y >= k).astype(float), m0, p0)
        np.testing.assert_allclose(q["mean"][k], m, atol=1e-8)
        np.testing.assert_allclose(q["covariance"][k], s, atol=1e-8)
        total += bound
    assert model.elbo() == pytest.approx(total, abs=1e-8)
    np.testing.assert_allclose(model["y.omega"].b, np.stack([np.ones(80), (y >= 1)], -1))


def test_the_auxiliary_is_pg_of_b_at_its_optimum():
    """q(omega_n) = PG(b_n, sqrt(E[psi_n^2])): its mean b tanh(c/2)/(2c), its tilt c."""
    rng, x, m0, p0 = _problem(seed=4)
    n = rng.integers(1, 5, size=60).astype(float)
    with vmp.Model("bin") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("data", 60):
            vmp.Binomial("y", n, logit=vmp.dot(w, x), observed=rng.binomial(n.astype(int), 0.4))
    model.fit(iterations=200, tol=0.0, seed=0)
    q = model["w"].parameters
    c = np.sqrt(np.einsum("nd,de,ne->n", x, q["covariance"] + np.outer(q["mean"], q["mean"]), x))
    omega = model["y.omega"]
    np.testing.assert_allclose(omega.parameters["tilt"], c, rtol=1e-9)
    np.testing.assert_allclose(omega.mean, n * np.tanh(c / 2) / (2 * c), rtol=1e-9)
    draws = omega.sample(4000, rng=1)
    assert np.all(np.abs(draws.mean(0) - omega.mean) < 5 * draws.std(0) / np.sqrt(4000) + 1e-12)


def _declare(**kwargs):
    kind = kwargs.pop("kind", "Bernoulli")
    with vmp.Model("m"):
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("classes", 2):
            big_w = vmp.Gaussian("W", np.zeros(2), np.eye(2))
        with vmp.Plate("data", 3):
            psi = vmp.dot(w, np.ones((3, 2)))
            if kind == "Categorical":
                return vmp.Categorical("y", logits=kwargs.pop("logits", vmp.dot(big_w, np.ones((3, 2)))), **kwargs)
            if kind == "Multinomial":
                return vmp.Multinomial("y", logits=vmp.dot(big_w, np.ones((3, 2))), **kwargs)
            return getattr(vmp, kind)("y", logit=kwargs.pop("logit", psi), **kwargs)


@pytest.mark.parametrize("kind,args,error,words", [
    ("Bernoulli", {"observed": [0, 1, 2]}, vmp.DataError, "must be"),
    ("Bernoulli", {"observed": [0, 0.5, 1]}, vmp.DataError, "must be"),
    ("Binomial", {"trials": 3, "observed": [0, 4, 1]}, vmp.DataError, "must be"),
    ("NegativeBinomial", {"r": 2.0, "observed": [0, -1, 1]}, vmp.DataError, "must be"),
    ("NegativeBinomial", {"r": 2.0, "observed": [0, 1.5, 1]}, vmp.DataError, "must be"),
    ("Categorical", {"observed": [0, 3, 1]}, vmp.DataError, "[0, 3)"),
    ("Multinomial", {"observed": [[0, 1, -1]] * 3}, vmp.DataError, "must be"),
    ("NegativeBinomial", {"r": 0.0, "observed": [0, 1, 1]}, vmp.HyperparameterError, "r must be positive"),
    ("NegativeBinomial", {"r": -1.0, "observed": [0, 1, 1]}, vmp.HyperparameterError, "r must be positive"),
    ("Bernoulli", {}, vmp.GraphError, "needs observed="),
    ("Bernoulli", {"logit": None, "observed": [0, 1, 1]}, vmp.GraphError, "exactly one"),
])
def test_bad_input_is_refused_at_declaration_naming_the_node(kind, args, error, words):
    with pytest.raises(error) as info:
        _declare(kind=kind, **args)
    assert "'y'" in str(info.value) and words in str(info.value), str(info.value)


def test_a_logit_that_is_not_normal_valued_lists_what_is_supported():
    with vmp.Model("m"):
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", 3):
            for bad in (w, tau):
                with pytest.raises(vmp.ConjugacyError, match=r"node 'y' \(Bernoulli\).*logit <- Normal.*vmp.dot"):
                    vmp.Bernoulli("y", logit=bad, observed=[0, 1, 1])
    with pytest.raises(vmp.ShapeError, match="K - 1 logits"):
        with vmp.Model("m"):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
            with vmp.Plate("data", 3):
                vmp.Categorical("y", logits=vmp.dot(w, np.ones((3, 2))), observed=[0, 1, 1])


def test_a_refused_declaration_leaves_no_auxiliary():
    with vmp.Model("m") as model:
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("data", 3):
            with pytest.raises(vmp.DataError):
                vmp.Bernoulli("y", logit=vmp.dot(w, np.ones((3, 2))), observed=[0, 1, 2])
            vmp.Bernoulli("y", logit=vmp.dot(w, np.ones((3, 2))), observed=[0, 1, 1])
    assert sorted(model.nodes) == ["w", "y", "y.omega"]


def _logistic_data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = (rng.random(n) < special.expit(x @ np.array([1.0, -1.0, 0.5]) + 0.3)).astype(float)
    return x, y


@pytest.mark.parametrize("subsample,steps", [(vmp.Minibatch("data", 200), 200), (vmp.PerNode(children=200), 150)])
def test_stochastic_fits_reach_the_batch_posterior(subsample, steps):
    """Minibatch (the auxiliaries are locals of the data plate, optimized on each minibatch) and
    PerNode: the weights within 0.1 of the batch fit's (their sd is about 0.05)."""
    from vmp.models import logistic_regression

    x, y = _logistic_data()
    batch = logistic_regression(x, y)
    batch.fit(iterations=100, tol=1e-8, seed=0)
    model = logistic_regression(x, y)
    result = model.fit(method="stochastic", subsample=subsample, iterations=steps, seed=0)
    assert not result.diverged
    np.testing.assert_allclose(model["w"].mean, batch["w"].mean, atol=0.1)
    assert model["b"].mean == pytest.approx(batch["b"].mean, abs=0.1)


def test_a_design_matrix_out_of_core_gives_the_bits_of_one_in_memory(tmp_path):
    """X as a numpy memmap: a minibatch fit reads its rows, and the fit is the in-memory one's."""
    from vmp.models import logistic_regression

    x, y = _logistic_data(n=1000)
    disk = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
    disk[:] = x
    disk.flush()
    options = dict(method="stochastic", subsample=vmp.Minibatch("data", 100), iterations=20, seed=3)
    fits = []
    for inputs in (x, np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape)):
        with vmp.Model("lr") as model:
            w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
            with vmp.Plate("data", 1000):
                vmp.Bernoulli("y", logit=vmp.dot(w, vmp.Data("X", inputs)), observed=y)
        fits.append(model.fit(**options).state.natural["w"])
    for a, b in zip(*fits):
        np.testing.assert_array_equal(a, b)


def test_held_out_rows_follow_the_data():
    """set_data with a new number of rows: the auxiliary's b follows the counts (y + r), the
    held-out targets are predicted, and the fitted weights are kept."""
    rng, x, m0, p0 = _problem(seed=5)
    y = rng.negative_binomial(2.0, 0.5, size=60).astype(float)
    with vmp.Model("nb") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("data", 60):
            vmp.NegativeBinomial("y", r=2.0, logit=vmp.dot(w, vmp.Data("X", x)), observed=y)
    model.fit(iterations=50, seed=0)
    weights = model["w"].mean.copy()
    model.set_data({"X": x[:7], "y": y[:7]})
    np.testing.assert_allclose(model["y.omega"].b, y[:7] + 2.0)
    np.testing.assert_array_equal(model["w"].mean, weights)
    model.set_data("X", x[:4])
    pred = model.predict("y")
    assert pred.mean.shape == (4,)
    np.testing.assert_allclose(pred.mean, 2.0 * np.exp(x[:4] @ weights), rtol=0.5)


def test_predictive_probabilities_integrate_over_q():
    """P(y = 1) = E_q[sigmoid(w . x)]: against a Monte Carlo average over draws of w from q (numpy's
    multivariate normal), within 5 standard errors; its interval is sigmoid of psi's Gaussian
    quantiles (the draws' quantiles within 0.02); class probabilities sum to 1."""
    from vmp.models import logistic_regression

    x, y = _logistic_data(n=200)
    model = logistic_regression(x, y, intercept=False)
    model.fit(iterations=100, tol=1e-8, seed=0)
    q = model["w"].parameters
    draws = np.random.default_rng(0).multivariate_normal(q["mean"], q["covariance"], size=20000)
    p = special.expit(draws @ x.T)
    pred = model.predict("y")
    assert pred.method == "exact"
    se = p.std(0) / np.sqrt(len(p))
    assert np.all(np.abs(pred.mean - p.mean(0)) < 5 * se + 1e-12)
    np.testing.assert_allclose(pred.probabilities.sum(-1), 1.0)
    lo, hi = pred.probability_interval(0.9)
    np.testing.assert_allclose(lo, np.quantile(p, 0.05, axis=0), atol=0.02)
    np.testing.assert_allclose(hi, np.quantile(p, 0.95, axis=0), atol=0.02)
    assert pred.to_scipy().mean().shape == (200,)


def test_logistic_normal_quadrature_is_the_integral():
    from scipy import integrate, stats

    from vmp.predictive_logit import logistic_normal

    for m, s in [(0.3, 0.5), (1.0, 1.0), (2.0, 3.0), (0.7, 30.0), (-30.0, 2.0)]:
        e1, d = logistic_normal(m, s)
        for value, f in ((e1, special.expit), (d, lambda t: special.expit(t) * special.expit(-t))):
            ref = integrate.quad(lambda t: f(t) * stats.norm.pdf(t, m, s), m - 40 * s, m + 40 * s, points=[0.0],
                                 limit=500, epsabs=1e-15, epsrel=1e-13)[0]
            assert float(value) == pytest.approx(ref, abs=1e-10)
