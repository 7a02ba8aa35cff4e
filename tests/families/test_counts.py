"""Poisson, Exponential and Multinomial against exact conjugate answers.

With one hidden node and its conjugate children, one VMP sweep gives the exact posterior and the
bound equals the log evidence. References: the evidence as a product of posterior predictives
from scipy (negative binomial for Gamma-Poisson, Lomax for Gamma-Exponential,
scipy.stats.dirichlet_multinomial for Dirichlet-Multinomial), the posteriors in closed form.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp

Y = np.array([0, 3, 1, 7, 2, 0])
T = np.array([1.0, 2.0, 0.5, 3.0, 1.0, 0.2])


def _fit(model):
    return model.fit(iterations=3, tol=0.0, seed=0)


def _nbinom_evidence(a, b, y, t):
    """log p(y) = sum_n log NB(y_n | a_n, b_n / (b_n + t_n)) with (a_n, b_n) the posterior after
    y_1..y_{n-1} (the predictive of a Gamma-Poisson is negative binomial)."""
    total = 0.0
    for yn, tn in zip(y, t):
        total += stats.nbinom(a, b / (b + tn)).logpmf(yn)
        a, b = a + yn, b + tn
    return total


@pytest.mark.parametrize("exposure", [None, T], ids=["plain", "exposure"])
def test_gamma_poisson_posterior_and_evidence(exposure):
    a, b = 2.0, 0.5
    with vmp.Model("m") as model:
        lam = vmp.Gamma("lam", a, b)
        with vmp.Plate("n", Y.size):
            vmp.Poisson("y", lam, exposure=exposure, observed=Y)
    res = _fit(model)
    t = np.ones(Y.size) if exposure is None else T
    assert lam.parameters["shape"] == pytest.approx(a + Y.sum(), rel=1e-12)
    assert lam.parameters["rate"] == pytest.approx(b + t.sum(), rel=1e-12)
    assert res.elbo[-1] == pytest.approx(_nbinom_evidence(a, b, Y, t), rel=1e-10)


def test_gamma_poisson_weights_are_repeated_data_and_masks_drop_data():
    a, b = 1.5, 1.0
    w = np.array([2, 1, 3, 1, 1, 2])
    mask = np.array([True, True, False, True, False, True])
    with vmp.Model("m") as model:
        lam = vmp.Gamma("lam", a, b)
        with vmp.Plate("n", Y.size):
            vmp.Poisson("y", 2.0 * lam, observed=np.where(mask, Y, -5), mask=mask, weights=w)
    res = _fit(model)
    keep = np.repeat(Y[mask], w[mask])
    assert res.elbo[-1] == pytest.approx(_nbinom_evidence(a, b, keep, np.full(keep.size, 2.0)), rel=1e-10)
    assert lam.parameters["shape"] == pytest.approx(a + keep.sum(), rel=1e-12)


def test_gamma_exponential_posterior_and_evidence():
    a, b = 3.0, 2.0
    x = np.array([0.3, 1.7, 0.05, 2.2])
    with vmp.Model("m") as model:
        lam = vmp.Gamma("lam", a, b)
        with vmp.Plate("n", x.size):
            vmp.Exponential("x", lam, observed=x)
    res = _fit(model)
    assert lam.parameters["shape"] == pytest.approx(a + x.size, rel=1e-12)
    assert lam.parameters["rate"] == pytest.approx(b + x.sum(), rel=1e-12)
    exact, (an, bn) = 0.0, (a, b)
    for xn in x:  # the predictive of a Gamma-Exponential is Lomax(a, scale b)
        exact += stats.lomax(an, scale=bn).logpdf(xn)
        an, bn = an + 1, bn + xn
    assert res.elbo[-1] == pytest.approx(exact, rel=1e-10)


def test_a_latent_exponential_without_data_keeps_its_prior():
    with vmp.Model("m") as model:
        with vmp.Plate("n", 3):
            x = vmp.Exponential("x", [0.5, 1.0, 4.0])
    res = _fit(model)
    np.testing.assert_allclose(x.mean, [2.0, 1.0, 0.25], rtol=1e-12)
    assert res.elbo[-1] == pytest.approx(0.0, abs=1e-12)


def test_dirichlet_multinomial_posterior_and_evidence():
    alpha = np.array([0.5, 2.0, 1.0])
    x = np.array([[3, 0, 2], [1, 1, 1], [0, 0, 4], [2, 5, 0]])
    with vmp.Model("m") as model:
        p = vmp.Dirichlet("p", alpha)
        with vmp.Plate("n", len(x)):
            vmp.Multinomial("x", p, observed=x)
    res = _fit(model)
    np.testing.assert_allclose(p.parameters["alpha"], alpha + x.sum(0), rtol=1e-12)
    exact, a = 0.0, alpha.copy()
    for xn in x:
        exact += stats.dirichlet_multinomial(a, xn.sum()).logpmf(xn)
        a = a + xn
    assert res.elbo[-1] == pytest.approx(exact, rel=1e-10)


def test_poisson_mixture_finds_two_rates():
    rng = np.random.default_rng(1)
    truth = np.where(rng.uniform(size=300) < 0.4, 2.0, 15.0)
    y = rng.poisson(truth)
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", 1.0, 0.1)
        with vmp.Plate("n", y.size):
            z = vmp.Categorical("z", pi)
            vmp.Poisson("y", lam[z], observed=y)
    start = np.random.default_rng(0).dirichlet(np.ones(2), size=y.size)  # Gamma components have no perturb
    model.fit(iterations=100, seed=3, init={"z": start})
    np.testing.assert_allclose(np.sort(lam.mean), [2.0, 15.0], rtol=0.15)


@pytest.mark.parametrize("build,match", [
    (lambda: vmp.Poisson("bad", -1.0, observed=[1, 2]), "'bad'.*rate"),
    (lambda: vmp.Poisson("bad", 1.0, exposure=[1.0, 0.0], observed=[1, 2]), "'bad'.*exposure"),
    (lambda: vmp.Exponential("bad", [1.0, -2.0], observed=[1.0, 2.0]), "'bad'.*rate"),
    (lambda: vmp.Multinomial("bad", [0.5, 0.6], observed=[[1, 2], [0, 1]]), "'bad'.*probabilities"),
], ids=["poisson-rate", "poisson-exposure", "exponential-rate", "multinomial-p"])
def test_bad_hyperparameters_name_the_node(build, match):
    with vmp.Model("m"), vmp.Plate("n", 2), pytest.raises(vmp.HyperparameterError, match=match):
        build()


@pytest.mark.parametrize("build", [
    lambda: vmp.Poisson("bad", 1.0, observed=[1.5, 2]),
    lambda: vmp.Poisson("bad", 1.0, observed=[-1, 2]),
    lambda: vmp.Exponential("bad", 1.0, observed=[0.0, 2.0]),
    lambda: vmp.Multinomial("bad", [0.5, 0.5], observed=[[1, -2], [0, 1]]),
    lambda: vmp.Multinomial("bad", [0.5, 0.5], observed=[[1, 0.5], [0, 1]]),
], ids=["poisson-fraction", "poisson-negative", "exponential-zero", "multinomial-negative", "multinomial-fraction"])
def test_data_outside_the_support_name_the_node(build):
    with vmp.Model("m"), vmp.Plate("n", 2), pytest.raises(vmp.DataError, match="'bad'"):
        build()


def test_poisson_and_multinomial_must_be_observed():
    with vmp.Model("m"), pytest.raises(vmp.GraphError, match="'y'.*observed"):
        vmp.Poisson("y", 1.0)
    with vmp.Model("m"), pytest.raises(vmp.GraphError, match="'x'.*observed"):
        vmp.Multinomial("x", [0.5, 0.5])


def test_exponential_and_multinomial_weights_repeat_and_masks_drop_data():
    x = np.array([0.3, 1.7, 0.05, 2.2])
    w, mask = np.array([2.0, 1.0, 1.0, 3.0]), np.array([True, False, True, True])
    counts = np.array([[3, 0, 2], [1, 1, 1], [0, 0, 4], [2, 5, 0]])
    with vmp.Model("weighted") as weighted:
        lam = vmp.Gamma("lam", 3.0, 2.0)
        p = vmp.Dirichlet("p", np.ones(3))
        with vmp.Plate("n", 4):
            vmp.Exponential("x", lam, observed=np.where(mask, x, np.nan), mask=mask, weights=w)
            vmp.Multinomial("c", p, observed=np.where(mask[:, None], counts, -1), mask=mask, weights=w)
    keep = np.repeat(np.arange(4)[mask], w[mask].astype(int))
    with vmp.Model("repeated") as repeated:
        lam2 = vmp.Gamma("lam", 3.0, 2.0)
        p2 = vmp.Dirichlet("p", np.ones(3))
        with vmp.Plate("n", keep.size):
            vmp.Exponential("x", lam2, observed=x[keep])
            vmp.Multinomial("c", p2, observed=counts[keep])
    assert _fit(weighted).elbo[-1] == pytest.approx(_fit(repeated).elbo[-1], rel=1e-12)
    np.testing.assert_allclose(p.parameters["alpha"], p2.parameters["alpha"], rtol=1e-12)
    assert lam.parameters["rate"] == pytest.approx(lam2.parameters["rate"], rel=1e-12)
