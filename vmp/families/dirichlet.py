"""Dirichlet(pi | alpha): eta = alpha - 1, u = log pi, A = sum log Gamma(alpha) - log Gamma(sum alpha)."""
from __future__ import annotations

import numpy as np
from scipy import special

from .base import Arrays, Family


class Dirichlet(Family):
    name = "Dirichlet"
    event_ndims = (1,)

    @staticmethod
    def natural_from(alpha: np.ndarray) -> Arrays:
        return (np.asarray(alpha, float) - 1.0,)

    @staticmethod
    def parameters(natural: Arrays) -> dict[str, np.ndarray]:
        return {"alpha": natural[0] + 1.0}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        a = natural[0] + 1.0
        return (special.digamma(a) - special.digamma(a.sum(-1, keepdims=True)),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        a = natural[0] + 1.0
        return special.gammaln(a).sum(-1) - special.gammaln(a.sum(-1))

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        a = natural[0] + 1.0
        return np.all(np.isfinite(a) & (a > 0), axis=-1)

    @staticmethod
    def statistics(x: np.ndarray) -> Arrays:
        return (np.log(np.asarray(x, float)),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator) -> np.ndarray:
        g = rng.gamma(natural[0] + 1.0)
        return g / g.sum(-1, keepdims=True)

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q: pi_k ~ Beta(alpha_k, sum(alpha) - alpha_k)."""
        a = natural[0] + 1.0
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.beta(a, a.sum(-1, keepdims=True) - a)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        a = natural[0] + 1.0
        if a.ndim != 1:
            raise ValueError("to_scipy needs a single element: index the plates first")
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.dirichlet(a)
