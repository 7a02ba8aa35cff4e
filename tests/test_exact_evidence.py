"""Batch VMP on the less-travelled conjugate pairs and gated count mixtures against exact log evidence.

With one hidden node and conjugate children, one sweep gives the exact posterior and the bound is
the log evidence; with every parameter fixed, a mixture's q(z) is the exact posterior of each z_n
and the bound is log sum over all K^N assignments (enumerated here). References are closed forms
written from the textbook densities (scipy for the pieces), never vmp's code:

- Wishart precision with a known mean (Gaussian-Wishart), a scaled precision c * Lambda;
- Gamma observations with a Gamma rate (and c * b), weights as repeated data, masks;
- Gaussian with ARD precision diag(alpha): a product of Normal-Gamma evidences per dimension;
- gated Poisson (with exposure), Exponential, Binomial and Multinomial mixtures.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp, multigammaln

import vmp


def _fit(model, iterations=3):
    return model.fit(iterations=iterations, tol=0.0, seed=0).elbo[-1]


def _log_wishart_normalizer(n, v):
    """log Z(n, V) = nD/2 log 2 + n/2 log|V| + log Gamma_D(n/2) of W(Lambda | n, V)."""
    d = v.shape[-1]
    return 0.5 * n * d * np.log(2.0) + 0.5 * n * np.linalg.slogdet(v)[1] + multigammaln(0.5 * n, d)


def _gaussian_wishart_evidence(x, mean, n, v):
    """log p(X) for x_i ~ N(mean, Lambda^-1), Lambda ~ W(n, V): (2 pi)^(-ND/2) Z(n', V') / Z(n, V)
    with n' = n + N, V'^-1 = V^-1 + sum_i (x_i - m)(x_i - m)^T."""
    r = x - mean
    v_post = np.linalg.inv(np.linalg.inv(v) + r.T @ r)
    return (-0.5 * x.size * np.log(2 * np.pi) + _log_wishart_normalizer(n + len(x), v_post)
            - _log_wishart_normalizer(n, v))


def test_wishart_with_known_mean_and_a_scaled_precision():
    """x_ki ~ N(m_k, (c Lambda_k)^-1), Lambda_k ~ W(n_k, V): c Lambda_k ~ W(n_k, c V). Integer
    weights repeat a row, a mask drops it."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    v, dofs, c = a @ a.T / 3 + 0.5 * np.eye(3), np.array([4.0, 6.5]), 2.5
    means = rng.normal(size=(2, 3))
    x = rng.normal(size=(5, 2, 3)) + means
    w = rng.integers(1, 4, size=(5, 2))
    mask = np.ones((5, 2), bool)
    mask[1, 0] = mask[3, 1] = False
    with vmp.Model("m") as model:
        with vmp.Plate("K", 2):
            lam = vmp.Wishart("Lam", dofs, v)
        with vmp.Plate("N", 5), vmp.Plate("K", 2):
            vmp.Gaussian("x", means, c * lam, observed=x, mask=mask, weights=w)
    bound = _fit(model)
    exact = 0.0
    for k in range(2):
        rows = np.repeat(x[mask[:, k], k], w[mask[:, k], k], axis=0)
        exact += _gaussian_wishart_evidence(rows, means[k], dofs[k], c * v)
        post = np.linalg.inv(np.linalg.inv(v) + (rows - means[k]).T @ (rows - means[k]) * c)
        np.testing.assert_allclose(lam.parameters["scale"][k], post, rtol=1e-10)
        assert lam.parameters["dof"][k] == pytest.approx(dofs[k] + len(rows), rel=1e-12)
    assert bound == pytest.approx(exact, rel=1e-10)


def _gamma_gamma_evidence(x, shape, a0, b0, c):
    """log p(x) for x_i ~ Gamma(shape_i, c b), b ~ Gamma(a0, b0): the b-integral in closed form."""
    a_post, b_post = a0 + shape.sum(), b0 + c * x.sum()
    return (np.sum(shape * np.log(c) + (shape - 1) * np.log(x) - gammaln(shape))
            + a0 * np.log(b0) - gammaln(a0) + gammaln(a_post) - a_post * np.log(b_post))


@pytest.mark.parametrize("c", [1.0, 3.0])
def test_gamma_observations_with_a_gamma_rate(c):
    x = np.array([0.4, 2.0, 1.1, 0.05, 3.5])
    shape = np.array([0.7, 2.0, 1.5, 0.5, 4.0])
    w = np.array([1, 3, 2, 1, 1])
    mask = np.array([True, True, False, True, True])
    with vmp.Model("m") as model:
        b = vmp.Gamma("b", 2.0, 1.5)
        with vmp.Plate("N", 5):
            vmp.Gamma("x", shape, b if c == 1.0 else c * b, observed=x, mask=mask, weights=w)
    bound = _fit(model)
    keep, s = np.repeat(x[mask], w[mask]), np.repeat(shape[mask], w[mask])
    assert bound == pytest.approx(_gamma_gamma_evidence(keep, s, 2.0, 1.5, c), rel=1e-10)
    assert b.parameters["rate"] == pytest.approx(1.5 + c * keep.sum(), rel=1e-12)


