"""Gated count and positive likelihoods on a data plate large enough for the folded messages
(vmp/graph/folded.py: the message to z over N x K > DIRECT elements is one product of the
child's statistics table): the message to z and the factor's bound term against the closed-form
E_q[log p(x_n | theta_k)] per point and component, written here from digamma and scipy's
log-normalizers (never vmp's), with weights.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma, gammaln

import vmp
from tests.helpers import randomize
from vmp.graph import folded

N, K = 12_000, 3


def _gated(kind):
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 2.0, size=N)
    with vmp.Model(kind) as model:
        pi = vmp.Dirichlet("pi", np.ones(K))
        with vmp.Plate("K", K):
            theta = vmp.Beta("theta", 1.0, 1.0) if kind in ("binomial", "bernoulli") else vmp.Gamma("theta", 2.0, 1.0)
        with vmp.Plate("N", N):
            z = vmp.Categorical("z", pi)
            if kind == "binomial":
                n = rng.integers(0, 9, size=N)
                data = dict(n=n, x=rng.binomial(n, 0.3))
                vmp.Binomial("x", n, theta[z], observed=data["x"], weights=w)
            elif kind == "bernoulli":
                data = dict(x=rng.integers(0, 2, size=N))
                vmp.Bernoulli("x", theta[z], observed=data["x"], weights=w)
            elif kind == "poisson":
                data = dict(t=rng.uniform(0.5, 2.0, size=N), x=rng.poisson(3.0, size=N))
                vmp.Poisson("x", theta[z], exposure=data["t"], observed=data["x"], weights=w)
            elif kind == "exponential":
                data = dict(x=rng.exponential(size=N))
                vmp.Exponential("x", theta[z], observed=data["x"], weights=w)
            else:
                data = dict(x=rng.gamma(2.0, size=N))
                vmp.Gamma("x", 1.7, theta[z], observed=data["x"], weights=w)
    return model, data, w


def _table(kind, q, data):
    """E_q[log p(x_n | theta_k)], N x K."""
    x = data["x"][:, None].astype(float)
    if kind in ("binomial", "bernoulli"):
        a, b = q["alpha"], q["beta"]
        e_log_p, e_log_1p = digamma(a) - digamma(a + b), digamma(b) - digamma(a + b)
        if kind == "bernoulli":
            return x * e_log_p + (1 - x) * e_log_1p
        n = data["n"][:, None]
        return x * e_log_p + (n - x) * e_log_1p + gammaln(n + 1) - gammaln(x + 1) - gammaln(n - x + 1)
    e_lam, e_log_lam = q["shape"] / q["rate"], digamma(q["shape"]) - np.log(q["rate"])
    if kind == "poisson":
        t = data["t"][:, None]
        return x * (e_log_lam + np.log(t)) - t * e_lam - gammaln(x + 1)
    if kind == "exponential":
        return e_log_lam - e_lam * x
    return 1.7 * e_log_lam + 0.7 * np.log(x) - e_lam * x - gammaln(1.7)


@pytest.mark.parametrize("kind", ["binomial", "bernoulli", "poisson", "exponential", "gamma"])
def test_message_to_z_and_bound_term_are_the_closed_form(kind):
    assert N * K > folded.MIN_SIZE  # the size of the folded messages
    model, data, w = _gated(kind)
    randomize(model, np.random.default_rng(1))
    f = model.compile()[0]["x"]
    (msg,) = f.messages(model["z"], w)
    table = _table(kind, model["theta"].family.parameters(model["theta"].natural), data)
    np.testing.assert_allclose(msg, w[:, None] * table, rtol=1e-10, atol=1e-10)
    r = model["z"].family.parameters(model["z"].natural)["probabilities"]
    assert f.elog(w, cached=False) == pytest.approx(np.sum(w[:, None] * r * table), rel=1e-11)


def _parent_message(kind, r, data, w):
    """The message to theta_k: the coefficients of its moments in sum_n w_n r_nk E[log p(x_n | theta_k)]
    ((E[log p], E[log(1 - p)]) of a Beta, (E[lam], E[log lam]) of a Gamma)."""
    x, wr = data["x"].astype(float), w[:, None] * r
    if kind == "binomial":
        return wr.T @ x, wr.T @ (data["n"] - x)
    if kind == "bernoulli":
        return wr.T @ x, wr.T @ (1 - x)
    if kind == "poisson":
        return -(wr.T @ data["t"]), wr.T @ x
    if kind == "exponential":
        return -(wr.T @ x), wr.sum(0)
    return -(wr.T @ x), 1.7 * wr.sum(0)


@pytest.mark.parametrize("kind", ["binomial", "bernoulli", "poisson", "exponential", "gamma"])
def test_message_to_the_parameters_is_the_closed_form(kind):
    model, data, w = _gated(kind)
    randomize(model, np.random.default_rng(2))
    f = model.compile()[0]["x"]
    r = model["z"].family.parameters(model["z"].natural)["probabilities"]
    for got, want in zip(f.messages(model["theta"], w), _parent_message(kind, r, data, w)):
        np.testing.assert_allclose(got, want, rtol=1e-11)


def test_a_bernoulli_gate_over_a_large_plate_sends_m1_minus_m0():
    """z_n ~ Bernoulli(rho) gating lam[z] of a Poisson: the message to z's logit is
    w_n (E[log p(y_n | lam_1)] - E[log p(y_n | lam_0)]); the bound reads (1 - p_n, p_n)."""
    rng = np.random.default_rng(0)
    y, w = rng.poisson(3.0, size=N), rng.uniform(0.5, 2.0, size=N)
    with vmp.Model("b") as model:
        rho = vmp.Beta("rho", 2.0, 2.0)
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("theta", 2.0, 1.0)
        with vmp.Plate("N", N):
            z = vmp.Bernoulli("z", rho)
            vmp.Poisson("x", lam[z], observed=y, weights=w)
    randomize(model, np.random.default_rng(1))
    f = model.compile()[0]["x"]
    table = _table("poisson", lam.family.parameters(lam.natural), dict(x=y, t=np.ones(N)))
    (msg,) = f.messages(z, w)
    np.testing.assert_allclose(msg, w * (table[:, 1] - table[:, 0]), rtol=1e-10, atol=1e-10)
    p = z.family.parameters(z.natural)["probability"]
    assert f.elog(w, cached=False) == pytest.approx(np.sum(w * ((1 - p) * table[:, 0] + p * table[:, 1])), rel=1e-11)
