"""Beta, Bernoulli and Binomial against exact results: the conjugate posteriors and the log
evidence (the converged bound of a conjugate pair is the exact log marginal likelihood) against
scipy's beta-binomial, weights as repeated data, masks as absent data, mixtures of binary and
count vectors at their mean-field fixed point (computed here by hand), and the domain errors a
declaration raises, naming the node."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import vmp

A, B = 1.5, 2.5


def _sequential_log_evidence(x, n, a, b):
    """log p(x_1..x_m) for x_i ~ Bin(n_i, p), p ~ Beta(a, b), by the chain rule: each factor a
    beta-binomial pmf given the posterior of the ones before it."""
    total = 0.0
    for xi, ni in zip(x, n):
        total += stats.betabinom.logpmf(xi, ni, a, b)
        a, b = a + xi, b + ni - xi
    return total


def _fit(model):
    return model.fit(iterations=3, tol=0.0, seed=0).elbo[-1]


def test_beta_bernoulli_posterior_and_evidence():
    x = np.array([1, 0, 1, 1, 0, 1, 1])
    with vmp.Model("m") as model:
        p = vmp.Beta("p", A, B)
        with vmp.Plate("n", x.size):
            vmp.Bernoulli("x", p, observed=x)
    elbo = _fit(model)
    assert p.parameters["alpha"] == pytest.approx(A + x.sum())
    assert p.parameters["beta"] == pytest.approx(B + (1 - x).sum())
    assert elbo == pytest.approx(_sequential_log_evidence(x, np.ones_like(x), A, B), rel=1e-12)
    assert p.mean == pytest.approx(stats.beta(A + x.sum(), B + (1 - x).sum()).mean())


def test_beta_binomial_posterior_and_evidence_with_per_element_trials():
    n = np.array([3, 0, 10, 7, 1])
    x = np.array([1, 0, 9, 2, 1])
    with vmp.Model("m") as model:
        p = vmp.Beta("p", A, B)
        with vmp.Plate("n", x.size):
            vmp.Binomial("x", n, p, observed=x)
    elbo = _fit(model)
    assert p.parameters["alpha"] == pytest.approx(A + x.sum())
    assert p.parameters["beta"] == pytest.approx(B + (n - x).sum())
    assert elbo == pytest.approx(_sequential_log_evidence(x, n, A, B), rel=1e-12)


def test_one_beta_per_element_gives_scipys_betabinom():
    a, b = np.array([0.5, 2.0, 3.0, 1.0]), np.array([1.0, 0.7, 4.0, 1.0])
    n, x = np.array([4, 6, 1, 12]), np.array([4, 0, 1, 5])
    with vmp.Model("m") as model:
        with vmp.Plate("n", 4):
            p = vmp.Beta("p", a, b)
            vmp.Binomial("x", n, p, observed=x)
    assert _fit(model) == pytest.approx(stats.betabinom.logpmf(x, n, a, b).sum(), rel=1e-12)
    np.testing.assert_allclose(p.mean, stats.beta(a + x, b + n - x).mean())


def test_constant_probability_gives_scipys_binom_and_bernoulli():
    n, x, q = np.array([4, 6, 1]), np.array([1, 6, 0]), np.array([0.2, 0.9, 0.5])
    with vmp.Model("m") as model:
        with vmp.Plate("n", 3):
            vmp.Binomial("x", n, q, observed=x)
            vmp.Bernoulli("y", q, observed=[1, 0, 1])
    expected = stats.binom.logpmf(x, n, q).sum() + stats.bernoulli.logpmf([1, 0, 1], q).sum()
    assert model.fit(iterations=1).elbo[-1] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("node", ["Bernoulli", "Binomial"])
def test_integer_weights_equal_repeated_data_and_a_mask_drops_entries(node):
    n = np.array([1, 1, 1, 1]) if node == "Bernoulli" else np.array([3, 5, 2, 8])
    x = np.array([1, 0, 1, 1]) if node == "Bernoulli" else np.array([2, 5, 0, 3])
    w = np.array([2, 1, 3, 0])
    mask = np.array([True, True, False, True])

    def build(xs, ns, **kw):
        with vmp.Model("m") as model:
            p = vmp.Beta("p", A, B)
            with vmp.Plate("n", len(xs)):
                if node == "Bernoulli":
                    vmp.Bernoulli("x", p, observed=xs, **kw)
                else:
                    vmp.Binomial("x", ns, p, observed=xs, **kw)
        return _fit(model), p.parameters

    repeated = np.repeat(np.arange(4), w)
    elbo_w, post_w = build(x, n, weights=w)
    assert elbo_w == pytest.approx(_sequential_log_evidence(x[repeated], n[repeated], A, B), rel=1e-12)
    assert post_w["alpha"] == pytest.approx(A + (w * x).sum())
    keep = mask.nonzero()[0]
    elbo_m, post_m = build(x, n, mask=mask)
    assert elbo_m == pytest.approx(_sequential_log_evidence(x[keep], n[keep], A, B), rel=1e-12)
    assert post_m["beta"] == pytest.approx(B + (n - x)[keep].sum())


def _mixture(kind):
    rng = np.random.default_rng(4)
    k, d, m = 2, 5, 40
    truth = np.array([[0.9, 0.8, 0.1, 0.2, 0.5], [0.1, 0.3, 0.9, 0.7, 0.5]])
    z = rng.integers(0, k, size=m)
    trials = np.ones((m, d), int) if kind == "Bernoulli" else rng.integers(0, 9, size=(m, d))
    x = rng.binomial(trials, truth[z])
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.ones(k))
        with vmp.Plate("K", k), vmp.Plate("D", d):
            p = vmp.Beta("p", A, B)
        with vmp.Plate("N", m):
            zn = vmp.Categorical("z", pi)
            with vmp.Plate("D", d):
                if kind == "Bernoulli":
                    vmp.Bernoulli("x", p[zn, "K"], observed=x)
                else:
                    vmp.Binomial("x", trials, p[zn, "K"], observed=x)
    return model, x, trials, z


@pytest.mark.parametrize("kind", ["Bernoulli", "Binomial"])
def test_gated_mixture_reaches_the_mean_field_fixed_point(kind):
    model, x, n, z = _mixture(kind)
    res = model.fit(iterations=1000, tol=0.0, seed=1)
    assert np.all(np.diff(res.elbo) >= -1e-9 * np.abs(res.elbo[1:]))
    r = model["z"].mean
    pnat = model["p"].parameters
    # q(p_kd) = Beta(a + sum_n r_nk x_nd, b + sum_n r_nk (n_nd - x_nd))
    np.testing.assert_allclose(pnat["alpha"], A + r.T @ x, rtol=1e-6)
    np.testing.assert_allclose(pnat["beta"], B + r.T @ (n - x), rtol=1e-6)
    # q(z_n) prop. to exp(E[log pi_k] + sum_d x E[log p_kd] + (n - x) E[log(1 - p_kd)])
    elog_p = special.digamma(pnat["alpha"]) - special.digamma(pnat["alpha"] + pnat["beta"])
    elog_q = special.digamma(pnat["beta"]) - special.digamma(pnat["alpha"] + pnat["beta"])
    alpha = model["pi"].parameters["alpha"]
    logits = special.digamma(alpha) - special.digamma(alpha.sum()) + x @ elog_p.T + (n - x) @ elog_q.T
    np.testing.assert_allclose(r, special.softmax(logits, axis=1), rtol=1e-6, atol=1e-9)
    found = r.argmax(1)
    assert max(np.mean(found == z), np.mean(found != z)) > 0.9


def _declare(build):
    with vmp.Model("m"), vmp.Plate("n", 3):
        build()


@pytest.mark.parametrize("build,words", [
    (lambda: vmp.Beta("bad", 0.0, 1.0), "alpha must be positive"),
    (lambda: vmp.Beta("bad", 1.0, [1.0, -2.0, 1.0]), "beta must be positive"),
    (lambda: vmp.Bernoulli("bad", 1.0, observed=[0, 1, 1]), "probability must be in (0, 1)"),
    (lambda: vmp.Binomial("bad", [2, 3, 4], -0.1, observed=[0, 1, 1]), "probability must be in (0, 1)"),
    (lambda: vmp.Binomial("bad", [2, 3.5, 4], 0.5, observed=[0, 1, 1]), "trials must be non-negative integers"),
    (lambda: vmp.Binomial("bad", [2, -3, 4], 0.5, observed=[0, 0, 1]), "trials must be non-negative integers"),
], ids=["beta-alpha", "beta-beta", "bernoulli-p", "binomial-p", "binomial-trials-fraction",
        "binomial-trials-negative"])
def test_hyperparameter_errors_name_the_node(build, words):
    with pytest.raises(vmp.HyperparameterError, match="node 'bad'") as info:
        _declare(build)
    assert words in str(info.value)


@pytest.mark.parametrize("build,words", [
    (lambda: vmp.Bernoulli("bad", 0.5, observed=[0, 2, 1]), "integers in [0, 1]"),
    (lambda: vmp.Bernoulli("bad", 0.5, observed=[0, 0.5, 1]), "integers in [0, 1]"),
    (lambda: vmp.Binomial("bad", [2, 3, 4], 0.5, observed=[0, 4, 1]), "integers in [0, trials]"),
    (lambda: vmp.Binomial("bad", [2, 3, 4], 0.5, observed=[0, np.nan, 1]), "NaN"),
], ids=["bernoulli-2", "bernoulli-half", "binomial-above-trials", "binomial-nan"])
def test_data_errors_name_the_node(build, words):
    with pytest.raises(vmp.DataError, match="node 'bad'") as info:
        _declare(build)
    assert words in str(info.value)


def test_a_binomial_must_be_observed_and_its_parents_conjugate():
    with pytest.raises(vmp.GraphError, match="node 'b'.*must be observed"):
        _declare(lambda: vmp.Binomial("b", [1, 2, 3], 0.5))
    with vmp.Model("m"), pytest.raises(vmp.ConjugacyError, match="node 'x'.*probability <- Beta"):
        g = vmp.Gamma("g", 1.0, 1.0)
        vmp.Bernoulli("x", g, observed=1)
    with vmp.Model("m"), pytest.raises(vmp.ConjugacyError, match="node 'x'.*trials must be a constant"):
        p = vmp.Beta("p", 1.0, 1.0)
        vmp.Binomial("x", p, 0.5, observed=1)


def test_the_builders_give_one_exact_beta_per_group():
    import vmp.models

    x = np.array([1, 0, 1, 1, 0, 0, 1])
    g = np.array([0, 0, 1, 1, 1, 2, 2])
    model = vmp.models.beta_bernoulli(x, prior=(A, B), groups=g)
    elbo = _fit(model)
    expected = sum(_sequential_log_evidence(x[g == j], np.ones(np.sum(g == j)), A, B) for j in range(3))
    assert elbo == pytest.approx(expected, rel=1e-12)
    n = np.array([5, 2, 9, 4, 1, 3, 3])
    model = vmp.models.beta_binomial(x * 2, n, prior=(A, B))
    assert _fit(model) == pytest.approx(_sequential_log_evidence(x * 2, n, A, B), rel=1e-12)
    np.testing.assert_allclose(model["p"].mean, (A + 2 * x.sum()) / (A + B + n.sum()))
    with pytest.raises(vmp.HyperparameterError, match="beta_binomial: a must be a positive number"):
        vmp.models.beta_binomial(x, n, prior=(0.0, 1.0))
    with pytest.raises(vmp.DataError, match="node 'x'.*integers in"):
        vmp.models.beta_bernoulli(x + 1)


def test_a_binomial_model_pickles_with_its_trials():
    import copy
    import pickle

    n, x = np.array([3, 4, 5]), np.array([1, 2, 3])
    with vmp.Model("m") as model:
        p = vmp.Beta("p", A, B)
        with vmp.Plate("n", 3):
            vmp.Binomial("x", n, p, observed=x)
    elbo = _fit(model)
    for again in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        np.testing.assert_array_equal(again["x"].family.trials, n)
        assert _fit(again) == pytest.approx(elbo, rel=1e-14)


def test_with_mean_and_perturb_keep_the_domain():
    from vmp.families import Bernoulli, Beta

    eta = Beta.natural_from(np.array([1.0, 4.0]), np.array([3.0, 2.0]))
    moved = Beta.with_mean(eta, np.array([0.9, 0.2]))
    np.testing.assert_allclose(Beta.mean(moved), [0.9, 0.2])
    np.testing.assert_allclose(sum(moved), sum(eta))  # alpha + beta kept
    assert Beta.valid(Beta.perturb(eta, np.random.default_rng(0))).all()
    np.testing.assert_allclose(Bernoulli.mean(Bernoulli.with_mean((np.zeros(2),), np.array([0.25, 0.6]))), [0.25, 0.6])
