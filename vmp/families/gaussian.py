"""Multivariate Gaussian N(x | mu, Lambda^-1) over the last axis.

eta = (Lambda mu, -Lambda / 2), u(x) = (x, x x^T) (Winn & Bishop, table 1).
"""
from __future__ import annotations

import numpy as np

from ._linalg import factor, inv_pd, is_pd, sym
from .base import Arrays, Family

LOG2PI = np.log(2 * np.pi)


class Gaussian(Family):
    name = "Gaussian"
    event_ndims = (1, 2)
    outer = {1: (0, 0)}

    @staticmethod
    def natural_from(mean: np.ndarray, precision: np.ndarray) -> Arrays:
        mean, precision = np.asarray(mean, float), np.asarray(precision, float)
        return np.einsum("...ij,...j->...i", precision, mean), -0.5 * precision

    @staticmethod
    def parameters(natural: Arrays) -> dict[str, np.ndarray]:
        """Lambda = -2 eta_2, Sigma = Lambda^-1, mu = Sigma eta_1."""
        precision = -2.0 * sym(natural[1])
        cov = inv_pd(precision)
        return {"mean": np.einsum("...ij,...j->...i", cov, natural[0]), "covariance": cov, "precision": precision}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = mu, E[x x^T] = Sigma + mu mu^T."""
        cov = inv_pd(natural[1], scale=-2.0)
        m = np.einsum("...ij,...j->...i", cov, natural[0])
        return m, cov + m[..., :, None] * m[..., None, :]

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = 1/2 eta_1^T Lambda^-1 eta_1 - 1/2 log|Lambda| + D/2 log 2 pi, Lambda = -2 eta_2."""
        f = factor(natural[1], scale=-2.0)
        d = natural[0].shape[-1]
        mean = f.solve(natural[0]) if f.vectorized else np.einsum("...ij,...j->...i", f.inv(), natural[0])
        quad = np.einsum("...i,...i->...", natural[0], mean)
        return 0.5 * quad - 0.5 * f.logdet() + 0.5 * d * LOG2PI

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H = D/2 (1 + log 2 pi) - 1/2 log|Lambda|."""
        d = natural[0].shape[-1]
        return 0.5 * d * (1.0 + LOG2PI) - 0.5 * factor(natural[1], scale=-2.0).logdet()

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        finite = np.all(np.isfinite(natural[0]), axis=-1)
        try:
            ok = np.all(factor(natural[1], scale=-2.0).ok)
        except np.linalg.LinAlgError:
            ok = False
        if ok:
            return finite & np.all(np.isfinite(natural[1]), axis=(-2, -1))
        return is_pd(-2.0 * natural[1]) & finite

    @staticmethod
    def statistics(x: np.ndarray) -> Arrays:
        x = np.asarray(x, float)
        return x, x[..., :, None] * x[..., None, :]

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator) -> np.ndarray:
        p = cls.parameters(natural)
        chol = np.linalg.cholesky(p["covariance"])
        z = rng.standard_normal(p["mean"].shape)
        return p["mean"] + np.einsum("...ij,...j->...i", chol, z)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        if p["mean"].ndim != 1:
            raise ValueError("to_scipy needs a single element: index the plates first")
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.multivariate_normal(p["mean"], p["covariance"])


class Normal(Family):
    """Univariate Gaussian, elementwise over plates: eta = (tau mu, -tau/2), u = (x, x^2)."""

    name = "Normal"
    event_ndims = (0, 0)
    outer = {1: (0, 0)}

    @staticmethod
    def natural_from(mean: np.ndarray, precision: np.ndarray) -> Arrays:
        mean, precision = np.asarray(mean, float), np.asarray(precision, float)
        return precision * mean, -0.5 * precision * np.ones_like(mean)

    @staticmethod
    def parameters(natural: Arrays) -> dict[str, np.ndarray]:
        precision = -2.0 * natural[1]
        return {"mean": natural[0] / precision, "variance": 1.0 / precision, "precision": precision}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        p = cls.parameters(natural)
        return p["mean"], p["variance"] + p["mean"] ** 2

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        e1, e2 = natural
        return -0.25 * e1**2 / e2 - 0.5 * np.log(-2.0 * e2) + 0.5 * LOG2PI

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H = 1/2 (1 + log 2 pi) - 1/2 log(tau)."""
        return 0.5 * (1.0 + LOG2PI) - 0.5 * np.log(-2.0 * natural[1])

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        return np.isfinite(natural[0]) & np.isfinite(natural[1]) & (natural[1] < 0)

    @staticmethod
    def statistics(x: np.ndarray) -> Arrays:
        x = np.asarray(x, float)
        return x, x * x

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator) -> np.ndarray:
        p = cls.parameters(natural)
        return p["mean"] + np.sqrt(p["variance"]) * rng.standard_normal(np.shape(p["mean"]))

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.norm(p["mean"], np.sqrt(p["variance"]))
