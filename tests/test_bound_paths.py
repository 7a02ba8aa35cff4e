"""The bound a batch fit records after each sweep (through the kept messages, the memos and, after
a node's coordinate update, its optimum: ``Engine._at_optimum``) against the same bound summed
term by term from nothing kept (``Engine.elbo(cached=False)``), on every rule case and on the
ready-made models, with and without an annealing policy whose weights change between sweeps."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.models import factor_analysis, gaussian_mixture, hmm, lda, linear_regression, matrix_factorization

from .rule_cases import CASES


def _compare(model, **options):
    pairs = []

    def check(t, fit):
        pairs.append((fit.recorder.elbo[-1], fit.engine.elbo(fit.state, cached=False)))

    model.fit(iterations=options.pop("iterations", 4), tol=0, seed=0, progress=False, callback=check, **options)
    kept, fresh = np.array(pairs).T
    assert len(pairs) > 0 and np.all(np.isfinite(fresh))
    np.testing.assert_allclose(kept, fresh, rtol=1e-11, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_recorded_bound_is_the_bound_summed_afresh(name):
    model, _ = CASES[name]()
    _compare(model)


def _models():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.normal(-2.0, 1.0, (60, 2)), rng.normal(2.0, 1.0, (60, 2))])
    users, items = np.arange(600) % 60, rng.permutation(np.arange(600) % 40)  # every one rated
    ratings = rng.normal(3.0, 1.0, 600)
    d, w = np.repeat(np.arange(6), 5), rng.integers(0, 8, size=30)
    return {
        "mixture": lambda: gaussian_mixture(x, 3),
        "mf structured": lambda: matrix_factorization(users, items, ratings, n_factors=3),
        "mf factorized": lambda: matrix_factorization(users, items, ratings, n_factors=3, factorized=True),
        "mf biases": lambda: matrix_factorization(users, items, ratings, n_factors=2, biases=True),
        "factor analysis": lambda: factor_analysis(rng.normal(size=(40, 5)), 2),
        "linear regression": lambda: linear_regression(rng.normal(size=(30, 3)), rng.normal(size=30)),
        "hmm": lambda: hmm(rng.normal(size=(3, 12)), 2),
        "lda": lambda: lda(d, w, np.ones(30), 3, n_words=8),
    }


@pytest.mark.parametrize("name", sorted(_models()))
@pytest.mark.parametrize("annealed", [False, True])
def test_a_ready_made_models_recorded_bound_is_the_bound_summed_afresh(name, annealed):
    options = {"policies": [vmp.Annealing.linear(3.0, 3)], "iterations": 5} if annealed else {}
    _compare(_models()[name](), **options)
