"""Each builder of ``vmp.models`` fitted the way a new user would (the builder's defaults,
``model.fit()`` with no options) to data simulated from the builder's own generative story with
known parameters: the parameters come back (components matched by the Hungarian algorithm,
scipy.optimize.linear_sum_assignment) and the fit stops for the right reason."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import vmp
from vmp import models

CONVERGED = "relative ELBO change below"


def matched(estimate: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """The permutation p of estimate's rows that best matches truth's rows (estimate[p] ~ truth)."""
    cost = ((estimate[:, None, :] - truth[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return rows[np.argsort(cols)]


def assert_converged(result) -> None:
    assert result.converged and result.message.startswith(CONVERGED), result
    assert np.all(np.diff(result.elbo) >= -1e-6 * np.abs(result.elbo[1:])), "batch VMP lowered the bound"


def factor_analysis_data(seed: int, n: int = 300, d: int = 8, k: int = 2):
    rng = np.random.default_rng(seed)
    w, mu = 2 * rng.normal(size=(d, k)), rng.normal(size=d)
    return rng.normal(size=(n, k)) @ w.T + mu + 0.5 * rng.normal(size=(n, d)), w, mu


def test_factor_analysis_minibatch_fit_starts():
    """A Minibatch fit's latent z is local (no q over the whole plate): starting W from its prior
    must not read z's q (it raised KeyError 'z')."""
    y, w, _ = factor_analysis_data(0)
    model = models.factor_analysis(y, 3)
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50), iterations=30, seed=0)
    assert np.isfinite(result.final_elbo) and not result.diverged
