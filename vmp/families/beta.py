"""Beta(p | alpha, beta): eta = (alpha - 1, beta - 1), u = (log p, log(1 - p)),
A = log Gamma(alpha) + log Gamma(beta) - log Gamma(alpha + beta)."""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family

#: draws are kept this far inside (0, 1), so that log p and log(1 - p) stay finite
TINY = 1e-300


class Beta(Family):
    name = "Beta"
    event_ndims = (0, 0)
    support = constraints.open_unit_interval
    arg_constraints = {"alpha": constraints.shape, "beta": constraints.shape}

    @staticmethod
    def natural_from(alpha: np.ndarray, beta: np.ndarray) -> Arrays:
        """eta = (alpha - 1, beta - 1)."""
        alpha, beta = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(beta, float))
        return alpha - 1.0, beta - 1.0

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """alpha = eta_1 + 1, beta = eta_2 + 1."""
        return {"alpha": natural[0] + 1.0, "beta": natural[1] + 1.0}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[log p] = psi(alpha) - psi(alpha + beta), E[log(1 - p)] = psi(beta) - psi(alpha + beta)."""
        a, b = natural[0] + 1.0, natural[1] + 1.0
        total = special.digamma(a + b)
        return special.digamma(a) - total, special.digamma(b) - total

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = log Gamma(alpha) + log Gamma(beta) - log Gamma(alpha + beta)."""
        a, b = natural[0] + 1.0, natural[1] + 1.0
        return special.gammaln(a) + special.gammaln(b) - special.gammaln(a + b)

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[p] = alpha / (alpha + beta)."""
        a, b = natural[0] + 1.0, natural[1] + 1.0
        return a / (a + b)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (log p, log(1 - p))."""
        x = np.asarray(x, float)
        return np.log(x), np.log1p(-x)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """As the ratio G_a / (G_a + G_b) of Gamma(alpha, 1) and Gamma(beta, 1) draws, kept in
        [TINY, 1 - eps/2]."""
        a, b = natural[0] + 1.0, natural[1] + 1.0
        a, b = np.broadcast_arrays(a, b)
        p = rng.beta(a, b, size=tuple(size) + a.shape if size else None)
        return np.clip(p, TINY, 1.0 - np.finfo(float).epsneg)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        a, b = natural[0] + 1.0, natural[1] + 1.0
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.beta(a, b)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.5, 3.0, size=plate_shape), rng.uniform(0.5, 3.0, size=plate_shape))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """alpha + beta kept, alpha = m (alpha + beta), beta = (1 - m)(alpha + beta)."""
        a, b = natural[0] + 1.0, natural[1] + 1.0
        m = np.clip(np.broadcast_to(mean, a.shape), 1e-6, 1 - 1e-6)
        return cls.natural_from(m * (a + b), (1.0 - m) * (a + b))

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """alpha and beta plus Gamma(concentration, 1 / concentration) noise (mean 1, sd
        concentration^-1/2) each."""
        return tuple(e + rng.gamma(concentration, 1.0 / concentration, size=e.shape) for e in natural)
