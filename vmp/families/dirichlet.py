"""Dirichlet(pi | alpha): eta = alpha - 1, u = log pi, A = sum log Gamma(alpha) - log Gamma(sum alpha)."""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family

#: a draw that underflows to 0 is moved here, so that log pi stays finite
TINY = 1e-300
#: a concentration below which a vector is drawn in log space (its Gamma draws all underflow to 0
#: with probability above (8e-4)^K only below it)
LOG_DRAW = 0.01


class Dirichlet(Family):
    name = "Dirichlet"
    event_ndims = (1,)
    support = constraints.open_simplex
    arg_constraints = {"alpha": constraints.shape}
    example_event = (3,)

    @staticmethod
    def natural_from(alpha: np.ndarray) -> Arrays:
        """eta = alpha - 1."""
        return (np.asarray(alpha, float) - 1.0,)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        return {"alpha": natural[0] + 1.0}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[log pi_k] = psi(alpha_k) - psi(sum_j alpha_j)."""
        a = natural[0] + 1.0
        return (special.digamma(a) - special.digamma(a.sum(-1, keepdims=True)),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = sum_k log Gamma(alpha_k) - log Gamma(sum_k alpha_k)."""
        a = natural[0] + 1.0
        return special.gammaln(a).sum(-1) - special.gammaln(a.sum(-1))

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[pi] = alpha / sum alpha."""
        a = natural[0] + 1.0
        return a / a.sum(-1, keepdims=True)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = log pi."""
        return (np.log(np.asarray(x, float)),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Normalized Gamma(alpha_k, 1) draws, at least TINY. A vector with some alpha_k below
        LOG_DRAW (whose Gamma draws can all underflow to 0) is drawn from log Gamma draws:
        G(a) = G(a + 1) U^(1/a) (Marsaglia & Tsang 2000, section 5), normalized in log space."""
        a = natural[0] + 1.0
        g = rng.gamma(a, size=tuple(size) + a.shape if size else None)
        small = np.broadcast_to(a.min(-1, keepdims=True) < LOG_DRAW, g.shape)
        if np.any(small):
            a_full = np.broadcast_to(a, g.shape)[small].reshape(-1, a.shape[-1])
            log_g = np.log(rng.gamma(a_full + 1.0)) + np.log(rng.uniform(size=a_full.shape)) / a_full
            g = g.copy()
            g[small] = np.exp(log_g - log_g.max(-1, keepdims=True)).ravel()
        total = g.sum(-1, keepdims=True)
        return np.maximum(g / total, TINY)

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q: pi_k ~ Beta(alpha_k, sum(alpha) - alpha_k)."""
        a = natural[0] + 1.0
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.beta(a, a.sum(-1, keepdims=True) - a)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        a = natural[0] + 1.0
        from scipy import stats  # when asked for: scipy.stats is slow to import
        if a.ndim == 1:
            return stats.dirichlet(a)
        from ._scipy import Elementwise
        return Elementwise(stats.dirichlet, a.shape[:-1], alpha=a)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        return cls.natural_from(rng.uniform(0.5, 3.0, size=tuple(plate_shape) + tuple(event_shape)))

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """alpha plus Gamma(concentration, 1 / concentration) noise (mean 1, sd concentration^-1/2)
        per entry; Gamma(100, 0.01) at the default, scikit-learn's and gensim's start of LDA's
        topics."""
        return (natural[0] + rng.gamma(concentration, 1.0 / concentration, size=natural[0].shape),)

    @classmethod
    def describe(cls, mean: np.ndarray, fmt=str) -> str:
        """The summary statistics and, for one Dirichlet, its three largest probabilities."""
        text = super().describe(mean)
        if mean.ndim == 1:
            top = np.sort(mean)[::-1][:3]
            text += f"; largest {fmt(top)}"
        return text
