"""Categorical(z | p) over K categories: eta = log p (up to a constant), u = one-hot(z)."""
from __future__ import annotations

import numpy as np

from ._linalg import SUM_BLAS, sum_last
from .base import Arrays, Family


def _max_last(e: np.ndarray) -> np.ndarray:
    """max over the last (category) axis, keepdims: for a large array one pass per category, as
    numpy's reduction along a short contiguous axis is several times slower."""
    if e.size <= SUM_BLAS:
        return e.max(axis=-1, keepdims=True)
    m = e[..., :1].copy()
    for k in range(1, e.shape[-1]):
        np.maximum(m, e[..., k:k + 1], out=m)
    return m


class Categorical(Family):
    name = "Categorical"
    event_ndims = (1,)

    @staticmethod
    def natural_from(probabilities: np.ndarray) -> Arrays:
        with np.errstate(divide="ignore"):
            return (np.log(np.asarray(probabilities, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        return {"probabilities": cls.moments(natural)[0]}

    @staticmethod
    def shifted_exp(eta: np.ndarray) -> np.ndarray:
        """exp(eta - max_k eta): the probabilities up to their normalizer, each element's largest 1."""
        p = eta - _max_last(eta)
        np.exp(p, out=p)
        return p

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """p = softmax(eta), shifted by the largest eta of each element."""
        p = cls.shifted_exp(natural[0])
        p /= sum_last(p)[..., None]
        return (p,)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        e = natural[0]
        m = e.max(axis=-1, keepdims=True)
        return (np.log(np.exp(e - m).sum(axis=-1, keepdims=True)) + m)[..., 0]

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """-sum_k p_k log p_k, with 0 log 0 = 0."""
        p = cls.moments(natural)[0] if moments is None else moments[0]
        plogp = np.where(p > 0, p, 1.0)
        np.log(plogp, out=plogp)
        plogp *= p
        return -sum_last(plogp)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        e = natural[0]
        if np.isfinite(e).all():
            return np.ones(e.shape[:-1], dtype=bool)
        return np.all(~np.isnan(e) & (e < np.inf), axis=-1) & np.any(np.isfinite(e), axis=-1)

    @staticmethod
    def statistics(x: np.ndarray, size: int) -> Arrays:
        x = np.asarray(x)
        return (np.eye(size)[x],)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator) -> np.ndarray:
        p = cls.moments(natural)[0]
        c = np.cumsum(p, axis=-1)
        u = rng.random(p.shape[:-1] + (1,))
        return np.minimum(np.sum(c < u, axis=-1), p.shape[-1] - 1)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.moments(natural)[0]
        if p.ndim != 1:
            raise ValueError("to_scipy needs a single element: index the plates first")
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.multinomial(1, p)
