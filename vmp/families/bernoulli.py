"""Bernoulli(x | p), x in {0, 1}: eta = log(p / (1 - p)), u = x, A = log(1 + e^eta)."""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family


class Bernoulli(Family):
    name = "Bernoulli"
    event_ndims = (0,)
    support = constraints.integer_interval(0, 1)
    arg_constraints = {"probability": constraints.unit_interval}
    binary = True
    selects, one_hot = True, False

    @classmethod
    def categories(cls, event_shape: tuple[int, ...]) -> int:
        """x in {0, 1}: two components."""
        return 2

    @classmethod
    def indicator(cls, mean: np.ndarray) -> np.ndarray:
        """(E[[x = 0]], E[[x = 1]]) = (1 - p, p): the Bernoulli as a Categorical over {0, 1}."""
        p = np.asarray(mean, float)
        return np.stack([1.0 - p, p], axis=-1)

    @classmethod
    def indicator_message(cls, message: np.ndarray) -> np.ndarray:
        """d/dp of m_0 (1 - p) + m_1 p = m_1 - m_0 (a message to the logit eta)."""
        return message[..., 1] - message[..., 0]

    @staticmethod
    def natural_from(probability: np.ndarray) -> Arrays:
        """eta = logit p."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (special.logit(np.asarray(probability, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """p = sigmoid(eta)."""
        return {"probability": special.expit(natural[0])}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = sigmoid(eta)."""
        return (special.expit(natural[0]),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = log(1 + e^eta)."""
        return np.logaddexp(0.0, natural[0])

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H = -p log p - (1 - p) log(1 - p) = A(eta) - p eta, written as
        p log(1 + e^-eta) + (1 - p) log(1 + e^eta) so that it stays finite at |eta| = inf."""
        e = natural[0]
        p = special.expit(e) if moments is None else moments[0]
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(p * np.logaddexp(0.0, -e)) + np.nan_to_num((1.0 - p) * np.logaddexp(0.0, e))

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = x."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """1 where a uniform draw falls below p."""
        p = special.expit(natural[0])
        return (rng.random(tuple(size) + p.shape) < p).astype(float)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.bernoulli(special.expit(natural[0]))

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return (rng.normal(size=plate_shape),)

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta = logit of the probability ``mean``."""
        return cls.natural_from(np.broadcast_to(np.clip(mean, 1e-12, 1 - 1e-12), natural[0].shape))
