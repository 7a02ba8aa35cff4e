"""Means that are sums (``a + b``, ``dot(u, v) + bias[rows]``, ``mu + c``) against independent
computations: exact evidence where q is exact, the fully factorized coordinate-ascent fixed
point (written out in numpy) where it is not."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp


def test_gaussian_node_plus_constant_is_exact():
    rng = np.random.default_rng(0)
    n, d = 6, 2
    m0, p0, lam, c = np.array([0.3, -0.1]), np.eye(2) * 0.7, np.array([[2.0, 0.4], [0.4, 1.0]]), np.array([1.0, -2.0])
    x = rng.normal(size=(n, d)) + c
    with vmp.Model("g") as model:
        mu = vmp.Gaussian("mu", m0, p0)
        with vmp.Plate("N", n):
            vmp.Gaussian("x", mu + c, lam, observed=x)
    res = model.fit(iterations=5)
    cov = np.kron(np.ones((n, n)), np.linalg.inv(p0)) + np.kron(np.eye(n), np.linalg.inv(lam))
    evidence = stats.multivariate_normal(np.tile(m0 + c, n), cov).logpdf(x.reshape(-1))
    assert res.final_elbo == pytest.approx(evidence, rel=1e-11)


def _factorized_fixed_point(x, y, prior_prec, tau, sweeps=2000):
    """Coordinate ascent of q(w) = prod_k N(w_k) for y ~ N(x w, 1/tau), w_k ~ N(0, 1/p_k), and
    its bound E[log p(y | w)] + E[log p(w)] + H[q]."""
    k = x.shape[1]
    mean, prec = np.zeros(k), prior_prec + tau * np.sum(x**2, 0)
    for _ in range(sweeps):
        for j in range(k):
            resid = y - x @ mean + x[:, j] * mean[j]
            mean[j] = tau * x[:, j] @ resid / prec[j]
    var = 1.0 / prec
    sq = np.sum((y - x @ mean) ** 2) + np.sum(x**2 @ var)
    loglik = 0.5 * y.size * np.log(tau / (2 * np.pi)) - 0.5 * tau * sq
    logprior = np.sum(0.5 * np.log(prior_prec / (2 * np.pi)) - 0.5 * prior_prec * (mean**2 + var))
    entropy = np.sum(0.5 * (1 + np.log(2 * np.pi * var)))
    return mean, loglik + logprior + entropy


def test_sum_of_gathered_and_shared_normals_is_the_factorized_fixed_point():
    rng = np.random.default_rng(1)
    idx = np.array([0, 1, 2, 0, 1, 1, 2])
    y = rng.normal(size=idx.size) + 1.0
    tau, offset = 3.0, 0.5
    with vmp.Model("s") as model:
        with vmp.Plate("K", 3):
            a = vmp.Normal("a", 0.0, 1.0)
        b = vmp.Normal("b", 0.0, 2.0)
        with vmp.Plate("N", idx.size):
            vmp.Normal("y", a[idx] + b + offset, tau, observed=y)
    res = model.fit(iterations=3000, tol=-1.0)
    design = np.c_[np.eye(3)[idx], np.ones(idx.size)]
    mean, bound = _factorized_fixed_point(design, y - offset, np.array([1.0, 1.0, 1.0, 2.0]), tau)
    assert np.allclose(np.r_[a.mean, b.mean], mean, atol=1e-9)
    assert res.final_elbo == pytest.approx(bound, rel=1e-10)


def test_a_node_in_two_terms_is_refused():
    with vmp.Model("bad"):
        with vmp.Plate("K", 3):
            a = vmp.Normal("a", 0.0, 1.0)
        with vmp.Plate("N", 2):
            with pytest.raises(vmp.GraphError, match="node 'a' appears in two terms"):
                a[np.array([0, 1])] + a[np.array([1, 2])]


def test_terms_of_different_families_are_refused():
    with vmp.Model("bad"):
        g = vmp.Gaussian("g", np.zeros(2), np.eye(2))
        t = vmp.Gamma("t", 1.0, 1.0)
        with pytest.raises(vmp.GraphError, match="must all be Gaussian or all Normal"):
            g + t
