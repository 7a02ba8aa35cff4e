"""Gamma(tau | a, b) with shape a and rate b: eta = (-b, a - 1), u = (tau, log tau)."""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family


class Gamma(Family):
    name = "Gamma"
    event_ndims = (0, 0)
    support = constraints.positive
    arg_constraints = {"shape": constraints.shape, "rate": constraints.positive}
    scalable = True
    scales = True
    allocates = True

    @staticmethod
    def natural_from(shape: np.ndarray, rate: np.ndarray) -> Arrays:
        """eta = (-b, a - 1)."""
        shape, rate = np.broadcast_arrays(np.asarray(shape, float), np.asarray(rate, float))
        return -rate, shape - 1.0

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """a = eta_2 + 1, b = -eta_1."""
        return {"shape": natural[1] + 1.0, "rate": -natural[0]}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[tau] = a / b, E[log tau] = psi(a) - log b."""
        a, b = natural[1] + 1.0, -natural[0]
        return a / b, special.digamma(a) - np.log(b)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = log Gamma(a) - a log b."""
        a, b = natural[1] + 1.0, -natural[0]
        return special.gammaln(a) - a * np.log(b)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (tau, log tau)."""
        x = np.asarray(x, float)
        return x, np.log(x)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        a, b = natural[1] + 1.0, -natural[0]
        return rng.gamma(a, 1.0 / b, size=tuple(size) + a.shape if size else None)

    @classmethod
    def inverse_mean(cls, natural: Arrays) -> np.ndarray:
        """E[1/tau] = b / (a - 1) (inverse-Gamma mean; infinite for a <= 1)."""
        a, b = natural[1] + 1.0, -natural[0]
        with np.errstate(divide="ignore"):
            return np.where(a > 1, b / np.where(a > 1, a - 1.0, 1.0), np.inf)

    @classmethod
    def t_marginal(cls, natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """(nu, s^2) of int N(x | m, 1/tau) Gamma(tau | a, b) dtau = St(x | m, s^2, nu) with
        nu = 2a, s^2 = b / a (Bishop PRML eq. 2.159)."""
        a, b = natural[1] + 1.0, -natural[0]
        return 2.0 * a, b / a

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q as one frozen scipy distribution (q itself)."""
        return cls.to_scipy(natural)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        a, b = natural[1] + 1.0, -natural[0]
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.gamma(a, scale=1.0 / b)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.5, 3.0, size=plate_shape), rng.uniform(0.5, 3.0, size=plate_shape))

    @classmethod
    def scale_dimension(cls, event_shape: tuple[int, ...]) -> int:
        """log(c tau) = log tau + log c."""
        return 1

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """The shape kept, the rate b = a / mean (E[tau] = a / b)."""
        a = natural[1] + 1.0
        return -a / np.broadcast_to(mean, np.shape(a)), natural[1]

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """Shape and rate each scaled by exp(eps / sqrt(concentration)), eps ~ N(0, 1): the mean
        moved by about 10% at the default (the prior plus a small random offset, as Gopalan et al. (2015) start
        Poisson factorization)."""
        a, b = natural[1] + 1.0, -natural[0]
        sd = concentration ** -0.5
        a = a * np.exp(sd * rng.normal(size=a.shape))
        b = b * np.exp(sd * rng.normal(size=b.shape))
        return -b, a - 1.0
