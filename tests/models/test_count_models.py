"""models.poisson_factorization and models.multinomial_mixture end to end: the split of Poisson
factorization into non-zero entries and weighted zeros gives the bound of the dense model at the
same q; recovery of known structure from synthetic data; bad inputs."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import vmp
from models import multinomial_mixture, poisson_factorization
from tests.helpers import randomize
from vmp.inference.engine import Engine

from .test_models import assert_elbo_nondecreasing


def _counts(n_users=30, n_items=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.gamma(0.5, 2.0, size=(n_users, k))
    beta = rng.gamma(0.5, 2.0, size=(n_items, k))
    rate = theta @ beta.T
    return rng.poisson(rate), rate


def _dense(y, k, observed):
    """The same model with one Poisson node over every pair (the reference)."""
    with vmp.Model("dense") as model:
        with vmp.Plate("users", y.shape[0]):
            xi = vmp.Gamma("xi", 0.3, 0.3)
        with vmp.Plate("items", y.shape[1]):
            eta = vmp.Gamma("eta", 0.3, 0.3)
        with vmp.Plate("users", y.shape[0]), vmp.Plate("factors", k):
            vmp.Gamma("theta", 0.3, xi)
        with vmp.Plate("items", y.shape[1]), vmp.Plate("factors", k):
            vmp.Gamma("beta", 0.3, eta)
        with vmp.Plate("users", y.shape[0]), vmp.Plate("items", y.shape[1]):
            vmp.Poisson("y", vmp.dot(model["theta"], model["beta"]), observed=y, weights=observed.astype(float))
    return model


def test_entries_and_weighted_zeros_give_the_dense_bound():
    y, _ = _counts(6, 7, seed=1)
    observed = np.random.default_rng(2).uniform(size=y.shape) < 0.8
    observed[y > 0] = True
    rows, cols = np.nonzero(y)
    split = poisson_factorization(rows, cols, y[rows, cols], 2, n_users=6, n_items=7, observed_pairs=observed)
    dense = _dense(y, 2, observed)
    randomize(dense, np.random.default_rng(3))
    split.compile()
    for name in ("xi", "eta", "theta", "beta"):
        split[name].set_natural(dense[name].natural)
    assert Engine(split).elbo(split.state, cached=False) == pytest.approx(
        Engine(dense).elbo(dense.state, cached=False), rel=1e-12)


def test_poisson_factorization_recovers_the_rates():
    y, rate = _counts()
    rows, cols = np.nonzero(y)
    model = poisson_factorization(rows, cols, y[rows, cols], 3, n_users=y.shape[0], n_items=y.shape[1])
    res = model.fit(iterations=300, tol=1e-7, seed=0)
    assert_elbo_nondecreasing(res.elbo)
    fitted = model["theta"].mean @ model["beta"].mean.T
    assert np.corrcoef(fitted.ravel(), rate.ravel())[0, 1] > 0.9
    assert fitted.sum() == pytest.approx(y.sum(), rel=0.05)  # the Poisson MLE matches total counts


def test_multinomial_mixture_recovers_clusters():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(12, 0.3), size=3)
    z = rng.integers(0, 3, size=150)
    x = np.stack([rng.multinomial(rng.integers(20, 60), p[k]) for k in z])
    model = multinomial_mixture(x, 3)
    res = model.fit(iterations=200, tol=1e-8, seed=0)
    assert_elbo_nondecreasing(res.elbo)
    assert adjusted_rand_score(z, model["z"].mean.argmax(1)) > 0.9


@pytest.mark.parametrize("build", [
    lambda: poisson_factorization([0, 1], [0, 1], [1, 0], 2),
    lambda: poisson_factorization([0, 1], [0, 1], [1, 2], 0),
    lambda: poisson_factorization([0, 1], [0, 1], [1, 2], 2, n_users=1),
    lambda: poisson_factorization([0, 1], [0, 1], [1, 2], 2, observed_pairs=np.zeros((2, 2), bool)),
    lambda: multinomial_mixture(np.ones(5), 2),
    lambda: multinomial_mixture(np.ones((4, 3)), 1),
    lambda: multinomial_mixture(-np.ones((4, 3)), 2),
])
def test_bad_inputs_raise_vmp_errors(build):
    with pytest.raises(vmp.VMPError):
        build()