def test_ard_precision_is_one_normal_gamma_evidence_per_dimension():
    """x_n ~ N(m, diag(alpha)^-1), alpha_d ~ Gamma(a_d, b_d):
    log p(X) = sum_d [a_d log b_d - log Gamma(a_d) + log Gamma(a_d + N/2) - (a_d + N/2) log(b_d + S_d/2)
    - N/2 log 2 pi], S_d = sum_n (x_nd - m_d)^2."""
    rng = np.random.default_rng(1)
    a, b, m = np.array([1.5, 3.0, 0.8]), np.array([1.0, 2.0, 0.5]), np.array([0.5, -1.0, 2.0])
    x = m + rng.normal(size=(6, 3)) * [0.5, 2.0, 1.0]
    with vmp.Model("m") as model:
        with vmp.Plate("D", 3):
            alpha = vmp.Gamma("alpha", a, b)
        with vmp.Plate("N", 6):
            vmp.Gaussian("x", m, alpha, observed=x)
    bound = _fit(model)
    n, s = len(x), ((x - m) ** 2).sum(0)
    exact = np.sum(a * np.log(b) - gammaln(a) + gammaln(a + n / 2) - (a + n / 2) * np.log(b + s / 2)
                   - n / 2 * np.log(2 * np.pi))
    assert bound == pytest.approx(exact, rel=1e-10)
    np.testing.assert_allclose(alpha.parameters["rate"], b + s / 2, rtol=1e-12)


PI = np.array([0.3, 0.7])


def _enumerated(log_lik):
    """log sum_z prod_n pi_{z_n} p(x_n | theta_{z_n}) over all K^N assignments, from the N x K table
    log p(x_n | theta_k)."""
    n, k = log_lik.shape
    total = [sum(np.log(PI[zn]) + log_lik[i, zn] for i, zn in enumerate(z))
             for z in itertools.product(range(k), repeat=n)]
    return logsumexp(total)


def _poisson():
    y, t, lam = np.array([0, 4, 1, 9, 3]), np.array([1.0, 0.5, 2.0, 1.5, 1.0]), np.array([0.8, 4.0])
    with vmp.Model("m") as model:
        with vmp.Plate("K", 2):
            rate = vmp.Gamma("lam", 2.0, 1.0, observed=lam)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", PI)
            vmp.Poisson("y", rate[z], exposure=t, observed=y)
    lik = stats.poisson.logpmf(y[:, None], t[:, None] * lam)
    return model, lik, stats.gamma.logpdf(lam, 2.0, scale=1.0).sum()


def _exponential():
    x, lam = np.array([0.1, 2.5, 0.7, 4.0, 0.3]), np.array([3.0, 0.4])
    with vmp.Model("m") as model:
        with vmp.Plate("K", 2):
            rate = vmp.Gamma("lam", 1.5, 2.0, observed=lam)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", PI)
            vmp.Exponential("x", rate[z], observed=x)
    lik = stats.expon.logpdf(x[:, None], scale=1 / lam)
    return model, lik, stats.gamma.logpdf(lam, 1.5, scale=0.5).sum()


def _binomial():
    x, n, p = np.array([0, 5, 2, 6, 1]), np.array([3, 6, 4, 6, 2]), np.array([0.2, 0.85])
    with vmp.Model("m") as model:
        with vmp.Plate("K", 2):
            prob = vmp.Beta("p", 2.0, 3.0, observed=p)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", PI)
            vmp.Binomial("x", n, prob[z], observed=x)
    lik = stats.binom.logpmf(x[:, None], n[:, None], p)
    return model, lik, stats.beta.logpdf(p, 2.0, 3.0).sum()


def _multinomial():
    x = np.array([[3, 0, 1], [0, 2, 2], [1, 1, 1], [5, 0, 0], [0, 0, 4]])
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    alpha = np.array([1.0, 2.0, 1.5])
    with vmp.Model("m") as model:
        with vmp.Plate("K", 2):
            prob = vmp.Dirichlet("p", alpha, observed=p)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", PI)
            vmp.Multinomial("x", prob[z], observed=x)
    lik = np.array([[stats.multinomial.logpmf(xn, xn.sum(), pk) for pk in p] for xn in x])
    return model, lik, sum(stats.dirichlet.logpdf(pk, alpha) for pk in p)


@pytest.mark.parametrize("build", [_poisson, _exponential, _binomial, _multinomial],
                         ids=["poisson", "exponential", "binomial", "multinomial"])
def test_gated_mixture_with_fixed_parameters_reaches_the_enumerated_evidence(build):
    """The observed parameters' own log prior is part of the bound (their factor), added here."""
    model, lik, log_prior = build()
    bound = _fit(model, iterations=2)
    assert bound == pytest.approx(_enumerated(lik) + log_prior, rel=1e-10)
    post = np.exp(lik + np.log(PI) - logsumexp(lik + np.log(PI), axis=1, keepdims=True))
    np.testing.assert_allclose(model["z"].parameters["probabilities"], post, rtol=1e-10)
