"""Every factor's bound term against an independent Monte Carlo estimate of E_q[log p(child | parents)].

tests/test_rules.py checks that each message is the gradient of the factor's expected
log-density; this checks that expected log-density itself. For each case of tests/rule_cases.py
(and a few more combinations of glue and families below), every hidden node gets a random q; the
reference draws every random node from q with numpy (tests/mc_reference.py), pushes the draws
through the gates, gathers, dots, sums and scales, and averages scipy's log-density. The factor's
per-element term (weights and masks applied) must lie within 5 standard errors of the weighted
average, element by element. A missing term, a wrong sign or a factor of 2 in any rule is far
outside that (tests/test_factor_monte_carlo.py::test_a_broken_term_is_seen breaks one).

The allocation bound of a Poisson rate that is a dot of Gammas (Gopalan et al. 2015) is a lower
bound on E[log p], not equal to it: checked as such. Markov chains are left to
tests/test_markov_chain.py (exact enumeration of paths).
"""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests import mc_reference as mc
from tests.helpers import central_difference, randomize, set_moments
from tests.rule_cases import ALLOCATING, CASES

DRAWS = 4000


def _rng():
    return np.random.default_rng(23)


def gamma_scaled_rate():
    with vmp.Model("c") as m:
        b = vmp.Gamma("b", 2.0, 1.0)
        with vmp.Plate("N", 3):
            t = vmp.Gamma("t", [0.7, 2.0, 5.0], 2.5 * b)
            vmp.Normal("y", 0.0, t, observed=[0.3, -1.0, 2.0])
    return m, "t"


def dirichlet_prior():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            p = vmp.Dirichlet("p", rng.uniform(0.3, 3.0, size=(3, 4)))
        with vmp.Plate("N", 2), vmp.Plate("K", 3):
            vmp.Categorical("x", p, observed=rng.integers(0, 4, size=(2, 3)))
    return m, "p"


def wishart_prior_3d():
    rng = _rng()
    a = rng.normal(size=(3, 3))
    with vmp.Model("c") as m:
        with vmp.Plate("K", 2):
            lam = vmp.Wishart("L", [3.5, 6.0], a @ a.T + np.eye(3))
        with vmp.Plate("N", 2), vmp.Plate("K", 2):
            vmp.Gaussian("x", np.zeros(3), lam, observed=rng.normal(size=(2, 2, 3)))
    return m, "L"


def exponential_gated():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Exponential("x", lam[z], observed=rng.exponential(size=5), weights=rng.uniform(size=5))
    return m, "x"


def exponential_scaled():
    with vmp.Model("c") as m:
        lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 3):
            vmp.Exponential("x", lam / 4.0, observed=[0.5, 3.0, 1.0])
    return m, "x"


def gathered_gaussian():
    rng = _rng()
    rows = np.array([2, 0, 0, 1, 2, 2])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3):
            u = vmp.Gaussian("u", np.zeros(2), np.eye(2))
            lam = vmp.Wishart("Lam", 4.0, np.eye(2))
        with vmp.Plate("R", 6):
            vmp.Gaussian("x", u[rows], lam[rows], observed=rng.normal(size=(6, 2)), weights=rng.uniform(size=6))
    return m, "x"


def gathered_normal():
    rng = _rng()
    rows = np.array([1, 0, 1, 1])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
            tau = vmp.Gamma("tau", 3.0, 2.0)
        with vmp.Plate("R", 4):
            x = vmp.Normal("x", mu[rows], tau[rows])
            vmp.Normal("y", x, 1.0, observed=rng.normal(size=4))
    return m, "x"


def gathered_counts():
    rng = _rng()
    rows = np.array([1, 0, 1, 2, 2])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3):
            lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("R", 5):
            vmp.Poisson("y", lam[rows], exposure=rng.uniform(0.5, 2.0, size=5), observed=rng.poisson(2.0, size=5))
    return m, "y"


def gathered_multinomial():
    rng = _rng()
    rows = np.array([1, 0, 1, 1])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 2):
            p = vmp.Dirichlet("p", np.ones(3))
        with vmp.Plate("R", 4):
            vmp.Multinomial("x", p[rows], observed=rng.multinomial(4, [0.2, 0.5, 0.3], size=4))
    return m, "x"


