"""Conjugate single-node models: VMP gives the closed-form posterior, and since q is then the exact
posterior, the ELBO equals the log evidence computed independently with scipy (Bayes' rule at a
point: log p(x) = log p(x | t) + log p(t) - log p(t | x))."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp


def test_gaussian_mean_known_precision():
    rng = np.random.default_rng(0)
    n, d = 7, 2
    m0, p0 = np.array([0.5, -1.0]), np.array([[2.0, 0.3], [0.3, 1.0]])
    lam = np.array([[1.5, -0.4], [-0.4, 0.8]])
    x = rng.normal(size=(n, d)) + 1.0
    with vmp.Model("g") as model:
        mu = vmp.Gaussian("mu", m0, p0)
        with vmp.Plate("N", n):
            vmp.Gaussian("x", mu, lam, observed=x)
    res = model.fit(iterations=5)
    pn = p0 + n * lam
    mn = np.linalg.solve(pn, p0 @ m0 + lam @ x.sum(0))
    assert np.allclose(mu.mean, mn, rtol=1e-10)
    assert np.allclose(mu.parameters["covariance"], np.linalg.inv(pn), rtol=1e-10)
    cov = np.kron(np.ones((n, n)), np.linalg.inv(p0)) + np.kron(np.eye(n), np.linalg.inv(lam))
    evidence = stats.multivariate_normal(np.tile(m0, n), cov).logpdf(x.reshape(-1))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-9)


def test_gamma_precision_known_mean():
    rng = np.random.default_rng(1)
    x = rng.normal(0.3, 2.0, size=20)
    a0, b0, m = 2.0, 3.0, 0.3
    with vmp.Model("g") as model:
        tau = vmp.Gamma("tau", a0, b0)
        with vmp.Plate("N", x.size):
            vmp.Normal("x", m, tau, observed=x)
    res = model.fit(iterations=5)
    an, bn = a0 + x.size / 2, b0 + 0.5 * np.sum((x - m) ** 2)
    assert tau.parameters["shape"] == pytest.approx(an)
    assert tau.parameters["rate"] == pytest.approx(bn)
    t = 0.7
    evidence = (stats.norm(m, 1 / np.sqrt(t)).logpdf(x).sum() + stats.gamma(a0, scale=1 / b0).logpdf(t)
                - stats.gamma(an, scale=1 / bn).logpdf(t))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-9)


def test_wishart_precision_known_mean():
    rng = np.random.default_rng(2)
    n, d = 15, 3
    x = rng.multivariate_normal(np.zeros(d), np.diag([1.0, 2.0, 0.5]), size=n)
    n0, v0 = 4.0, np.eye(d) * 0.5
    m = np.array([0.1, 0.0, -0.1])
    with vmp.Model("w") as model:
        lam = vmp.Wishart("Lam", n0, v0)
        with vmp.Plate("N", n):
            vmp.Gaussian("x", m, lam, observed=x)
    res = model.fit(iterations=5)
    r = x - m
    vn = np.linalg.inv(np.linalg.inv(v0) + r.T @ r)
    assert lam.parameters["dof"] == pytest.approx(n0 + n)
    assert np.allclose(lam.parameters["scale"], vn, rtol=1e-9)
    t = np.eye(d)
    evidence = (stats.multivariate_normal(m, np.linalg.inv(t)).logpdf(x).sum()
                + stats.wishart(n0, v0).logpdf(t) - stats.wishart(n0 + n, vn).logpdf(t))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-9)


def test_dirichlet_from_categorical_counts_with_weights_and_mask():
    z = np.array([0, 2, 2, 1, 2, 0, 1, 1])
    w = np.array([1, 2, 1, 3, 1, 1, 2, 1.0])
    mask = np.array([1, 1, 1, 1, 0, 1, 1, 1], bool)
    alpha = np.array([0.5, 1.0, 2.0])
    with vmp.Model("d") as model:
        pi = vmp.Dirichlet("pi", alpha)
        with vmp.Plate("N", z.size):
            vmp.Categorical("z", pi, observed=z, weights=w, mask=mask)
    res = model.fit(iterations=3)
    counts = np.bincount(z[mask], weights=w[mask], minlength=3)
    assert np.allclose(pi.parameters["alpha"], alpha + counts)
    # evidence of the weighted data: weights act as repeated observations
    p = np.array([0.2, 0.3, 0.5])
    evidence = (np.sum(counts * np.log(p)) + stats.dirichlet(alpha).logpdf(p)
                - stats.dirichlet(alpha + counts).logpdf(p))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-9)


def test_gamma_rate_of_gamma():
    rng = np.random.default_rng(3)
    t = rng.gamma(3.0, 0.5, size=12)
    a, a0, b0 = 3.0, 2.0, 1.0
    with vmp.Model("r") as model:
        b = vmp.Gamma("b", a0, b0)
        with vmp.Plate("N", t.size):
            vmp.Gamma("t", a, b, observed=t)
    res = model.fit(iterations=3)
    an, bn = a0 + t.size * a, b0 + t.sum()
    assert b.parameters["shape"] == pytest.approx(an)
    assert b.parameters["rate"] == pytest.approx(bn)
    point = 1.3
    evidence = (stats.gamma(a, scale=1 / point).logpdf(t).sum() + stats.gamma(a0, scale=1 / b0).logpdf(point)
                - stats.gamma(an, scale=1 / bn).logpdf(point))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-9)


def test_normal_gamma_mean_field_fixed_point():
    """Bishop, PRML section 10.1.3: q(mu) = N(mu_N, 1/lambda_N), q(tau) = Gamma(a_N, b_N)."""
    rng = np.random.default_rng(4)
    x = rng.normal(1.5, 0.7, size=30)
    mu0, lam0, a0, b0 = 0.2, 0.5, 1.5, 2.0
    with vmp.Model("ng") as model:
        tau = vmp.Gamma("tau", a0, b0)
        mu = vmp.Normal("mu", mu0, lam0 * tau)
        with vmp.Plate("N", x.size):
            vmp.Normal("x", mu, tau, observed=x)
    res = model.fit(iterations=500, tol=1e-14)
    assert res.converged
    n, xbar = x.size, x.mean()
    mu_n = (lam0 * mu0 + n * xbar) / (lam0 + n)
    a_n = a0 + (n + 1) / 2
    e_tau = a0 / b0
    for _ in range(1000):
        lam_n = (lam0 + n) * e_tau
        e_mu, e_mu2 = mu_n, mu_n**2 + 1 / lam_n
        b_n = b0 + 0.5 * (np.sum(x**2) - 2 * e_mu * x.sum() + n * e_mu2 + lam0 * (e_mu2 - 2 * mu0 * e_mu + mu0**2))
        e_tau = a_n / b_n
    assert mu.mean == pytest.approx(mu_n, rel=1e-9)
    assert mu.parameters["precision"] == pytest.approx(lam_n, rel=1e-7)
    assert tau.parameters["shape"] == pytest.approx(a_n, rel=1e-12)
    assert tau.parameters["rate"] == pytest.approx(b_n, rel=1e-7)


def test_weights_equal_repeated_data():
    x = np.array([0.3, -1.0, 2.0])
    def build(data, weights=None):
        with vmp.Model("w") as model:
            tau = vmp.Gamma("tau", 1.0, 1.0)
            mu = vmp.Normal("mu", 0.0, 0.1)
            with vmp.Plate("N", data.size):
                vmp.Normal("x", mu, tau, observed=data, weights=weights)
        return model
    a = build(x, np.array([1.0, 3.0, 2.0]))
    b = build(np.array([0.3, -1.0, -1.0, -1.0, 2.0, 2.0]))
    ra, rb = a.fit(tol=1e-13, iterations=500), b.fit(tol=1e-13, iterations=500)
    assert a["mu"].mean == pytest.approx(b["mu"].mean, rel=1e-9)
    assert a["tau"].mean == pytest.approx(b["tau"].mean, rel=1e-9)
    assert ra.final_elbo == pytest.approx(rb.final_elbo, rel=1e-9)


def test_wishart_natural_is_symmetric_with_a_random_mean():
    """The message x mu^T from a Gaussian child with a random mean is not symmetric; the natural
    parameters of q(Lambda) must be (anyone reading node.natural gets the q the moments use)."""
    rng = np.random.default_rng(3)
    with vmp.Model("w") as model:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 10):
            vmp.Gaussian("x", mu, lam, observed=rng.normal(size=(10, 2)) + 3.0)
    model.fit(iterations=5)
    eta = lam.natural[0]
    assert np.array_equal(eta, eta.T)
    for a, b in zip(vmp.families.Wishart.moments(lam.natural), lam.moments):
        assert np.allclose(a, b, rtol=1e-12)
