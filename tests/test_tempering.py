"""Variational tempering (Mandt et al.): the tempered per-datapoint log-normalizers against brute
force and closed forms, global tempering's C(T), and local tempering on a mixture and on LDA."""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import gammaln, logsumexp

import vmp
from models import lda
from tests.helpers import factorized_mixture
from tests.helpers import randomize
from vmp.inference.engine import Engine
from vmp.inference.init import initialize
from vmp.inference.tempered import log_normalizers

TEMPS = np.array([1.0, 2.0, 5.0])


def _tiny_lda(alpha=0.6):
    """One document, 2 topics, 3 tokens (word 0 once, word 1 twice: a count of 2 is 2 copies),
    vocabulary of 3, and the topics beta at a point."""
    model = lda(np.zeros(2, int), np.array([0, 1]), np.array([1.0, 2.0]), 2, n_words=3, alpha=alpha)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    beta = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    state = state.updated({"beta": (state.natural["beta"], (np.log(beta),))})
    plan = vmp.Minibatch("documents", 1).prepare(engine, np.random.default_rng(0))
    return engine, plan, replace(plan.context(np.array([0])), state=state), beta


def _brute_force(beta, alpha, s, words=None):
    """log int Dir(theta; alpha)^s sum_z [sum_w] prod_n (theta_{z_n} beta_{z_n w_n})^s dtheta: theta
    integrated by quadrature, the 2^3 assignments (and the 3^3 word sequences when ``words`` is
    None) summed."""
    log_b = 2 * gammaln(alpha) - gammaln(2 * alpha)
    sequences = [words] if words is not None else list(itertools.product(range(3), repeat=3))
    total = 0.0
    for z in itertools.product(range(2), repeat=3):
        def f(t, z=z):
            th = (t, 1.0 - t)
            return np.prod([th[k] ** s for k in z])
        val, _ = quad(f, 0, 1, weight="alg", wvar=(s * (alpha - 1), s * (alpha - 1)), epsabs=1e-14)
        # the beta factors do not depend on theta: summed over the word sequences outside the integral
        words_sum = sum(np.prod([beta[k, v] ** s for k, v in zip(z, w)]) for w in sequences)
        total += val * words_sum * np.exp(-s * log_b)
    return np.log(total)


def _mean_field(beta, alpha, s, words, counts, integrate_data):
    """max over q(theta) = Dir(a), q(z_n) of s E[log Dir(theta; alpha)] + H[q(theta)] +
    sum_n c_n (sum_k q_nk (s E[log theta_k] + gamma_nk) + H[q(z_n)]), gamma_nk = s log beta_{k w_n}
    (data fixed) or log sum_v beta_kv^s (data integrated); q(z) maximized in closed form, a by
    scipy.optimize."""
    from scipy.optimize import minimize
    from scipy.special import digamma

    gamma = np.log(np.sum(beta ** s, axis=1))[None, :] if integrate_data else s * np.log(beta[:, words]).T

    def negative(log_a):
        a = np.exp(log_a)
        elog = digamma(a) - digamma(a.sum())
        prior = gammaln(2 * alpha) - 2 * gammaln(alpha) + (alpha - 1) * elog.sum()
        entropy = gammaln(a).sum() - gammaln(a.sum()) - np.sum((a - 1) * elog)
        return -(s * prior + entropy + np.sum(counts * logsumexp(s * elog + gamma, axis=1)))
    best = minimize(negative, np.zeros(2), method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-12, maxiter=4000))
    return -best.fun


