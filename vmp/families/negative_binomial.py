"""NegativeBinomial(y | r, p), the count of successes before the r-th failure, with success
probability p and a known r > 0 per element:

    p(y) = Gamma(y + r) / (Gamma(r) y!) p^y (1 - p)^r,   eta = log p,   u = y,
    A = -r log(1 - e^eta),   h(y) = Gamma(y + r) / (Gamma(r) y!),   E[y] = r p / (1 - p).

r is data, not a parameter: ``NegativeBinomial.of(r)`` is the family bound to one node's r;
``NegativeBinomial`` itself is bound to ``EXAMPLE_R`` for the table tests. Its base measure is
not 1, so it is observed-only. With the logit link p = sigmoid(psi), p^y (1 - p)^r =
(e^psi)^y / (1 + e^psi)^(y + r): Polya-gamma augmentation with a = y, b = y + r.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy import special

from . import constraints
from ._count_sums import log_sum_over_counts
from .base import Arrays, Family

EXAMPLE_R = np.array([0.5, 2.0, 7.5])


class NegativeBinomial(Family):
    name = "NegativeBinomial"
    event_ndims = (0,)
    support = constraints.nonnegative_integer
    arg_constraints = {"probability": constraints.open_unit_interval}
    unit_base_measure = False
    latent = False
    #: r, over the plates of the family's node
    r: ClassVar[np.ndarray] = EXAMPLE_R
    bound_to = ("r",)

    @classmethod
    def of(cls, r) -> type["NegativeBinomial"]:
        """The family with the number of failures r (positive, broadcast over the plates)."""
        return cls.bound(r=np.asarray(r, float))

    @staticmethod
    def natural_from(probability: np.ndarray) -> Arrays:
        """eta = log p."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.log(np.asarray(probability, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """p = e^eta, and r."""
        r, p = np.broadcast_arrays(cls.r, np.exp(natural[0]))
        return {"probability": p, "r": r}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[y] = r e^eta / (1 - e^eta)."""
        return (cls.r / np.expm1(-np.asarray(natural[0], float)),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = -r log(1 - e^eta)."""
        with np.errstate(invalid="ignore"):
            return -cls.r * np.log(-np.expm1(np.asarray(natural[0], float)))

    @classmethod
    def log_base_measure(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> np.ndarray:
        """log h(y) = log Gamma(y + r) - log Gamma(r) - log y!."""
        y = np.asarray(x, float)
        return special.gammaln(y + cls.r) - special.gammaln(cls.r) - special.gammaln(y + 1.0)

    @classmethod
    def expected_log_base_measure(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """E[log h(y)] = sum_y NB(y | r, p) log h(y), summed over y up to the far tail."""
        eta = np.asarray(natural[0], float)
        r = np.broadcast_to(cls.r, eta.shape)
        a = cls.log_normalizer(natural)
        mean = cls.moments(natural)[0]
        sd = np.sqrt(mean / -np.expm1(eta))
        top = int(np.ceil(np.max(mean + 40.0 * sd, initial=0.0) + 40.0))
        y = np.arange(top + 1.0).reshape((-1,) + (1,) * eta.ndim)
        log_h = special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1.0)
        return np.sum(np.exp(log_h + y * eta - a) * log_h, axis=0)

    @classmethod
    def tempered_log_normalizer(cls, natural: Arrays, s: float) -> np.ndarray:
        """log sum_y NB(y | r, p)^s = log sum_y exp{s (log h(y) + y eta)} - s A(eta) (Mandt et al.
        eq. (3)); h(y) is raised to s too, so it is summed over y."""
        eta = np.asarray(natural[0], float)
        r = np.broadcast_to(cls.r, eta.shape)

        def log_term(y):
            return s * (special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1.0) + y * eta)
        return log_sum_over_counts(log_term, cls.moments(natural)[0]) - s * cls.log_normalizer(natural)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = y."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """y ~ Poisson(lambda), lambda ~ Gamma(r, p / (1 - p)) (the Gamma-Poisson mixture)."""
        r, p = np.broadcast_arrays(cls.r, np.exp(natural[0]))
        full = tuple(size) + p.shape
        lam = rng.gamma(np.broadcast_to(r, full), np.broadcast_to(p / (1.0 - p), full))
        return rng.poisson(lam).astype(float)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """scipy's nbinom(n, p') counts failures before n successes of probability p': n = r,
        p' = 1 - p."""
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.nbinom(cls.r, -np.expm1(np.asarray(natural[0], float)))

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.1, 0.8, size=plate_shape))