def gathered_bernoulli():
    rng = _rng()
    rows = np.array([1, 0, 1, 1, 0])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 2):
            p = vmp.Beta("p", 2.0, 1.0)
        with vmp.Plate("R", 5):
            vmp.Bernoulli("x", p[rows], observed=rng.integers(0, 2, size=5), weights=rng.uniform(size=5))
    return m, "x"


def binomial_gated_by_bernoulli():
    rng = _rng()
    with vmp.Model("c") as m:
        rho = vmp.Beta("rho", 2.0, 3.0)
        with vmp.Plate("K", 2):
            p = vmp.Beta("p", 1.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Bernoulli("z", rho)
            vmp.Binomial("x", 6, p[z], observed=rng.integers(0, 7, size=4))
    return m, "x"


def gamma_gated_and_gathered_rate():
    rng = _rng()
    rows = np.array([1, 0, 1, 1])
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            b = vmp.Gamma("b", 2.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", pi)
            vmp.Gamma("t", 1.5, b[z], observed=rng.gamma(2.0, size=4), weights=rng.uniform(size=4))
            vmp.Gamma("u", 2.5, b[rows], observed=rng.gamma(2.0, size=4))
    return m, "t"


def gamma_gathered_rate():
    m, _ = gamma_gated_and_gathered_rate()
    return m, "u"


def categorical_gated_by_bernoulli():
    rng = _rng()
    with vmp.Model("c") as m:
        rho = vmp.Beta("rho", 2.0, 3.0)
        with vmp.Plate("K", 2):
            p = vmp.Dirichlet("p", np.ones(3))
        with vmp.Plate("N", 5):
            z = vmp.Bernoulli("z", rho)
            vmp.Categorical("x", p[z], observed=rng.integers(0, 3, size=5), weights=rng.uniform(size=5))
    return m, "x"


def sum_of_a_gate_a_gather_and_a_dot():
    """x_n ~ N(mu[z_n] + b[rows_n] + dot(w, X_n) + 1, tau): every kind of glue in one mean."""
    rng = _rng()
    rows = np.array([1, 0, 1, 2, 2, 0])
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        tau = vmp.Gamma("tau", 3.0, 1.0)
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("U", 3):
            b = vmp.Normal("b", 0.0, 2.0)
        with vmp.Plate("N", 6):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z] + b[rows] + vmp.dot(w, rng.normal(size=(6, 2))) + 1.0, tau,
                       observed=rng.normal(size=6), weights=rng.uniform(size=6))
    return m, "x"


EXTRA = {f.__name__: f for f in [
    gamma_scaled_rate, dirichlet_prior, wishart_prior_3d, exponential_gated,
    exponential_scaled, gathered_gaussian, gathered_normal, gathered_counts, gathered_multinomial,
    gathered_bernoulli, binomial_gated_by_bernoulli, gamma_gated_and_gathered_rate, gamma_gathered_rate,
    categorical_gated_by_bernoulli, sum_of_a_gate_a_gather_and_a_dot,
]}
ALL = {**{k: v for k, v in CASES.items() if "markov" not in k}, **EXTRA}


def _setup(build, seed=11):
    model, child = build()
    randomize(model, np.random.default_rng(seed))
    for node in model.nodes.values():  # a plate-masked parent: data where observed (as the engine reads it)
        if node.clamp is not None and node.clamp.coordinates is None:
            mask = np.asarray(node.mask, bool)
            data = node.family.statistics(np.where(mask, node.data, 0.0), node.event_shape)
            set_moments(node, [np.where(mask, d, m) for d, m in zip(data, node.moments)])
    f = model.compile()[0][child]
    weight = f.child.factor_weights()
    node = model[child]
    eff = np.ones(node.plate_shape) if weight is None else np.broadcast_to(weight, node.plate_shape)
    if f.live is not None:
        eff = eff * f.live
    return model, f, node, weight, eff


def _compare(case, seed=11):
    model, f, node, weight, eff = _setup(ALL[case], seed)
    ours = f.elog(weight, per_element=True, cached=False)
    mean, se = mc.expected_log_density(node, DRAWS, seed=5)
    live = eff > 0
    return ours, eff * np.where(live, mean, 0.0), eff * se, live


