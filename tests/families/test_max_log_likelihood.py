"""Family.max_log_likelihood, A*(u(x)) = sup_eta <eta, u(x)> - A(eta): scipy's log-pmf at the
point's own maximum-likelihood parameters minus log h(x), and no random parameter does better."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vmp.families import Bernoulli, Categorical, Multinomial

RNG = np.random.default_rng(0)
COUNTS = np.array([[3, 0, 5, 2], [0, 0, 7, 0], [1, 1, 1, 1]])
LABELS = np.array([0, 2, 1, 2])
BITS = np.array([0.0, 1.0, 1.0, 0.0])


def _cases():
    yield "Multinomial", Multinomial.max_log_likelihood(COUNTS, (4,)) + Multinomial.log_base_measure(COUNTS, (4,)), \
        lambda x, q: stats.multinomial(x.sum(), q).logpmf(x), COUNTS, lambda x: x / x.sum()
    yield "Categorical", Categorical.max_log_likelihood(LABELS, (3,)), \
        lambda x, q: np.log(q[x]), LABELS, lambda x: np.eye(3)[x]
    yield "Bernoulli", Bernoulli.max_log_likelihood(BITS), \
        lambda x, q: stats.bernoulli(q).logpmf(x), BITS, lambda x: x


@pytest.mark.parametrize("name, got, logpmf, points, mle", list(_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_max_log_likelihood_is_the_log_likelihood_at_the_point_s_own_maximum(name, got, logpmf, points, mle):
    expected = np.array([logpmf(x, mle(x)) for x in points])
    assert np.allclose(got, expected)
    for x, best in zip(points, got):
        for _ in range(20):
            q = RNG.dirichlet(np.ones(4 if name == "Multinomial" else 3)) if name != "Bernoulli" else RNG.uniform()
            assert logpmf(x, q) <= best + 1e-12


def test_families_without_it_say_none():
    from vmp.families import Gaussian

    assert Gaussian.max_log_likelihood(np.zeros((2, 3)), (3,)) is None
