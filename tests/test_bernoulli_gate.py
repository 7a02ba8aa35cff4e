"""A latent Bernoulli gates as a Categorical over {0, 1} (``mu[z]``; its indicator is (1 - p, p)):
against brute-force enumeration of a small model's evidence and posterior, and against the same
model written with a Categorical selector."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import vmp

X = np.array([-1.3, 0.4, 2.6, 1.9, -0.2])
M0, L0, TAU, P = np.array([-1.0, 2.0]), 1e5, 0.7, 0.3


def test_evidence_and_posterior_by_enumeration():
    """mu_k ~ N(m_k, 1/L0) with L0 large, z_n ~ Bernoulli(P), x_n ~ N(mu_{z_n}, 1/TAU). Exact:
    log p(x) = log sum over the 2^5 z of p(z) N(x; m_z, I/TAU + S_z/L0) (S_z: points sharing a
    component share its mu). Mean field is exact in z given mu; with L0 large the bound is within
    KL(q || p(. | x)) ~ 1/L0 of the evidence, and q(z) within that of the exact marginals."""
    with vmp.Model("gate") as model:
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", M0, L0)
        with vmp.Plate("N", X.size):
            z = vmp.Bernoulli("z", P)
            vmp.Normal("x", mu[z], TAU, observed=X)
    res = model.fit(iterations=100, tol=1e-14)
    log_joint = []
    for config in itertools.product([0, 1], repeat=X.size):
        c = np.array(config)
        cov = np.eye(X.size) / TAU + (c[:, None] == c[None, :]) / L0
        log_joint.append(np.sum(np.where(c == 1, np.log(P), np.log1p(-P)))
                         + stats.multivariate_normal.logpdf(X, M0[c], cov))
    log_joint = np.array(log_joint)
    log_evidence = logsumexp(log_joint)
    configs = np.array(list(itertools.product([0, 1], repeat=X.size)))
    marginal = np.exp(log_joint - log_evidence) @ configs
    assert res.elbo[-1] <= log_evidence + 1e-9
    assert res.elbo[-1] == pytest.approx(log_evidence, abs=1e-4)
    np.testing.assert_allclose(model["z"].mean, marginal, atol=1e-4)
    assert np.ptp(marginal) > 0.5, "the data must tell the components apart"


def _mixture(selector: str, n: int = 40):
    rng = np.random.default_rng(3)
    x = np.where(rng.random(n) < 0.3, 2.5, -1.0) + rng.normal(size=n) * 0.8
    with vmp.Model(selector) as model:
        if selector == "bernoulli":
            rho = vmp.Beta("rho", 2.0, 5.0)
        else:
            rho = vmp.Dirichlet("rho", np.array([5.0, 2.0]))  # (P[z = 0], P[z = 1]): Beta(2, 5) on P[z = 1]
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 0.1)
            tau = vmp.Gamma("tau", 2.0, 2.0)
        with vmp.Plate("N", n):
            z = vmp.Bernoulli("z", rho) if selector == "bernoulli" else vmp.Categorical("z", rho)
            vmp.Normal("x", mu[z], tau[z], observed=x)
    return model


def test_a_bernoulli_gate_is_the_categorical_gate_over_zero_and_one():
    """Same start (q(mu) set), same sweeps: the bound and every q agree with the Categorical model."""
    models = {s: _mixture(s) for s in ("bernoulli", "categorical")}
    start = {"mu": np.array([-0.5, 1.5])}
    res = {s: m.fit(iterations=60, tol=1e-12, init=start) for s, m in models.items()}
    b, c = models["bernoulli"], models["categorical"]
    np.testing.assert_allclose(res["bernoulli"].elbo, res["categorical"].elbo, rtol=1e-10)
    np.testing.assert_allclose(b["z"].mean, c["z"].mean[:, 1], rtol=1e-9, atol=1e-12)
    for name in ("mu", "tau"):
        for u, v in zip(b[name].natural, c[name].natural):
            np.testing.assert_allclose(u, v, rtol=1e-9)
    assert b["rho"].mean == pytest.approx(c["rho"].mean[1], rel=1e-9)
    draws = b.predict("x").sample(20000, rng=1)
    np.testing.assert_allclose(draws.mean(0), b.predict("x").mean, atol=0.1)


def test_a_bernoulli_gates_only_two_components():
    with vmp.Model("three"):
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Bernoulli("z", 0.5)
            with pytest.raises(vmp.ShapeError, match="'z' has 2 categories but the gated plate 'K'"):
                vmp.Normal("x", mu[z], 1.0, observed=np.zeros(4))
