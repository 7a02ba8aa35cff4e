"""Poisson(y | lambda): eta = log lambda, u = y, A = e^eta, base measure h(y) = 1 / y!.

Its base measure is not 1, so it is observed-only: an observed node's bound adds
sum_n w_n (-log y_n!) (``Conditional.data_terms``).
"""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from ._count_sums import log_sum_over_counts
from .base import Arrays, Family

#: the largest rate drawn exactly (numpy.random.Generator.poisson refuses above about 9.2e18)
LARGEST_EXACT = 1e12
#: E[log y!] sums the pmf up to lambda + TAIL_SD sqrt(lambda) + TAIL_SD (the rest is below 1e-16)
TAIL_SD = 40.0


class Poisson(Family):
    name = "Poisson"
    event_ndims = (0,)
    support = constraints.nonnegative_integer
    arg_constraints = {"rate": constraints.positive}
    unit_base_measure = False
    latent = False

    @staticmethod
    def natural_from(rate: np.ndarray) -> Arrays:
        """eta = log lambda."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.log(np.asarray(rate, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """lambda = e^eta."""
        return {"rate": np.exp(natural[0])}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[y] = e^eta."""
        return (np.exp(natural[0]),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = e^eta = lambda."""
        return np.exp(natural[0])

    @classmethod
    def log_base_measure(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> np.ndarray:
        """log h(y) = -log y! = -log Gamma(y + 1)."""
        return -special.gammaln(np.asarray(x, float) + 1.0)

    @classmethod
    def expected_log_base_measure(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """E[-log y!] = -sum_y Poi(y | lambda) log y!, summed over y up to the far tail."""
        lam = np.exp(natural[0])
        top = int(np.ceil(np.max(lam + TAIL_SD * np.sqrt(lam), initial=0.0) + TAIL_SD))
        y = np.arange(top + 1.0).reshape((-1,) + (1,) * lam.ndim)
        log_fact = special.gammaln(y + 1.0)
        pmf = np.exp(special.xlogy(y, lam) - lam - log_fact)
        return -np.sum(pmf * log_fact, axis=0)

    @classmethod
    def tempered_log_normalizer(cls, natural: Arrays, s: float) -> np.ndarray:
        """log sum_y Poi(y | lambda)^s = log sum_y exp{s (y eta - log y!)} - s e^eta (Mandt et al.
        eq. (3)): 1/y! is raised to s too, so it is not A(s eta) - s A(eta); summed over y."""
        eta = np.asarray(natural[0], float)
        return (log_sum_over_counts(lambda y: s * (np.where(y > 0, y * eta, 0.0) - special.gammaln(y + 1.0)),
                                    np.exp(eta)) - s * np.exp(eta))

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = y."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Poisson draws; above LARGEST_EXACT (numpy's limit is about 9.2e18) the normal
        approximation round(N(lambda, lambda)), whose skewness 1/sqrt(lambda) is below 1e-6."""
        lam = np.broadcast_to(np.exp(natural[0]), tuple(size) + np.shape(natural[0]))
        large = lam > LARGEST_EXACT
        if not np.any(large):
            return rng.poisson(lam).astype(float)
        y = rng.poisson(np.where(large, 0.0, lam)).astype(float)
        normal = np.round(lam + np.sqrt(lam) * rng.standard_normal(lam.shape))
        return np.where(large, np.maximum(normal, 0.0), y)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.poisson(np.exp(natural[0]))

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.5, 6.0, size=plate_shape))
