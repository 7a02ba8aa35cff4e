"""End-to-end tests of the ready-made models in ``models/``: recovery of known structure
from synthetic data, a non-decreasing ELBO, seeded determinism, and input validation.

(a) Bayesian Gaussian mixture on 4 well-separated 2-D clusters;
(b) LDA on a small corpus sampled from the LDA generative model;
(c) Bayesian matrix factorization, structured and fully factorized, on low-rank data;
(d) bad inputs to the builders raise ``vmp.VMPError`` subclasses.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import vmp
from models import gaussian_mixture, lda, matrix_factorization


def assert_elbo_nondecreasing(elbo: np.ndarray) -> None:
    elbo = np.asarray(elbo, float)
    assert np.all(np.isfinite(elbo))
    steps = np.diff(elbo)
    slack = 1e-9 * np.abs(elbo[1:])
    worst = int(np.argmin(steps + slack)) if steps.size else 0
    assert np.all(steps >= -slack), f"ELBO fell by {-steps[worst]:.3g} at iteration {worst + 1}"


# --------------------------------------------------------------------------------------
# (a) Gaussian mixture
# --------------------------------------------------------------------------------------

CENTERS = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
WEIGHTS = np.array([0.4, 0.3, 0.2, 0.1])
SD = 0.7  # centres are >= 6 apart: more than 8 standard deviations


def mixture_data(n: int = 600, seed: int = 1):
    rng = np.random.default_rng(seed)
    z = rng.choice(len(WEIGHTS), size=n, p=WEIGHTS)
    return CENTERS[z] + SD * rng.normal(size=(n, 2)), z


def match_means(true: np.ndarray, est: np.ndarray):
    """Hungarian matching of true centres to estimated means; returns (cols, distances)."""
    dist = np.linalg.norm(true[:, None, :] - est[None, :, :], axis=-1)
    rows, cols = linear_sum_assignment(dist)
    return cols, dist[rows, cols]


@pytest.fixture(scope="module")
def mixture_fit():
    x, z = mixture_data()
    model = gaussian_mixture(x, n_components=6)  # two components more than clusters
    res = model.fit(iterations=300, tol=1e-8, seed=0)
    return x, z, model, res


def test_mixture_recovers_means_and_weights(mixture_fit):
    x, z, model, res = mixture_fit
    assert res.converged, res.message
    mu, pi = model["theta"].mean, model["pi"].mean
    cols, dist = match_means(CENTERS, mu)
    assert dist.max() < 0.3, f"means {np.round(mu, 2).tolist()} do not match the centres (distances {dist})"
    # the used components carry the cluster proportions; the spare ones are (nearly) empty
    empirical = np.bincount(z, minlength=len(WEIGHTS)) / len(z)
    np.testing.assert_allclose(pi[cols], empirical, atol=0.03)
    spare = np.setdiff1d(np.arange(len(pi)), cols)
    assert np.all(pi[spare] < 0.02), f"spare components kept weight {pi[spare]}"
    # responsibilities are (nearly) hard and agree with the generating labels
    r = model["z"].mean
    assert r.shape == (len(x), 6)
    assert np.mean(np.argmax(r, 1) == cols[z]) > 0.99


def test_mixture_recovers_means_exact_k():
    x, _ = mixture_data()
    model = gaussian_mixture(x, n_components=4)
    res = model.fit(iterations=300, tol=1e-8, seed=0)
    assert_elbo_nondecreasing(res.elbo)
    _, dist = match_means(CENTERS, model["theta"].mean)
    assert dist.max() < 0.3, f"means {np.round(model['theta'].mean, 2).tolist()} do not match the centres"


def test_mixture_precisions(mixture_fit):
    _, _, model, _ = mixture_fit
    cols, _ = match_means(CENTERS, model["theta"].mean)
    lam = model["theta"].parameters["precision"][cols]
    np.testing.assert_allclose(lam, np.broadcast_to(np.eye(2) / SD**2, lam.shape), rtol=0.35, atol=0.35)


def test_mixture_elbo_nondecreasing(mixture_fit):
    _, _, _, res = mixture_fit
    assert len(res.elbo) == res.iterations + 1
    assert_elbo_nondecreasing(res.elbo)


def test_mixture_seeded_determinism(mixture_fit):
    x, _, model, res = mixture_fit
    again = gaussian_mixture(x, n_components=6)
    res2 = again.fit(iterations=300, tol=1e-8, seed=0)
    for name in ("theta", "pi", "z"):
        np.testing.assert_array_equal(again[name].mean, model[name].mean, err_msg=name)
    np.testing.assert_array_equal(res2.elbo, res.elbo)
    # refitting the same model object restarts from scratch
    res3 = again.fit(iterations=300, tol=1e-8, seed=0)
    np.testing.assert_array_equal(res3.elbo, res.elbo)
    np.testing.assert_array_equal(again["theta"].mean, model["theta"].mean)


def test_mixture_other_seed_converges(mixture_fit):
    x, _, model, _ = mixture_fit
    other = gaussian_mixture(x, n_components=6)
    res = other.fit(iterations=300, tol=1e-8, seed=1)
    assert res.converged, res.message
    assert_elbo_nondecreasing(res.elbo)
    assert not np.array_equal(other["theta"].mean, model["theta"].mean)  # the seed matters
    _, dist = match_means(CENTERS, other["theta"].mean)
    assert dist.max() < 0.3


# --------------------------------------------------------------------------------------
# (b) LDA
# --------------------------------------------------------------------------------------

def lda_corpus(k=3, v=30, n_docs=60, length=80, seed=0):
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    theta = rng.dirichlet(np.full(k, 0.5), size=n_docs)
    docs, words, counts = [], [], []
    for d in range(n_docs):
        topics = rng.choice(k, size=length, p=theta[d])
        tokens = np.array([rng.choice(v, p=beta[t]) for t in topics])
        w, c = np.unique(tokens, return_counts=True)
        docs.append(np.full(w.size, d))
        words.append(w)
        counts.append(c)
    return beta, np.concatenate(docs), np.concatenate(words), np.concatenate(counts)


def test_lda_recovers_topics():
    k, v = 3, 30
    beta, docs, words, counts = lda_corpus(k, v)
    # LDA has local optima: keep the best bound of a few restarts, as any practical user would
    fits = []
    for seed in range(3):
        model = lda(docs, words, counts, n_topics=k, n_words=v)
        res = model.fit(iterations=400, tol=1e-7, seed=seed)
        assert_elbo_nondecreasing(res.elbo)
        fits.append((res.final_elbo, model))
    _, model = max(fits, key=lambda f: f[0])
    est = model["beta"].mean
    assert est.shape == (k, v)
    np.testing.assert_allclose(est.sum(1), 1.0)
    corr = np.corrcoef(beta, est)[:k, k:]
    rows, cols = linear_sum_assignment(-corr)
    assert corr[rows, cols].min() > 0.9, f"topic correlations {corr[rows, cols]}"
    theta = model["theta"].mean
    assert theta.shape == (60, k)
    np.testing.assert_allclose(theta.sum(1), 1.0)


# --------------------------------------------------------------------------------------
# (c) Matrix factorization
# --------------------------------------------------------------------------------------

NOISE_SD = 0.1


def mf_data(m=30, n=40, k=3, r=600, seed=0):
    rng = np.random.default_rng(seed)
    u, v = rng.normal(size=(m, k)), rng.normal(size=(n, k))
    idx = rng.choice(m * n, size=r, replace=False)
    users, items = idx // n, idx % n
    ratings = np.sum(u[users] * v[items], 1) + NOISE_SD * rng.normal(size=r)
    return users, items, ratings


def rmse(model, users, items, ratings):
    pred = np.sum(model["u"].mean[users] * model["v"].mean[items], axis=1)
    return float(np.sqrt(np.mean((pred - ratings) ** 2)))


@pytest.mark.parametrize("factorized", [False, True], ids=["structured", "factorized"])
def test_matrix_factorization_fits_low_rank(factorized):
    users, items, ratings = mf_data()
    model = matrix_factorization(users, items, ratings, n_factors=3, factorized=factorized)
    res = model.fit(iterations=200, tol=0, seed=0)
    assert_elbo_nondecreasing(res.elbo)
    assert model["u"].mean.shape == (30, 3) and model["v"].mean.shape == (40, 3)
    err = rmse(model, users, items, ratings)
    assert err < 0.2 * ratings.std(), f"training RMSE {err:.3f} vs ratings std {ratings.std():.3f}"
    assert err < 2 * NOISE_SD
    tau = float(model["tau"].mean)
    assert 1 / (3 * NOISE_SD**2) < tau < 3 / NOISE_SD**2, f"E[tau] = {tau:.3g}, noise precision is {1 / NOISE_SD**2:g}"


def test_matrix_factorization_fixed_noise_has_no_tau():
    users, items, ratings = mf_data()
    model = matrix_factorization(users, items, ratings, n_factors=3, noise_precision=1 / NOISE_SD**2)
    assert "tau" not in model
    with pytest.raises(vmp.GraphError):
        model["tau"]
    res = model.fit(iterations=100, tol=0, seed=0)
    assert_elbo_nondecreasing(res.elbo)
    assert rmse(model, users, items, ratings) < 0.2 * ratings.std()


# --------------------------------------------------------------------------------------
# (d) Input validation
# --------------------------------------------------------------------------------------

def _mixture(x):
    return lambda: gaussian_mixture(x, n_components=2)


_I2 = np.array([0, 1])
_I3 = np.array([0, 1, 2])
BAD_INPUTS = {
    "mixture 1-D data": _mixture(np.arange(10.0)),
    "mixture 3-D data": _mixture(np.zeros((5, 2, 2))),
    "mixture scalar data": _mixture(np.float64(3.0)),
    "mixture inf data": _mixture(np.array([[0.0, 1.0], [np.inf, 2.0], [3.0, 4.0]])),
    "mixture all NaN": _mixture(np.full((3, 2), np.nan)),
    "mixture non-boolean mask": lambda: gaussian_mixture(np.zeros((3, 2)), 2, mask=np.ones((3, 2))),
    "mixture ragged rows": _mixture([[0.0, 1.0], [2.0]]),
    "mixture words": _mixture([["a", "b"], ["c", "d"]]),
    "lda short words": lambda: lda(_I3, _I2, np.ones(3), n_topics=2),
    "lda short counts": lambda: lda(_I3, _I3, np.ones(2), n_topics=2),
    "lda 2-D arrays": lambda: lda(np.zeros((2, 2), int), np.zeros((2, 2), int), np.ones((2, 2)), n_topics=2),
    "lda word out of range": lambda: lda(_I2, np.array([0, 5]), np.ones(2), n_topics=2, n_words=3),
    "lda negative count": lambda: lda(_I2, _I2, np.array([1.0, -1.0]), n_topics=2),
    "mf short items": lambda: matrix_factorization(_I3, _I2, np.ones(3), n_factors=2),
    "mf short ratings": lambda: matrix_factorization(_I3, _I3, np.ones(2), n_factors=2),
    "mf 2-D arrays": lambda: matrix_factorization(np.zeros((2, 2), int), np.zeros((2, 2), int), np.ones((2, 2)), n_factors=2),
    "mf user out of range": lambda: matrix_factorization(_I2, _I2, np.ones(2), n_factors=2, n_users=1),
    "mf NaN rating": lambda: matrix_factorization(_I2, _I2, np.array([1.0, np.nan]), n_factors=2),
    "mf negative noise precision": lambda: matrix_factorization(_I2, _I2, np.ones(2), n_factors=2, noise_precision=-1.0),
    "mf zero factors": lambda: matrix_factorization(_I2, _I2, np.ones(2), n_factors=0),
    "mf no ratings": lambda: matrix_factorization(np.array([], int), np.array([], int), np.array([]), n_factors=2),
}


@pytest.mark.parametrize("build", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_bad_inputs_raise_vmp_errors(build):
    with pytest.raises(vmp.VMPError):
        build()


def test_mismatched_lengths_are_shape_errors():
    with pytest.raises(vmp.ShapeError, match="one length"):
        lda(_I3, _I2, np.ones(3), n_topics=2)
    with pytest.raises(vmp.ShapeError, match="one length"):
        matrix_factorization(_I3, _I3, np.ones(2), n_factors=2)
    with pytest.raises(vmp.ShapeError, match="N x D"):
        gaussian_mixture(np.arange(10.0), n_components=2)


def test_models_reachable_after_a_bare_import_vmp():
    """``import vmp`` then ``vmp.models.gaussian_mixture`` (a fresh interpreter: an earlier
    ``import vmp.models`` in this process would set the attribute by itself)."""
    import subprocess
    import sys

    code = ("import vmp; f = vmp.models.gaussian_mixture; assert callable(f)\n"
            "try:\n    vmp.no_such_name\nexcept AttributeError as e:\n    assert 'no_such_name' in str(e)\n"
            "else:\n    raise SystemExit('no AttributeError')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