@pytest.mark.parametrize("integrate_data", [True, False])
def test_tempered_log_normalizer_of_one_document_matches_brute_force(integrate_data):
    """The bound is the mean-field optimum (computed independently) and below the brute-force
    integral; its importance-sampling refinement equals the integral."""
    engine, plan, ctx, beta = _tiny_lda()
    exact = np.array([_brute_force(beta, 0.6, 1 / t, None if integrate_data else [0, 1, 1]) for t in TEMPS])
    if integrate_data:
        assert exact[0] == pytest.approx(0.0, abs=1e-9), "C(1) = 1: the model is normalized"
    bound = log_normalizers(engine, plan, ctx, TEMPS, integrate_data)[0]
    optimum = [_mean_field(beta, 0.6, 1 / t, np.array([0, 1]), np.array([1.0, 2.0]), integrate_data) for t in TEMPS]
    np.testing.assert_allclose(bound, optimum, atol=1e-5)
    assert np.all(bound < exact), "a mean-field lower bound"
    sampled = log_normalizers(engine, plan, ctx, TEMPS, integrate_data, samples=4000,
                              rng=np.random.default_rng(3))[0]
    np.testing.assert_allclose(sampled, exact, atol=0.02)


def test_tempered_log_normalizer_of_a_mixture_point_is_exact():
    """Under one local Categorical the bound is the exact log-sum-exp over the components of
    pi_k^s int N(x | mu_k, 1/lam_k)^s dx = pi_k^s (2 pi / lam_k)^((1-s)/2) s^(-1/2) (data
    integrated) or of (pi_k N(x_n | mu_k, 1/lam_k))^s (data fixed)."""
    x = np.random.default_rng(0).normal(size=(12, 2))
    model = factorized_mixture(x, 3)
    engine = Engine(model)
    randomize(model, np.random.default_rng(1))  # components of different widths: g_k differ by k
    state = model.state
    plan = vmp.Minibatch("data", 4).prepare(engine, np.random.default_rng(0))
    rows = np.array([1, 4, 7, 9])
    ctx = replace(plan.context(rows), state=state)
    got = log_normalizers(engine, plan, ctx, TEMPS)
    z, obs = model["z"], model["x"]
    log_pi = engine.factors["z"].messages(z, ctx=replace(ctx, subset={}))[0][0]
    g = np.zeros((rows.size, 3, TEMPS.size))
    from vmp.inference.tempered import tempered_integral
    for k in range(3):
        onehot = np.zeros((rows.size, 3))
        onehot[:, k] = 1
        eta = engine.conditional(obs).messages(obs, ctx=replace(ctx, overrides={"z": (onehot,)}))
        g[:, k] = tempered_integral(obs.family, eta, None, 1 / TEMPS)
    expected = logsumexp(log_pi[None, :, None] / TEMPS + g, axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-8)
    fixed = log_normalizers(engine, plan, ctx, TEMPS, integrate_data=False)
    per_k = np.stack([engine.factors["x"].elog(per_element=True, ctx=replace(ctx, overrides={"z": (np.eye(3)[[k] * 4],)}))
                      for k in range(3)], axis=1)
    np.testing.assert_allclose(fixed, logsumexp((log_pi[None, :, None] + per_k[..., None]) / TEMPS, axis=1),
                               rtol=1e-8, atol=1e-8)


