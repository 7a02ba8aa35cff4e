"""Whole fits through the reference evaluator alone (``model.compile(strategies=())``) and
through the default one agree to 1e-12: batch fits (the bound at a node's optimum from its kept
messages, the data/latent split of a partially observed node, the prior's message added into a
kept sparse product's array), stochastic fits (Minibatch with its local steps, PerNode draws)
and coupled elements updated a slice at a time."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import vmp
from tests.reference_models import BUILDERS

FITS = {
    "gaussian_mixture_masked": dict(iterations=5, tol=0),
    "factor_analysis": dict(iterations=5, tol=0),
    "factorial_mixture": dict(iterations=5, tol=0),
    "hmm_missing": dict(iterations=5, tol=0),
    "matrix_factorization_large": dict(iterations=3, tol=0),
    "gaussian_mixture_large": dict(iterations=3, tol=0),
    "multinomial_mixture_large": dict(iterations=3, tol=0),
    "matrix_factorization_factorized": dict(iterations=4, tol=0),
    "poisson_factorization": dict(iterations=5, tol=0),
    "robust_regression": dict(iterations=5, tol=0),
    "lda": dict(method="stochastic", subsample=vmp.Minibatch("documents", 4), iterations=6, evaluate_every=2),
    "gaussian_mixture": dict(method="stochastic", subsample=vmp.PerNode(children=10), iterations=6,
                             evaluate_every=2),
}


def _fit(name, strategies):
    model = BUILDERS[name]()
    if strategies is not None:
        model.compile(strategies=strategies)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        result = model.fit(seed=0, progress=False, **FITS[name])
    return np.asarray(result.elbo, float), result.state.natural


@pytest.mark.parametrize("name", sorted(FITS))
def test_a_fit_through_the_reference_is_the_default_fit(name):
    elbo, natural = _fit(name, None)
    ref_elbo, ref_natural = _fit(name, ())
    np.testing.assert_allclose(elbo, ref_elbo, rtol=1e-12)
    assert natural.keys() == ref_natural.keys()
    for key in ref_natural:
        for a, b in zip(natural[key], ref_natural[key]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))),
                                       err_msg=key)
