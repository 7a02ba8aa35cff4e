"""A Gaussian's moments and draws through the stack layout (vmp/families/_linalg.py:
``Shared.inv_outer``, ``Cholesky.draw``, ``Shared.draw``) against numpy per element and Monte
Carlo: E[x x^T] exactly symmetric and Sigma + mu mu^T per element around the SHARED_BLAS and
VECTOR_BATCH thresholds; 20,000 draws with the right mean, covariance and marginals (whitened
per element, a Kolmogorov-Smirnov test per coordinate); a precision that does not factorize is
an error, never NaN."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vmp.families import Gaussian, _linalg
from vmp.families._linalg import Cholesky

EDGE = _linalg.SHARED_BLAS  # == VECTOR_BATCH: below it a stack goes to LAPACK
#: (plates, the plates the precision is broadcast from)
BROADCAST = [((EDGE - 1,), (1,)), ((EDGE,), (1,)), ((EDGE + 1,), (1,)), ((3, 100), (1, 1)),
             ((3, 100), (3, 1)), ((100, 3), (1, 3))]


def _spd(plates, d, seed=0, spread=1e3):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=plates + (d, d)))
    eig = np.exp(rng.uniform(0.0, np.log(spread), size=plates + (d,)))
    return (q * eig[..., None, :]) @ np.swapaxes(q, -1, -2)


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "own"])
@pytest.mark.parametrize("d", range(1, 7))
@pytest.mark.parametrize("plates, small", BROADCAST, ids=[f"{p}<-{s}" for p, s in BROADCAST])
def test_second_moment_of_a_shared_precision_is_per_element_numpy(plates, small, d, shared):
    """(E[x], E[xx^T]) = (A^-1 b, A^-1 + x x^T) per element, E[xx^T] exactly symmetric, for a
    non-identity precision broadcast over a plate (the one-matrix stack-layout path and the
    einsum path) and for one precision per element (the column loop, LAPACK below its batch)."""
    a = np.broadcast_to(_spd(small, d, seed=d), plates + (d, d)) if shared else _spd(plates, d, seed=d)
    assert isinstance(_linalg.factor(a), _linalg.Shared) == (shared and _linalg.vectorized(a.shape))
    b = np.random.default_rng(d + 1).normal(size=plates + (d,))
    x, xx = _linalg.factor(a).inv_outer(b)
    cov = np.linalg.inv(np.ascontiguousarray(a))
    expect = np.einsum("...ij,...j->...i", cov, b)
    np.testing.assert_array_equal(xx, np.swapaxes(xx, -1, -2))
    np.testing.assert_allclose(x, expect, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(xx, cov + expect[..., :, None] * expect[..., None, :], rtol=1e-11, atol=1e-12)


DRAWS = 20_000


def _eta(path: str, d: int):
    """Natural parameters of DRAWS Gaussians (one draw each, or one Gaussian drawn DRAWS times
    for 'lapack'), non-identity precisions with a non-zero mean."""
    n = 1 if path == "lapack" else DRAWS
    if path == "shared":
        prec = np.broadcast_to(_spd((1,), d, seed=31, spread=50.0), (n, d, d))
    else:
        prec = _spd((n,), d, seed=31, spread=50.0)
    mean = 20.0 * np.random.default_rng(32).normal(size=(n, d))
    eta_2 = -0.5 * prec[:1] if path == "shared" else -0.5 * prec
    eta = (np.einsum("...ij,...j->...i", prec, mean), np.broadcast_to(eta_2, prec.shape))
    assert isinstance(_linalg.factor(eta[1], scale=-2.0), _linalg.Shared) == (path == "shared")
    return eta, mean, prec


@pytest.mark.parametrize("path", ["stack", "shared", "lapack"])
def test_sample_draws_from_the_gaussian(path):
    """Whitened per element, w = L^-1 (x - mu) with L L^T = Sigma (numpy), the draws are
    N(0, I): mean and covariance within Monte Carlo error, each coordinate passes a KS test."""
    d = 4
    eta, mean, prec = _eta(path, d)
    size = (DRAWS,) if path == "lapack" else ()
    x = Gaussian.sample(eta, np.random.default_rng(33), size=size).reshape(DRAWS, d)
    chol = np.linalg.cholesky(np.linalg.inv(prec))
    w = np.linalg.solve(chol, (x - mean)[..., None])[..., 0]
    se = 1.0 / np.sqrt(DRAWS)
    assert np.all(np.abs(w.mean(axis=0)) < 5 * se)
    assert np.all(np.abs(np.cov(w.T) - np.eye(d)) < 5 * np.sqrt(2) * se)
    for j in range(d):
        assert stats.kstest(w[:, j], "norm").pvalue > 1e-4


def test_a_near_singular_precision_is_an_error_not_nan():
    """A precision that factorizes but whose inverse, as formed, does not (condition number
    about 1e17) is refused as the LAPACK path refuses it, not drawn as NaN."""
    d = 5
    prec = _spd((EDGE + 44,), d, seed=4, spread=1e17)
    assert Cholesky(prec).ok.all()
    eta = Gaussian.natural_from(np.random.default_rng(1).normal(size=(EDGE + 44, d)), prec)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        Gaussian.sample(eta, np.random.default_rng(0))


@pytest.mark.parametrize("shared", [False, True])
def test_an_indefinite_precision_is_an_error(shared):
    n, d = EDGE + 44, 3
    bad = np.diag([1.0, -1.0, 1.0])
    prec = np.broadcast_to(bad, (n, d, d)) if shared else np.concatenate([_spd((n - 1,), d), bad[None]])
    with pytest.raises(np.linalg.LinAlgError):
        Gaussian.sample((np.zeros((n, d)), -0.5 * prec), np.random.default_rng(0))
