"""Exponential(x | lambda) with rate lambda: eta = -lambda, u = x, A = -log(-eta), h = 1."""
from __future__ import annotations

import numpy as np

from . import constraints
from .base import Arrays, Family


class Exponential(Family):
    name = "Exponential"
    event_ndims = (0,)
    support = constraints.positive
    arg_constraints = {"rate": constraints.positive}

    @staticmethod
    def natural_from(rate: np.ndarray) -> Arrays:
        """eta = -lambda."""
        return (-np.asarray(rate, float),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """lambda = -eta."""
        return {"rate": -natural[0]}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = 1 / lambda = -1 / eta."""
        return (-1.0 / natural[0],)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = -log lambda = -log(-eta)."""
        return -np.log(-natural[0])

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = x."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        lam = -natural[0]
        return rng.exponential(1.0 / lam, size=tuple(size) + lam.shape)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.expon(scale=-1.0 / natural[0])

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.3, 4.0, size=plate_shape))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta = -1 / mean (one parameter: the spread follows the mean)."""
        return (np.broadcast_to(-1.0 / np.asarray(mean, float), natural[0].shape).copy(),)
