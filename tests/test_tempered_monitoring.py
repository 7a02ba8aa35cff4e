"""The ElboMonitor of a tempered fit watches the objective the steps ascend (the bound with the
data plate's factors weighted 1/T, plus global tempering's own terms), and compares only values
at one temperature of annealing or local tempering: no false divergence while the temperature
moves, a divergence still warned."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import vmp
from tests.helpers import factorized_mixture
from tests.test_policies import _jacobi_small


def _mixture(n=300, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    return factorized_mixture(centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2)), 3)


def _divergence_warnings(fit) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fit()
    return res, [str(w.message) for w in caught if issubclass(w.category, vmp.DivergenceWarning)]


POLICIES = {
    # the bound at T = 1 falls for several evaluations as q broadens at T = 6 (it warned 11 times)
    "annealing up": lambda: vmp.Annealing(lambda t: 1.0 if t <= 30 else 6.0),
    # q(T) settles at T = 1.5, where the bound at T = 1 is not what the steps ascend (warned once)
    "global": lambda: vmp.Tempering([1.0, 1.2, 1.5], log_partition=[0.0, 216.0, 433.0]),
    # every minibatch moves its points' r_n (warned once)
    "local": lambda: vmp.LocalTempering([1.0, 1.5, 2.0, 3.0]),
}


@pytest.mark.parametrize("name", POLICIES)
def test_a_converging_tempered_fit_gives_no_divergence_warning(name):
    res, warned = _divergence_warnings(lambda: _mixture().fit(
        method="stochastic", subsample=vmp.Minibatch("data", 10), policies=[POLICIES[name]()], iterations=120,
        evaluate_every=2, seed=3, progress=False))
    assert warned == []
    assert not res.diverged and res.elbo[-1] > res.elbo[0]


@pytest.mark.parametrize("policy", [vmp.Annealing([2.0]), vmp.Tempering([1.0, 2.0], log_partition=[0.0, 100.0])],
                         ids=["annealing", "global"])
def test_a_diverging_tempered_fit_still_warns(policy):
    """Option (b)'s Jacobi step over 40 summed scalars (tests/test_policies.py) under a policy."""
    res, warned = _divergence_warnings(lambda: _jacobi_small().fit(
        method="stochastic", subsample=vmp.Minibatch("data", 100), update="global", init="prior",
        step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=6, evaluate_every=1, policies=[policy],
        progress=False))
    assert res.elbo[-1] < 1e3 * res.elbo[0]
    assert warned and "far below its best" in warned[0]
