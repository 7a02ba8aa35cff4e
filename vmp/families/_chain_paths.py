"""A Markov chain's distribution by enumeration of its K^T paths: the exact reference that
``CategoricalMarkovChain.to_scipy`` gives where scipy.stats has no distribution over paths.

    log q(z) = sum_t U_t(z_t) + sum_{t < T-1} P_t(z_t, z_{t+1}) - log Z,
    log Z = log sum_z exp(...) over all K^T paths z,

with no recursion: every path is scored and the normalizer is one log-sum-exp, so it checks the
forward-backward recursions independently (for small K^T).
"""
from __future__ import annotations

import itertools

import numpy as np

#: the most paths enumerated per chain
MAX_PATHS = 100_000


class Paths:
    """The chains with unary potentials (..., T, K) and pairwise ones (..., T, K, K); the leading
    axes are independent chains. ``entropy()``, ``logpmf(x)`` and ``mean`` are per chain, as a
    frozen scipy distribution's are per element."""

    def __init__(self, unary: np.ndarray, pairwise: np.ndarray):
        from scipy.special import logsumexp  # when asked for: scipy is slow to import

        t_len, k = unary.shape[-2:]
        if k ** t_len > MAX_PATHS:
            raise ValueError(f"a chain of {t_len} steps over {k} states has {k ** t_len} paths; enumeration "
                             f"stops at {MAX_PATHS}")
        self.k = k
        self.paths = np.array(list(itertools.product(range(k), repeat=t_len)))  # (k^T, T)
        steps = np.arange(t_len)
        score = unary[..., steps, self.paths].sum(-1)  # (..., k^T)
        score = score + pairwise[..., steps[:-1], self.paths[:, :-1], self.paths[:, 1:]].sum(-1)
        self.log_p = score - logsumexp(score, axis=-1, keepdims=True)

    def entropy(self) -> np.ndarray:
        """-sum_z q(z) log q(z), with 0 log 0 = 0."""
        p = np.exp(self.log_p)
        return -np.sum(np.where(p > 0, p * self.log_p, 0.0), axis=-1)

    def logpmf(self, x: np.ndarray) -> np.ndarray:
        """log q(path) for paths x (..., T), or their one-hot statistics (..., T, K)."""
        x = np.asarray(x)
        if x.ndim == self.log_p.ndim + 1:
            x = x.argmax(-1)
        index = np.ravel_multi_index(tuple(np.moveaxis(x, -1, 0)), (self.k,) * x.shape[-1])
        return np.take_along_axis(self.log_p, index[..., None], axis=-1)[..., 0]

    @property
    def mean(self) -> np.ndarray:
        """The marginals q(z_t = k), (..., T, K)."""
        onehot = np.eye(self.k)[self.paths]  # (k^T, T, K)
        return np.einsum("...p,ptk->...tk", np.exp(self.log_p), onehot)
