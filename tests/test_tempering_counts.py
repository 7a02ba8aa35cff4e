"""Tempered log-normalizers of count likelihoods (Mandt et al., Variational Tempering, eq. (3)):
log int p(x | eta)^s dx for the families whose base measure is not 1, and a datapoint's
log C_n(T) of a Poisson (with exposure) or Binomial (with per-element trials) mixture.

p^s = h(x)^s exp{s <eta, u(x)> - s A(eta)}: with h = 1 the integral is exp{A(s eta) - s A(eta)}, but
a Poisson's 1/y!, a Binomial's C(n, x) and a Multinomial's coefficient are raised to s too. The
references sum scipy's pmf^s over the support (truncated far in the tail), never vmp's code.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import quad
from scipy.special import digamma, logsumexp

import vmp
from vmp.families import Binomial, Gamma, Multinomial, Normal, Poisson
from vmp.inference.engine import Engine
from vmp.inference.init import initialize
from vmp.inference.tempered import log_normalizers

S = np.array([1.0, 0.5, 0.2, 0.05])


def _poisson_reference(rate, s):
    y = np.arange(20000)
    return logsumexp(s * stats.poisson.logpmf(y, rate))


def test_poisson():
    rate = np.array([0.01, 0.5, 3.0, 40.0, 900.0])
    for s in S:
        got = Poisson.tempered_log_normalizer(Poisson.natural_from(rate), s)
        want = [_poisson_reference(r, s) for r in rate]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"s = {s}")


def test_binomial_with_per_element_trials():
    n, p = np.array([0.0, 1.0, 5.0, 30.0]), np.array([0.3, 0.9, 0.05, 0.5])
    family = Binomial.of(n)
    for s in S:
        got = family.tempered_log_normalizer(family.natural_from(p), s)
        want = [logsumexp(s * stats.binom.logpmf(np.arange(ni + 1), ni, pi)) for ni, pi in zip(n, p)]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"s = {s}")


def test_multinomial_by_enumeration():
    n = np.array([0.0, 1.0, 4.0, 7.0])
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]])
    family = Multinomial.of(n)
    for s in S:
        got = family.tempered_log_normalizer(family.natural_from(p), s)
        want = []
        for ni, pi in zip(n.astype(int), p):
            xs = [x for x in itertools.product(range(ni + 1), repeat=3) if sum(x) == ni]
            want.append(logsumexp([s * stats.multinomial.logpmf(x, ni, pi) for x in xs]))
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=f"s = {s}")


def test_unit_base_measure_families_by_quadrature():
    for s in S[1:]:
        got = Normal.tempered_log_normalizer(Normal.natural_from(np.array(0.7), np.array(2.5)), s)
        want = np.log(quad(lambda x: stats.norm.pdf(x, 0.7, 1 / np.sqrt(2.5)) ** s, -np.inf, np.inf)[0])
        assert got == pytest.approx(want, rel=1e-8)
        got = Gamma.tempered_log_normalizer(Gamma.natural_from(np.array(3.0), np.array(2.0)), s)
        want = np.log(quad(lambda x: stats.gamma.pdf(x, 3.0, scale=0.5) ** s, 0, np.inf)[0])
        assert got == pytest.approx(want, rel=1e-8)


TEMPS = np.array([1.0, 2.0, 5.0])


def _mixture(kind):
    rng = np.random.default_rng(0)
    scale = np.arange(8) + 1.0
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.array([1.0, 2.0]))
        with vmp.Plate("K", 2):
            if kind == "poisson":
                theta = vmp.Gamma("theta", [2.0, 9.0], 0.5)
            elif kind == "binomial":
                theta = vmp.Beta("theta", [2.0, 1.0], [2.0, 6.0])
            else:
                theta = vmp.Dirichlet("theta", np.array([[2.0, 1.0, 1.0], [0.5, 1.0, 3.0]]))
        with vmp.Plate("N", 8):
            z = vmp.Categorical("z", pi)
            if kind == "poisson":
                vmp.Poisson("y", theta[z], exposure=scale, observed=rng.poisson(5.0 * scale))
            elif kind == "binomial":
                vmp.Binomial("y", scale, theta[z], observed=rng.binomial(scale.astype(int), 0.4))
            else:
                vmp.Multinomial("y", theta[z], observed=rng.multinomial(scale.astype(int), [0.2, 0.3, 0.5]))
    return model, scale


@pytest.mark.parametrize("kind", ["poisson", "binomial", "multinomial"])
def test_a_mixture_points_log_normalizer_reads_its_own_exposure_or_trials(kind):
    """log C_n(T) = log sum_k exp{s E[log pi_k] + g_nk(s)}, g_nk = log sum_y p(y | eta_nk)^s with
    the globals' moments plugged in (eta_nk = E[log lambda_k] + log t_n for a Poisson with
    exposure t_n, E[log p_k] - E[log(1 - p_k)] with n_n trials for a Binomial, E[log p_k] with
    the n_n = sum of the counts for a Multinomial)."""
    model, scale = _mixture(kind)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(1))
    plan = vmp.Minibatch("N", 3).prepare(engine, np.random.default_rng(0))
    rows = np.array([1, 4, 7])
    got = log_normalizers(engine, plan, replace(plan.context(rows), state=state), TEMPS)
    alpha = model["pi"].family.parameters(state.natural["pi"])["alpha"]
    e_log_pi = digamma(alpha) - digamma(alpha.sum())
    q = model["theta"].family.parameters(state.natural["theta"])
    want = np.empty((rows.size, TEMPS.size))
    for i, n in enumerate(rows):
        for m, s in enumerate(1 / TEMPS):
            g = []
            for k in range(2):
                if kind == "poisson":
                    eta = digamma(q["shape"][k]) - np.log(q["rate"][k]) + np.log(scale[n])
                    g.append(_poisson_reference(np.exp(eta), s))
                elif kind == "binomial":
                    eta = digamma(q["alpha"][k]) - digamma(q["beta"][k])
                    y = np.arange(scale[n] + 1)
                    g.append(logsumexp(s * stats.binom.logpmf(y, scale[n], 1 / (1 + np.exp(-eta)))))
                else:
                    eta = digamma(q["alpha"][k]) - digamma(q["alpha"][k].sum())
                    p, c = np.exp(eta) / np.exp(eta).sum(), int(scale[n])
                    xs = [x for x in itertools.product(range(c + 1), repeat=3) if sum(x) == c]
                    g.append(logsumexp([s * stats.multinomial.logpmf(x, c, p) for x in xs]))
            want[i, m] = logsumexp(s * e_log_pi + np.array(g))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("f", [f for f in vmp.families.ALL if not f.joint_plates], ids=lambda f: f.name)
def test_every_family_by_monte_carlo(f):
    """int p^s = E_p[p(x)^(s-1)]: the mean over draws of p(x)^(s-1) (the log-density
    <eta, u(x)> - A(eta) + log h(x) that tests/families/test_every_family.py checks against scipy),
    within 5 standard errors (delta method), and 0 at s = 1."""
    s, draws = 0.7, 20000
    eta = f.example()
    event = f.event_shape(eta)
    x = f.sample(eta, np.random.default_rng(4), size=(draws,))
    log_p = f.inner(eta, f.statistics(x, event)) - f.log_normalizer(eta) + f.log_base_measure(x, event)
    ratio = np.exp((s - 1) * np.asarray(log_p))
    mean, se = ratio.mean(0), ratio.std(0) / np.sqrt(draws)
    got = f.tempered_log_normalizer(eta, s)
    assert np.all(np.abs(got - np.log(mean)) <= 5 * se / mean), (got, np.log(mean), se / mean)
    np.testing.assert_allclose(f.tempered_log_normalizer(eta, 1.0), 0.0, atol=1e-9)


def test_global_tempering_partition_function_of_poisson_counts():
    """log C(T) = log int Gamma(lam) prod_n sum_y Poi(y | t_n lam)^s dlam by quadrature, against the
    prior Monte Carlo of ``estimate_log_partition`` under a prior so narrow (sd 0.3% of the mean)
    that its draws differ by less than the tolerance; a 1/y! not raised to s is off by nats per
    datapoint."""
    from vmp.policies.tempering import estimate_log_partition

    shape, rate, t = 1e5, 1e5 / 3.0, np.array([0.5, 1.0, 2.0, 4.0])
    with vmp.Model("t") as model:
        lam = vmp.Gamma("lam", shape, rate)
        with vmp.Plate("N", t.size):
            vmp.Poisson("y", lam, exposure=t, observed=[1, 3, 5, 13])
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    plan = vmp.Minibatch("N", 2).prepare(engine, np.random.default_rng(0))
    got = estimate_log_partition(engine, plan, state, TEMPS, 20, np.random.default_rng(1), rows=t.size)
    sd = np.sqrt(shape) / rate
    grid = np.linspace(3.0 - 8 * sd, 3.0 + 8 * sd, 161)
    prior = stats.gamma.pdf(grid, shape, scale=1 / rate)
    log_pmf = stats.poisson.logpmf(np.arange(200)[None, None, :], t[None, :, None] * grid[:, None, None])
    want = [np.log(np.trapezoid(prior * np.exp(logsumexp(log_pmf / temp, axis=-1).sum(1)), grid)) for temp in TEMPS]
    np.testing.assert_allclose(got, want, atol=0.02)


def test_multinomial_in_blocks_and_its_limit(monkeypatch):
    """The polynomial product a block of elements at a time gives the same numbers; a product too
    large to form is a clear error, not a long wait or a wrong number."""
    from vmp.families import _count_sums

    family = Multinomial.of(np.arange(30.0))
    eta = (np.log(np.random.default_rng(0).dirichlet(np.ones(4), size=30)),)
    whole = family.tempered_log_normalizer(eta, 0.3)
    monkeypatch.setattr(_count_sums, "MAX_BLOCK", 3000)
    np.testing.assert_array_equal(family.tempered_log_normalizer(eta, 0.3), whole)
    with pytest.raises(NotImplementedError, match="Categorical tokens"):
        Multinomial.of(np.full(200, 2000.0)).tempered_log_normalizer((np.zeros((200, 500)),), 0.5)