def test_tempered_log_normalizer_with_a_per_point_precision():
    """x_n ~ N(mu_z, 1/lam_n) with a known precision per point: the integral reads lam_n, so it is
    computed per element: log C_n = log sum_k E[pi_k]-free form pi_k^s (2 pi / lam_n)^((1-s)/2) s^(-1/2)
    with E[log pi] plugged in."""
    lam = np.linspace(0.5, 3.0, 8)
    with vmp.Model("per_point") as model:
        pi = vmp.Dirichlet("pi", alpha=np.ones(3))
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 8):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], lam, observed=np.linspace(-2, 2, 8))
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    plan = vmp.Minibatch("N", 3).prepare(engine, np.random.default_rng(0))
    rows = np.array([0, 3, 7])
    got = log_normalizers(engine, plan, replace(plan.context(rows), state=state), TEMPS)
    alpha = state.natural["pi"][0] + 1.0
    from scipy.special import digamma
    e_log_pi = digamma(alpha) - digamma(alpha.sum())
    s = 1 / TEMPS
    per_point = (1 - s)[None] / 2 * np.log(2 * np.pi / lam[rows, None]) - 0.5 * np.log(s)[None]
    expected = logsumexp(e_log_pi[:, None] * s, axis=0)[None] + per_point
    np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_tempered_partition_function_matches_closed_form():
    """For x_n ~ N(mu, 1/lam) with known lam, int N(x | mu, 1/lam)^(1/T) dx =
    (2 pi / lam)^((1 - 1/T)/2) T^(1/2) for every mu, so log C(T) = N times its log."""
    from vmp.policies.tempering import estimate_log_partition

    lam, n = 2.5, 40
    with vmp.Model("t") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", n):
            vmp.Normal("x", mu, lam, observed=np.linspace(-1, 1, n))
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    plan = vmp.Minibatch("N", 5).prepare(engine, np.random.default_rng(0))
    got = estimate_log_partition(engine, plan, state, TEMPS, 7, np.random.default_rng(1), rows=10)
    expected = n * ((1 - 1 / TEMPS) / 2 * np.log(2 * np.pi / lam) + 0.5 * np.log(TEMPS))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_tempered_partition_function_of_a_mixture_with_fixed_weights():
    """pi fixed, x_n ~ N(mu_z, 1/lam): C_n = sum_k pi_k^s (2 pi / lam)^((1-s)/2) s^(-1/2) for every
    mu, so log C(T) = N [log sum_k pi_k^s + (1-s)/2 log(2 pi / lam) - 1/2 log s] (the closed form
    Mandt et al. give for the factorial mixture, with one component on)."""
    from vmp.policies.tempering import estimate_log_partition

    pi, lam, n = np.array([0.2, 0.5, 0.3]), 4.0, 30
    with vmp.Model("fixed") as model:
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", n):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], lam, observed=np.linspace(-2, 2, n))
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    plan = vmp.Minibatch("N", 5).prepare(engine, np.random.default_rng(0))
    got = estimate_log_partition(engine, plan, state, TEMPS, 5, np.random.default_rng(1))
    s = 1 / TEMPS
    expected = n * (np.log(np.sum(pi[:, None] ** s, axis=0)) + (1 - s) / 2 * np.log(2 * np.pi / lam) - 0.5 * np.log(s))
    np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_global_tempering_on_the_mixture():
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    model = factorized_mixture(centers[rng.integers(3, size=300)] + rng.normal(size=(300, 2)), 3)
    temps = np.geomspace(1.0, 10.0, 12)
    policy = vmp.Tempering(temps, samples=30)
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 30), policies=[policy],
                    iterations=150, evaluate_every=50, seed=2)
    assert not res.diverged
    st = res.state.loop.policies[0]
    assert st["log_partition"][0] == pytest.approx(0.0, abs=1e-9)
    assert np.all(np.diff(st["log_partition"]) > 0)
    assert st["r"].sum() == pytest.approx(1.0)
    t = res.history["temperature"]
    assert t[0] > 1.5 and t[-1] == pytest.approx(1.0, abs=1e-6), "q(T) starts spread and learns T = 1"
    assert res.elbo[-1] > res.elbo[0]


def _corpus(n_docs=60, outliers=6, length=40, seed=0):
    """3 topics on disjoint blocks of 10 words; typical documents draw theta ~ Dir(0.1) (mostly
    one topic), outliers the even mixture theta = (1/3, 1/3, 1/3)."""
    rng = np.random.default_rng(seed)
    topics = np.kron(np.eye(3), np.ones(10)) / 10
    docs, words = [], []
    for d in range(n_docs):
        theta = np.full(3, 1 / 3) if d < outliers else rng.dirichlet(np.full(3, 0.1))
        z = rng.choice(3, size=length, p=theta)
        w = np.array([rng.choice(30, p=topics[k]) for k in z])
        docs.append(np.full(length, d))
        words.append(w)
    d, w = np.concatenate(docs), np.concatenate(words)
    pairs, counts = np.unique(np.stack([d, w], 1), axis=0, return_counts=True)
    return pairs[:, 0], pairs[:, 1], counts.astype(float)


