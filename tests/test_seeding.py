"""Mixture components seeded at data points by k-means++ in the model's divergence
(vmp/inference/seeding.py)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.special import digamma, gammaln

import vmp
from tests.helpers import factorized_mixture
from vmp import models
from vmp.inference.init import _expressions
from vmp.inference.seeding import log_likelihoods, own_log_likelihoods, seed_components, seedable
from vmp.inference.state import State
from vmp.graph.expressions import Gate
from vmp.graph.leaves import Context


def count_data(seed: int):
    """The recovery audit's mixture of multinomials (tests/test_models_recovery.py): 200 documents
    of 50 counts over 20 words from 3 profiles ~ Dir(0.5), weights (0.5, 0.3, 0.2)."""
    rng = np.random.default_rng(seed)
    profiles, weights = rng.dirichlet(np.full(20, 0.5), 3), np.array([0.5, 0.3, 0.2])
    z = rng.choice(3, 200, p=weights)
    return np.array([rng.multinomial(50, profiles[k]) for k in z]), profiles, weights, z


def matched(estimate, truth):
    rows, cols = linear_sum_assignment(((estimate[:, None, :] - truth[None, :, :]) ** 2).sum(-1))
    return rows[np.argsort(cols)]


# data seeds 0 and 1 x fit seeds 0-3: the Gamma(100, 0.01) pseudo-count start lost a component in
# four of these eight SVI fits, (0, 1), (0, 2), (1, 1), (1, 3), and in the batch fit (1, 1)
GRID = [(d, s) for d in (0, 1) for s in range(4)]


@pytest.mark.parametrize("method", ["stochastic", "batch"])
def test_multinomial_mixture_recovers_every_component_from_every_seed(method):
    for d, s in GRID:
        x, profiles, weights, _ = count_data(d)
        model = models.multinomial_mixture(x, 3)
        if method == "batch":
            model.fit(seed=s)
        else:
            model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50), iterations=100, seed=s)
        p = matched(model["p"].mean, profiles)
        assert np.abs(model["p"].mean[p] - profiles).sum(1).max() < 0.2, (d, s)
        assert np.abs(model["pi"].mean[p] - weights).max() < 0.1, (d, s)


def _prior_state(model):
    engine = vmp.inference.engine.Engine(model)
    state = State()
    for node in engine.hidden:
        state = state.updated({node.name: (m := engine.factors[node.name].messages(node, ctx=Context(state=state)),
                                           node.family.moments(m))})
    gate = next(e for _, e, _ in _expressions(engine) if isinstance(e, Gate))
    return engine, state, gate


def test_each_component_is_its_prior_updated_by_one_point_and_the_points_lie_in_distinct_clusters():
    """q(p_k) = Dir(beta + x_m) for k distinct rows m (closed form); the three seeds come from the
    three clusters for every generator seed tried."""
    x, _, _, z = count_data(0)
    model = models.multinomial_mixture(x, 3, beta=0.5)
    engine, state, gate = _prior_state(model)
    for s in range(10):
        alpha = seed_components(engine, state, np.random.default_rng(s), gate, model["x"]).natural["p"][0] + 1.0
        rows = [np.flatnonzero((x == a - 0.5).all(1)) for a in alpha]
        assert all(r.size >= 1 for r in rows), alpha
        assert sorted(set(z[r[0]] for r in rows)) == [0, 1, 2], s


def test_the_divergence_reads_the_expected_log_likelihoods_of_one_point_posteriors():
    """E_{q_m}[log p(x_n | p)] = sum_v x_nv (psi(beta + x_mv) - psi(V beta + n_m)) + log h(x_n) for
    q_m = Dir(beta + x_m), from digamma directly; so D(n, m) = E_{q_n}[.] - E_{q_m}[.] is 0 at
    m = n and positive elsewhere."""
    x, _, _, _ = count_data(3)
    model = models.multinomial_mixture(x, 3, beta=0.5)
    engine, state, gate = _prior_state(model)
    rows = np.arange(x.shape[0])

    def expected(m):
        a = x[m] + 0.5
        return x @ (digamma(a) - digamma(a.sum())) + gammaln(x.sum(1) + 1) - gammaln(x + 1).sum(1)

    seeds = np.array([7, 40, 41])
    got = log_likelihoods(engine, state, gate, model["x"], seeds, rows)
    assert np.allclose(got, np.stack([expected(m) for m in seeds], axis=1))
    own = own_log_likelihoods(engine, state, gate, model["x"], rows)
    assert np.allclose(own, [expected(n)[n] for n in rows])
    d = own[:, None] - got
    assert np.allclose(d[seeds, [0, 1, 2]], 0.0) and np.all(np.delete(d, seeds, axis=0) > 0)


def _bernoulli_mixture(x: np.ndarray, mask: np.ndarray | None = None):
    """Two components of bit vectors x (N x D), bits outside ``mask`` missing."""
    n, d = x.shape
    with vmp.Model("bm") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2), vmp.Plate("D", d):
            p = vmp.Beta("p", 1.0, 1.0)
        with vmp.Plate("N", n):
            zn = vmp.Categorical("z", pi)
            with vmp.Plate("D", d):
                vmp.Bernoulli("x", p[zn, "K"], observed=x if mask is None else np.where(mask, x, 5.0), mask=mask)
    return model


def _seedable(model):
    engine = vmp.inference.engine.Engine(model)
    return {e.node.name: seedable(e, child, top) for child, e, top in _expressions(engine) if isinstance(e, Gate)}


def test_which_gates_are_seeded_at_points():
    """Mixtures of counts and of bits are; LDA (a document's theta pools its tokens' choices), the
    HMM (a chain's steps are one variable) and the Gaussian mixture (k-means++ on the points) are not."""
    x, _, _, _ = count_data(0)
    assert _seedable(models.multinomial_mixture(x, 3)) == {"p": True}
    assert _seedable(_bernoulli_mixture(np.random.default_rng(0).binomial(1, 0.5, size=(60, 4)))) == {"p": True}
    assert _seedable(models.lda(np.array([0, 0, 1]), np.array([0, 2, 1]), np.array([1, 2, 1]), 2, n_words=3)) \
        == {"beta": False}
    assert not any(_seedable(factorized_mixture(np.random.default_rng(0).normal(size=(30, 2)), 2)).values())


def test_a_seed_with_missing_bits_adds_only_its_observed_bits():
    """q(p_k) = Beta(1 + x_md, 1 + 1 - x_md) where bit d of the seed m is observed, Beta(1, 1) where
    it is missing (the masked factor sends nothing)."""
    rng = np.random.default_rng(1)
    x = rng.binomial(1, 0.5, size=(40, 4)).astype(float)
    mask = rng.uniform(size=x.shape) > 0.3
    model = _bernoulli_mixture(x, mask)
    engine, state, gate = _prior_state(model)
    params = model["p"].family.parameters(seed_components(engine, state, np.random.default_rng(0), gate,
                                                          model["x"]).natural["p"])
    found = []
    for a, b in zip(params["alpha"], params["beta"]):
        rows = [m for m in range(40) if np.allclose(a, 1 + mask[m] * x[m]) and np.allclose(b, 1 + mask[m] * (1 - x[m]))]
        found.append(bool(rows))
    assert all(found)


def test_a_large_plate_is_seeded_from_seed_rows_points_and_recovers(monkeypatch):
    """Past SEED_ROWS points the seeds come from SEED_ROWS of them drawn at random; the seeds
    still land in the three clusters and batch VMP recovers the profiles."""
    from vmp.inference import seeding
    from vmp.inference.seeding import SEED_ROWS

    read = []
    own = seeding.own_log_likelihoods
    monkeypatch.setattr(seeding, "own_log_likelihoods", lambda *a: read.append(a[-1].size) or own(*a))

    rng = np.random.default_rng(5)
    profiles = rng.dirichlet(np.full(20, 0.5), 3)
    z = rng.choice(3, SEED_ROWS + 500, p=[0.5, 0.3, 0.2])
    x = np.array([rng.multinomial(50, profiles[k]) for k in z])
    model = models.multinomial_mixture(x, 3)
    engine, state, gate = _prior_state(model)
    alpha = seed_components(engine, state, np.random.default_rng(0), gate, model["x"]).natural["p"][0] + 0.5
    assert sorted(z[np.flatnonzero((x == a).all(1))[0]] for a in alpha) == [0, 1, 2]
    assert read == [SEED_ROWS]
    model.fit(seed=0)
    p = matched(model["p"].mean, profiles)
    assert np.abs(model["p"].mean[p] - profiles).sum(1).max() < 0.1
