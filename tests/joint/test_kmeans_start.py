"""Components of a family that clusters (GaussianWishart, NormalGamma) start from k-means
responsibilities (vmp/inference/init.py, kmeans_components): Lloyd's algorithm against
scikit-learn's KMeans from the same centers, and the initial q against the closed-form M step
from the k-means partition (a Normal-Wishart posterior per cluster, stick-breaking counts, a
chain's transition counts)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.inference.engine import Engine
from vmp.inference.init import initialize, kmeanspp, lloyd

cluster = pytest.importorskip("sklearn.cluster")

CENTERS = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0]])


def _blobs(n=90, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), n // 3)
    return CENTERS[labels] + rng.normal(size=(n, 2)), labels


def test_lloyd_is_scikit_learns_kmeans_from_the_same_centers():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 3)) + 3.0 * rng.integers(3, size=(300, 1))
    centers = kmeanspp(x, 4, rng)
    labels, inertia, means = lloyd(x, centers)
    theirs = cluster.KMeans(4, init=centers, n_init=1, algorithm="lloyd", tol=0.0, max_iter=300).fit(x)
    np.testing.assert_array_equal(labels, theirs.labels_)
    np.testing.assert_allclose(means, theirs.cluster_centers_, rtol=1e-12)
    np.testing.assert_allclose(inertia, theirs.inertia_, rtol=1e-9)


def _posterior(x, m0, beta0, nu0, w0):
    """The Normal-Wishart posterior of points x (Bishop PRML eqs. (10.60)-(10.63), hard assignment)."""
    n, xbar = len(x), x.mean(0)
    beta, nu = beta0 + n, nu0 + n
    m = (beta0 * m0 + n * xbar) / beta
    w_inv = np.linalg.inv(w0) + (x - xbar).T @ (x - xbar) + beta0 * n / beta * np.outer(xbar - m0, xbar - m0)
    return m, beta, nu, w_inv


def test_a_mixture_starts_from_the_m_step_of_its_kmeans_partition():
    x, labels = _blobs()
    model = vmp.models.gaussian_mixture(x, 3)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    theta = model["theta"].family.parameters(state.natural["theta"])
    f = model["theta"].factor
    found = np.argmin(np.linalg.norm(theta["mean"][:, None] - CENTERS[None], axis=-1), axis=0)
    assert sorted(found) == [0, 1, 2]
    counts = np.zeros(3)
    for cluster_id, k in enumerate(found):
        m, beta, nu, w_inv = _posterior(x[labels == cluster_id], f.mean[k], f.beta[k], f.dof[k], f.scale[k])
        np.testing.assert_allclose(theta["mean"][k], m, rtol=1e-10)
        np.testing.assert_allclose([theta["beta"][k], theta["dof"][k]], [beta, nu], rtol=1e-12)
        np.testing.assert_allclose(np.linalg.inv(theta["scale"][k]), w_inv, rtol=1e-10)
        counts[k] = np.sum(labels == cluster_id)
    sticks = model["pi"].family.parameters(state.natural["pi"])
    alpha = 1.0 / 3
    np.testing.assert_allclose(sticks["alpha"], 1.0 + counts, rtol=1e-12)
    np.testing.assert_allclose(sticks["beta"], alpha + counts[::-1].cumsum()[::-1] - counts, rtol=1e-12)
    r = state.moments["z"][0]  # the E step from those components: the blobs, surely
    np.testing.assert_array_equal(r.argmax(-1), found[labels])


def test_a_joint_hmm_starts_from_the_transitions_of_its_kmeans_labels():
    """The chain's initial and transition pseudo-counts are the label sequence's."""
    rng = np.random.default_rng(1)
    states = [np.repeat(rng.permutation(3), 8), np.repeat(rng.permutation(3), 5)]
    seqs = [CENTERS[s] + 0.5 * rng.normal(size=(len(s), 2)) for s in states]
    model = vmp.models.hmm(seqs, 3, covariance="joint", initial_alpha=0.5, transition_alpha=0.25)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    mean = model["theta"].family.parameters(state.natural["theta"])["mean"]
    order = np.argmin(np.linalg.norm(mean[:, None] - CENTERS[None], axis=-1), axis=0)  # cluster -> state
    start, moves = np.zeros(3), np.zeros((3, 3))
    for s in states:
        start[order[s[0]]] += 1
        np.add.at(moves, (order[s[:-1]], order[s[1:]]), 1.0)
    np.testing.assert_allclose(state.natural["pi0"][0] + 1.0, 0.5 + start, rtol=1e-12)
    np.testing.assert_allclose(state.natural["A"][0] + 1.0, 0.25 + moves, rtol=1e-12)