def test_local_tempering_on_lda_gives_broad_documents_high_temperatures():
    d, w, c = _corpus()
    model = lda(d, w, c, 3, n_words=30, alpha=0.1, eta=0.1)
    policy = vmp.LocalTempering(np.geomspace(1.0, 10.0, 8))
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("documents", 10), policies=[policy],
                    iterations=200, evaluate_every=100, seed=1, step=vmp.RobbinsMonro(tau=1.0, kappa=0.7))
    assert not res.diverged
    st = res.state.loop.policies[0]
    assert np.allclose(st["r"].sum(axis=1), 1.0)
    expected_t = st["r"] @ policy.temperatures
    assert np.min(expected_t[:6]) > np.percentile(expected_t[6:], 90), "outlying documents get high T"


def test_global_tempering_runs_on_lda_with_its_own_partition_function():
    d, w, c = _corpus(n_docs=20, outliers=0, length=20)
    policy = vmp.Tempering(np.geomspace(1.0, 10.0, 6), samples=5, partition_rows=10)
    res = lda(d, w, c, 3, n_words=30, alpha=0.1, eta=0.1).fit(
        method="stochastic", subsample=vmp.Minibatch("documents", 5), policies=[policy], iterations=20,
        evaluate_every=10, seed=0)
    st = res.state.loop.policies[0]
    assert np.all(np.diff(st["log_partition"]) > 0), "log C(T) grows with T"
    assert st["r"].sum() == pytest.approx(1.0)
    t = res.history["temperature"]
    assert len(t) == 20 and np.all((t >= 1.0) & (t <= 10.0))


def test_tempering_refuses_two_local_selectors():
    with vmp.Model("two") as model:
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
            nu = vmp.Normal("nu", 0.0, 1.0)
        with vmp.Plate("N", 10):
            a = vmp.Categorical("a", np.full(2, 0.5))
            b = vmp.Categorical("b", np.full(2, 0.5))
            vmp.Normal("x", mu[a], 1.0, observed=np.arange(10.0))
            vmp.Normal("y", nu[b], 1.0, observed=np.arange(10.0))
    for policy in (vmp.LocalTempering([1.0, 2.0]), vmp.Tempering([1.0, 2.0], samples=2)):
        with pytest.raises(vmp.GraphError, match="several local Categorical selectors"):
            model.fit(method="stochastic", subsample=vmp.Minibatch("N", 2), policies=[policy], iterations=2)
    with pytest.raises(ValueError, match="increasing"):
        vmp.Tempering([2.0, 1.0])


def test_local_tempering_gives_outliers_high_temperatures():
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    x = centers[rng.integers(3, size=300)] + rng.normal(size=(300, 2))
    x[:5] = [[15, -15], [-15, -12], [14, 14], [-16, 15], [0, -18]]
    model = factorized_mixture(x, 3)
    policy = vmp.LocalTempering(np.geomspace(1.0, 10.0, 10))
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 30), policies=[policy],
                    iterations=200, evaluate_every=100, seed=1)
    assert not res.diverged
    st = res.state.loop.policies[0]
    assert np.allclose(st["r"].sum(axis=1), 1.0)
    expected_t = st["r"] @ policy.temperatures
    assert np.min(expected_t[:5]) > np.percentile(expected_t[5:], 90), "outliers are explained by high T"
    weights = policy.inverse(np.arange(300), st)
    assert np.all((weights >= 0.1 - 1e-12) & (weights <= 1.0 + 1e-12))
    assert len(res.history["temperature"]) == 200


