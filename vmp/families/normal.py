"""Univariate Gaussian, elementwise over plates: eta = (tau mu, -tau/2), u = (x, x^2)."""
from __future__ import annotations

import numpy as np

from . import constraints
from .base import Arrays, Family

LOG2PI = np.log(2 * np.pi)


class Normal(Family):
    name = "Normal"
    event_ndims = (0, 0)
    outer = {1: (0, 0)}
    support = constraints.real
    arg_constraints = {"mean": constraints.real, "precision": constraints.positive}
    location = True

    @staticmethod
    def natural_from(mean: np.ndarray, precision: np.ndarray) -> Arrays:
        """eta = (tau mu, -tau / 2)."""
        mean, precision = np.asarray(mean, float), np.asarray(precision, float)
        return precision * mean, -0.5 * precision * np.ones_like(mean)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """tau = -2 eta_2, mu = eta_1 / tau."""
        precision = -2.0 * natural[1]
        return {"mean": natural[0] / precision, "variance": 1.0 / precision, "precision": precision}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = mu, E[x^2] = 1/tau + mu^2."""
        p = cls.parameters(natural)
        return p["mean"], p["variance"] + p["mean"] ** 2

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = -eta_1^2 / (4 eta_2) - 1/2 log(-2 eta_2) + 1/2 log 2 pi."""
        e1, e2 = natural
        return -0.25 * e1**2 / e2 - 0.5 * np.log(-2.0 * e2) + 0.5 * LOG2PI

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H = 1/2 (1 + log 2 pi) - 1/2 log(tau)."""
        return 0.5 * (1.0 + LOG2PI) - 0.5 * np.log(-2.0 * natural[1])

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (x, x^2)."""
        x = np.asarray(x, float)
        return x, x * x

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        p = cls.parameters(natural)
        return p["mean"] + np.sqrt(p["variance"]) * rng.standard_normal(tuple(size) + np.shape(p["mean"]))

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.norm(p["mean"], np.sqrt(p["variance"]))

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.normal(size=plate_shape), rng.uniform(0.5, 2.0, size=plate_shape))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta_1 = tau m, tau kept."""
        return -2.0 * natural[1] * mean, natural[1]

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """The mean moved to a draw from q itself."""
        return cls.with_mean(natural, cls.sample(natural, rng))

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q (q itself)."""
        return cls.to_scipy(natural)
