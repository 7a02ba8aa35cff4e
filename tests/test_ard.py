"""ARD: a Gaussian with one Gamma precision per event dimension, against closed forms, and
Bayesian PCA switching off the components the data do not need."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp


def test_ard_precisions_with_known_mean_are_exact():
    """x_n ~ N(m, diag(alpha)^-1), alpha_d ~ Gamma(a, b): q(alpha_d) = Gamma(a + N/2,
    b + sum_n (x_nd - m_d)^2 / 2) and the bound is the exact evidence (Bayes' rule at a point)."""
    rng = np.random.default_rng(0)
    n, d, a, b = 12, 3, 2.0, 1.5
    m = np.array([0.5, -1.0, 0.0])
    x = m + rng.normal(size=(n, d)) * np.array([0.5, 1.0, 2.0])
    with vmp.Model("ard") as model:
        with vmp.Plate("D", d):
            alpha = vmp.Gamma("alpha", a, b)
        with vmp.Plate("N", n):
            vmp.Gaussian("x", m, alpha, observed=x)
    res = model.fit(iterations=5)
    rate = b + 0.5 * np.sum((x - m) ** 2, 0)
    assert np.allclose(alpha.parameters["shape"], a + n / 2)
    assert np.allclose(alpha.parameters["rate"], rate, rtol=1e-12)
    t = np.array([0.7, 1.1, 0.3])
    evidence = (stats.norm(m, 1 / np.sqrt(t)).logpdf(x).sum() + stats.gamma(a, scale=1 / b).logpdf(t).sum()
                - stats.gamma(a + n / 2, scale=1 / rate).logpdf(t).sum())
    assert res.final_elbo == pytest.approx(evidence, rel=1e-11)


def test_ard_mean_with_known_precisions_equals_the_diagonal_wishart_case():
    """With alpha observed, diag(alpha) is a constant precision: q(mu) must equal the one from
    vmp.Gaussian with that constant matrix, and the bounds differ by log p(alpha) alone."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 2))
    a = np.array([2.0, 0.5])
    posts = []
    for prec in ("ard", "matrix"):
        with vmp.Model("m") as model:
            mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
            if prec == "ard":
                with vmp.Plate("D", 2):
                    alpha = vmp.Gamma("alpha", 1.0, 1.0, observed=a)
            with vmp.Plate("N", 6):
                vmp.Gaussian("x", mu, alpha if prec == "ard" else np.diag(a), observed=x)
        res = model.fit(iterations=5)
        posts.append((mu.mean, mu.parameters["precision"], res.final_elbo))
    assert np.allclose(posts[0][0], posts[1][0], rtol=1e-12)
    assert np.allclose(posts[0][1], posts[1][1], rtol=1e-12)
    assert posts[0][2] - posts[1][2] == pytest.approx(stats.gamma(1.0).logpdf(a).sum(), rel=1e-12)


def test_ard_errors_name_the_node():
    with vmp.Model("bad"):
        alpha = vmp.Gamma("alpha", 1.0, 1.0)
        vmp.Gaussian("w0", np.zeros(3), alpha)  # no plate: an isotropic precision alpha I, not ARD
        with vmp.Plate("K", 2):
            a2 = vmp.Gamma("a2", 1.0, 1.0)
        with pytest.raises(vmp.ShapeError, match="size D = 3"):
            vmp.Gaussian("w", np.zeros(3), a2)
