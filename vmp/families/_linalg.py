"""Batched linear algebra and special functions shared by the families."""
from __future__ import annotations

import numpy as np
from scipy import special


def sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def logdet_pd(a: np.ndarray) -> np.ndarray:
    """log|A| for a batch of positive-definite matrices (Cholesky)."""
    chol = np.linalg.cholesky(a)
    return 2.0 * np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


def inv_pd(a: np.ndarray) -> np.ndarray:
    """Inverse of a batch of positive-definite matrices."""
    return sym(np.linalg.inv(a))


def is_symmetric(a: np.ndarray) -> np.ndarray:
    """Elementwise: is each matrix of the batch symmetric, up to rounding (1e-8 of its largest entry)."""
    tol = 1e-8 * np.maximum(1.0, np.max(np.abs(a), axis=(-2, -1), initial=0.0))
    return np.all(np.abs(a - np.swapaxes(a, -1, -2)) <= tol[..., None, None], axis=(-2, -1))


def is_pd(a: np.ndarray) -> np.ndarray:
    """Elementwise: is each matrix of the batch finite, symmetric and positive definite."""
    finite = np.all(np.isfinite(a), axis=(-2, -1))
    safe = np.where(finite[..., None, None], sym(a), np.eye(a.shape[-1]))
    ok = np.linalg.eigvalsh(safe)[..., 0] > 0
    return finite & ok


def multigammaln(a: np.ndarray, d: int) -> np.ndarray:
    """log Gamma_D(a) = D(D-1)/4 log(pi) + sum_j log Gamma(a + (1 - j)/2), vectorized."""
    a = np.asarray(a, dtype=float)
    j = np.arange(1, d + 1)
    return d * (d - 1) / 4.0 * np.log(np.pi) + np.sum(special.gammaln(a[..., None] + (1.0 - j) / 2.0), axis=-1)


def multidigamma(a: np.ndarray, d: int) -> np.ndarray:
    """psi_D(a) = sum_j psi(a + (1 - j)/2), the derivative of log Gamma_D."""
    a = np.asarray(a, dtype=float)
    j = np.arange(1, d + 1)
    return np.sum(special.digamma(a[..., None] + (1.0 - j) / 2.0), axis=-1)


def inner(a: np.ndarray, b: np.ndarray, event_ndim: int) -> np.ndarray:
    """Sum of a*b over the trailing event axes."""
    prod = a * b
    return prod.sum(axis=tuple(range(-event_ndim, 0))) if event_ndim else prod