@pytest.mark.parametrize("case", list(ALL))
def test_bound_term_is_the_monte_carlo_expected_log_density(case):
    ours, reference, se, live = _compare(case)
    assert live.any(), "every element barren: nothing compared"
    np.testing.assert_array_equal(ours[~live], 0.0)
    if case in ALLOCATING:  # a lower bound: E[log sum_k theta_k beta_k] >= the allocation's
        assert np.all(ours[live] <= reference[live] + 5 * se[live])
        return
    gap = np.abs(ours[live] - reference[live])
    assert np.all(gap <= 5 * se[live] + 1e-9), (gap / se[live], ours, reference)


def _extra_targets():
    for case, build in EXTRA.items():
        model, child = build()
        model.compile()
        for node in model.compile()[0][child].nodes():
            yield case, node.name


@pytest.mark.parametrize("case,name", list(_extra_targets()))
def test_messages_of_the_extra_cases_are_gradients(case, name):
    """As tests/test_rules.py for the table there: each message is the gradient of the (now Monte
    Carlo checked) expected log-density, by central differences along random directions."""
    model, f, node, weight, _ = _setup(ALL[case])
    target = model[name]
    msg = f.messages(target, weight)
    base = target.moments
    rng = np.random.default_rng(5)
    direction = [rng.normal(size=m.shape) for m in base]
    direction = [d + np.swapaxes(d, -1, -2) if d.ndim >= 2 and d.shape[-1] == d.shape[-2] else d for d in direction]
    if target is f.child and f.live is not None:
        keep = f.live.reshape(f.live.shape + (1,) * (base[0].ndim - f.live.ndim))
        direction = [d * keep for d in direction]
    analytic = sum(float(np.sum(g * d)) for g, d in zip(msg, direction))
    assert central_difference(f, target, weight, direction) == pytest.approx(analytic, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("factor,case", [("ExponentialFactor", "exponential_gamma"), ("GammaFactor", "gamma_rate"),
                                         ("WishartFactor", "wishart_prior_3d")])
def test_a_broken_term_is_seen(monkeypatch, factor, case):
    """One term's coefficient doubled (a factor of 2 lost or gained): far outside the tolerance."""
    import vmp.factors as factors
    from vmp.factors.terms import Term

    cls = getattr(factors, factor)
    original = cls.terms

    def broken(self):
        terms = original(self)
        return [Term(2 * terms[0].coef, terms[0].ops, terms[0].consts)] + terms[1:]

    monkeypatch.setattr(cls, "terms", broken)
    ours, reference, se, live = _compare(case)
    assert np.any(np.abs(ours[live] - reference[live]) > 10 * se[live])


@pytest.mark.parametrize("case", sorted(ALLOCATING))
def test_the_allocation_bound_is_its_closed_form_optimum(case):
    """For a rate sum_k theta_k beta_k the bound term is E[log p] with E[log sum_k theta_k beta_k]
    replaced by its Jensen bound at the optimal allocation, log sum_k exp(E[log theta_k] + E[log beta_k])
    (Gopalan et al. 2015, eq. (3)-(5)); below the Monte Carlo E[log p] (checked above)."""
    from scipy.special import digamma, gammaln, logsumexp

    model, f, node, weight, eff = _setup(ALL[case])
    moments = {}
    for name in ("theta", "beta"):
        p = model[name].family.parameters(model[name].natural)
        moments[name] = (p["shape"] / p["rate"], digamma(p["shape"]) - np.log(p["rate"]))
    (e_theta, log_theta), (e_beta, log_beta) = moments["theta"], moments["beta"]
    expr = node.parents["rate"]
    if isinstance(expr.u, vmp.graph.expressions.Gather):
        e_theta, log_theta = e_theta[expr.u.index], log_theta[expr.u.index]
        e_beta, log_beta = e_beta[expr.v.index], log_beta[expr.v.index]
        log_rate, rate = logsumexp(log_theta + log_beta, axis=-1), np.sum(e_theta * e_beta, -1)
    else:
        log_rate = logsumexp(log_theta[:, None, :] + log_beta[None, :, :], axis=-1)
        rate = e_theta @ e_beta.T
    t = 1.0 if node.factor.exposure is None else node.factor.exposure
    y = np.asarray(node.data, float)
    want = y * (log_rate + np.log(t)) - t * rate - gammaln(y + 1)
    np.testing.assert_allclose(f.elog(weight, per_element=True, cached=False), eff * want, rtol=1e-12, atol=1e-12)
