"""Every ``vmp.models`` builder documents its model: a docstring with its equations that names
each node the builder declares (``help(vmp.models.lda)`` tells a user what to read from a fit).

Each builder is built on small data in each of its variants (options that add or remove nodes),
and every node of the model must appear in the docstring as ````name````."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import vmp.models as models

RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 3))
Y = RNG.normal(size=12)
PAIRS = (np.array([0, 1, 2, 0, 1]), np.array([0, 1, 2, 2, 0]))

VARIANTS = {
    "beta_bernoulli": [((np.array([0, 1, 1, 0]),), {}), ((np.array([0, 1, 1, 0]),), {"groups": [0, 1, 0, 1]})],
    "beta_binomial": [((np.array([1, 2, 0]), 3), {})],
    "factor_analysis": [((X, 2), {})],
    "factorial_mixture": [((X, 2), {}), ((X, 2), {"pi": None, "noise_precision": None})],
    "gaussian_mixture": [((X, 2), {}), ((X, 2), {"covariance": "factorized", "weights": "dirichlet"}),
                         ((X, 2), {"covariance": "diag"})],
    "hierarchical_logistic_regression": [((X, (Y > 0).astype(float), np.arange(12) % 3), {})],
    "hmm": [(([X[:5, :2], X[5:, :2]], 2), {}), (([X[:5, :2], X[5:, :2]], 2), {"covariance": "joint"}),
            (([np.array([0, 1, 2]), np.array([1, 0])], 2), {"emission": "categorical"}),
            (([np.array([0, 1, 2]), np.array([1, 0])], 2), {"emission": "poisson"})],
    "linear_dynamical_system": [((X, 2), {})],
    "local_level": [((Y,), {})],
    "lda": [((np.array([0, 0, 1]), np.array([0, 1, 2]), np.array([1.0, 2.0, 1.0]), 2), {})],
    "logistic_regression": [((X, (Y > 0).astype(float)), {}), ((X, (Y > 0).astype(float)), {"ard": True})],
    "linear_regression": [((X, Y), {}), ((X, Y), {"ard": True}), ((X, Y), {"noise_precision": 1.0})],
    "matrix_factorization": [((*PAIRS, np.ones(5), 2), {}), ((*PAIRS, np.ones(5), 2), {"factorized": True}),
                             ((*PAIRS, np.ones(5), 2), {"biases": True})],
    "multiclass_logistic_regression": [((X, np.arange(12) % 3), {})],
    "mixture_of_regressions": [((X, Y, 2), {})],
    "multinomial_mixture": [((np.abs(X).round() + 1, 2), {})],
    "negative_binomial_regression": [((X, np.arange(12) % 4, 2.0), {})],
    "poisson_factorization": [((*PAIRS, np.ones(5), 2), {}),
                              ((*PAIRS, np.ones(5), 2), {"activity": None, "popularity": None})],
    "robust_regression": [((X, Y), {})],
    "switching_lds": [((X, 2, 2), {})],
}


def builders() -> dict:
    return {name: f for name, f in vars(models).items()
            if inspect.isfunction(f) and not name.startswith("_") and f.__module__.startswith(models.__name__)}


def test_every_builder_has_variants_here():
    assert set(builders()) == set(VARIANTS)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_docstring_gives_the_equations_and_names_every_node(name):
    build = builders()[name]
    doc = inspect.getdoc(build) or ""
    assert "~" in doc, f"{name}'s docstring gives no distribution (x ~ ...)"
    assert "Nodes:" in doc, f"{name}'s docstring has no 'Nodes:' list"
    for args, options in VARIANTS[name]:
        model = build(*args, **options)
        missing = [n for n in model.nodes if f"``{n}``" not in doc]
        assert not missing, f"{name}({options}): nodes {missing} are not named in the docstring"
