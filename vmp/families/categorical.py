"""Categorical(z | p) over K categories: eta = log p (up to a constant), u = one-hot(z)."""
from __future__ import annotations

import weakref

import numpy as np

from . import constraints
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


#: (weak eta, weak p, max_k eta, log sum_k exp(eta_k - max)) of the last large softmaxes: the
#: entropy of the q whose moments they gave reads its log-normalizer here
_NORMALIZERS: list = []


def _remember(eta: np.ndarray, p: np.ndarray, m: np.ndarray, log_s: np.ndarray) -> None:
    _NORMALIZERS.insert(0, (weakref.ref(eta), weakref.ref(p), m, log_s))
    del _NORMALIZERS[2:]


def _normalizer(eta: np.ndarray, p: np.ndarray):
    for e, q, m, log_s in _NORMALIZERS:
        if e() is eta and q() is p:
            return m, log_s
    return None


def _softmax(eta: np.ndarray):
    """(p, max_k eta_k, log sum_k exp(eta_k - max)) of a large eta."""
    m = _max_last(eta)
    p = eta - m
    np.exp(p, out=p)
    s = sum_last(p)
    p /= s[..., None]
    with np.errstate(divide="ignore"):
        return p, m[..., 0], np.log(s)


class Categorical(Family):
    name = "Categorical"
    event_ndims = (1,)
    support = constraints.nonnegative_integer  # category indices, below K (the event size)
    arg_constraints = {"probabilities": constraints.simplex}
    selects = True
    example_event = (3,)

    @staticmethod
    def natural_from(probabilities: np.ndarray) -> Arrays:
        """eta = log p."""
        with np.errstate(divide="ignore"):
            return (np.log(np.asarray(probabilities, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """p = softmax(eta)."""
        return {"probabilities": cls.moments(natural)[0]}

    @staticmethod
    def shifted_exp(eta: np.ndarray) -> np.ndarray:
        """exp(eta - max_k eta): the probabilities up to their normalizer, each element's largest 1."""
        p = eta - _max_last(eta)
        np.exp(p, out=p)
        return p

    @staticmethod
    def remember(eta: np.ndarray, p: np.ndarray, shift: np.ndarray, log_s: np.ndarray) -> None:
        """Keep the log-normalizer of probabilities p = exp(eta - shift) / s formed elsewhere (a
        fused local loop: ``vmp.inference.local_pair``), per element ``shift`` and log s, so that
        :meth:`entropy` of (eta, p) needs no logarithm over the categories."""
        _remember(eta, p, shift, log_s)

    @staticmethod
    def largest(eta: np.ndarray) -> np.ndarray:
        """max_k eta_k of each element."""
        return _max_last(eta)[..., 0]

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """p = softmax(eta), shifted by the largest eta of each element."""
        eta = natural[0]
        if eta.size <= SUM_BLAS:
            p = cls.shifted_exp(eta)
            p /= sum_last(p)[..., None]
            return (p,)
        p, m, log_s = _softmax(eta)
        p.flags.writeable = False  # what _NORMALIZERS keeps for p stays true of p
        _remember(eta, p, m, log_s)
        return (p,)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = log sum_k exp(eta_k)."""
        e = natural[0]
        m = e.max(axis=-1, keepdims=True)
        return (np.log(np.exp(e - m).sum(axis=-1, keepdims=True)) + m)[..., 0]

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """-sum_k p_k log p_k, with 0 log 0 = 0; for the q whose moments were just computed,
        A(eta) - <eta, p> = log s - sum_k p_k (eta_k - m) with m = max_k eta_k and
        s = sum_k exp(eta_k - m) kept from the softmax (no logarithm over the categories)."""
        p = cls.moments(natural)[0] if moments is None else moments[0]
        known = _normalizer(natural[0], p)
        if known is None and natural[0].size > SUM_BLAS:  # the same bits as after the softmax
            again, m, log_s = _softmax(natural[0])
            known = (m, log_s) if np.array_equal(again, p) else None
        if known is not None:
            m, log_s = known
            h = log_s - (np.einsum("...k,...k->...", natural[0], p) - m)
            if np.isfinite(h).all():  # an eta of -inf (p_k = 0) takes the direct form
                return h
        plogp = np.where(p > 0, p, 1.0)
        np.log(plogp, out=plogp)
        plogp *= p
        return -sum_last(plogp)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """softmax(eta) is in the simplex: no NaN, no +inf, some entry finite (-inf is p_k = 0)."""
        e = natural[0]
        if np.isfinite(np.sum(e)):  # an inf or a NaN makes the sum one; read once, no N x K mask
            return np.ones(e.shape[:-1], dtype=bool)
        return super().valid(natural)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...]) -> Arrays:
        """u = one-hot(x) over K = event_shape[0] categories, for indices x."""
        return (np.eye(event_shape[0])[np.asarray(x)],)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Category indices, by inverting the cumulative probabilities."""
        p = cls.moments(natural)[0]
        c = np.cumsum(p, axis=-1)
        u = rng.random(tuple(size) + p.shape[:-1] + (1,))
        return np.minimum(np.sum(c < u, axis=-1), p.shape[-1] - 1)

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q's one-hot indicators: u_k ~ Bernoulli(p_k)."""
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.bernoulli(cls.moments(natural)[0])

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """scipy.stats.multinomial(1, p): its values are one-hot vectors, statistics(x)."""
        p = cls.moments(natural)[0]
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.multinomial(1, p)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        return (rng.normal(size=tuple(plate_shape) + tuple(event_shape)),)

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta = log p for the probabilities p."""
        with np.errstate(divide="ignore"):
            return (np.log(np.broadcast_to(mean, natural[0].shape)),)

    @classmethod
    def describe(cls, mean: np.ndarray, fmt=str) -> str:
        """How many elements have each category as their most probable."""
        if mean.ndim < 1:
            return super().describe(mean)
        counts = np.bincount(mean.reshape(-1, mean.shape[-1]).argmax(-1), minlength=mean.shape[-1])
        return f"mean shape {mean.shape}; most probable category counts {counts.tolist()}"
