"""Truncated stick-breaking weights (Sethuraman 1994; Blei & Jordan 2006, section 3.2):
pi_k = v_k prod_{j<k} (1 - v_j) over K sticks v_k ~ Beta(a_k, b_k), independent.

The statistics u = (log pi, log(1 - v)) are a linear map of the sticks' Beta statistics
(log v_k, log(1 - v_k)) (log pi_k = log v_k + sum_{j<k} log(1 - v_j)), so the K Betas are one
exponential family whose first statistic is a Dirichlet's: wherever a factor reads E[log pi]
(a Categorical's probabilities, a gate's weights, the rows of a transition matrix) a stick-breaking
node fills the role (``reads_as``). With eta = (eta_0, eta_1),

    a_k = 1 + eta_0k,  b_k = 1 + eta_1k + sum_{i>k} eta_0i,  A = sum_k log B(a_k, b_k),

so a Categorical child's counts N_k give a_k = 1 + N_k and b_k = alpha + sum_{i>k} N_i under the
prior Beta(1, alpha) (Blei & Jordan eqs. (18)-(19); scikit-learn's "dirichlet_process"), and

    E[log pi_k] = psi(a_k) - psi(a_k + b_k) + sum_{j<k} (psi(b_j) - psi(a_j + b_j)).

``StickBreaking`` keeps all K sticks random (as scikit-learn's truncation: the weights sum to
1 - prod_k (1 - v_k), the rest lies past the truncation); ``ClosedStickBreaking`` fixes v_K = 1
(Blei & Jordan's truncation: the weights sum to 1), so only K - 1 sticks are random, the K-th
entry of u_1 is 0 and that of eta_1 is unused. A point is the weight vector pi; the density is
with respect to the sticks v (base measure 1 there).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family
from .dirichlet import Dirichlet

#: a stick drawn at 0 or 1 is moved this far inside, so that log v and log(1 - v) stay finite
TINY = 1e-300


class _Weights(constraints.Constraint):
    """Positive weights summing to below 1 (the rest past the truncation), or to 1 (``closed``)."""

    event_dim = 1

    def __init__(self, closed: bool):
        self.closed = closed
        self.description = ("positive and sum to 1 over the last axis" if closed else
                            "positive and sum to less than 1 over the last axis")

    def check(self, value):
        value = np.asarray(value, float)
        with np.errstate(invalid="ignore"):
            positive = np.all(np.isfinite(value) & (value > 0), axis=-1)
            total = value.sum(-1)
            return positive & (np.isclose(total, 1.0) if self.closed else total < 1.0)


class _Marginal:
    """Elementwise marginals with an exact mean and variance and empirical quantiles (the
    frozen-distribution methods that summaries read: mean, var, std, interval)."""

    def __init__(self, mean: np.ndarray, var: np.ndarray, draws: np.ndarray):
        self._mean, self._var, self._draws = mean, var, draws

    def mean(self) -> np.ndarray:
        return self._mean

    def var(self) -> np.ndarray:
        return self._var

    def std(self) -> np.ndarray:
        return np.sqrt(self._var)

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        tail = (1.0 - level) / 2.0
        return tuple(np.quantile(self._draws, [tail, 1.0 - tail], axis=0))


#: draws of q behind a stick-breaking marginal's credible intervals (their quantiles' error is
#: about 0.3% of the interval's width)
MARGINAL_DRAWS = 20000


class StickBreaking(Family):
    name = "StickBreaking"
    event_ndims = (1, 1)
    support = _Weights(closed=False)
    arg_constraints = {"alpha": constraints.shape, "beta": constraints.shape}
    reads_as = Dirichlet
    example_event = (3,)
    #: v_K = 1: the last stick takes all that is left
    closed: ClassVar[bool] = False

    @classmethod
    def _sticks(cls, natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) of every entry: a = 1 + eta_0, b = 1 + eta_1 + the sum of eta_0 after it."""
        e0, e1 = natural
        after = np.cumsum(e0[..., ::-1], axis=-1)[..., ::-1] - e0
        return 1.0 + e0, 1.0 + e1 + after

    @classmethod
    def _random(cls, k: int) -> slice:
        """The random sticks among the K entries."""
        return slice(0, k - 1 if cls.closed else k)

    @classmethod
    def natural_from(cls, alpha: np.ndarray, beta: np.ndarray) -> Arrays:
        """eta_0 = a - 1, eta_1 = b - 1 - the sum of eta_0 after each entry."""
        a, b = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(beta, float))
        e0 = a - 1.0
        after = np.cumsum(e0[..., ::-1], axis=-1)[..., ::-1] - e0
        return e0, b - 1.0 - after

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """The sticks' Beta parameters (a, b) (for ``ClosedStickBreaking`` the K-th entry is no stick)."""
        a, b = cls._sticks(natural)
        return {"alpha": a, "beta": b}

    @classmethod
    def _stick_moments(cls, natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """E[log v_k] and E[log(1 - v_k)] of the random sticks, 0 elsewhere."""
        a, b = cls._sticks(natural)
        keep = cls._random(a.shape[-1])
        log_v, log_w = np.zeros(a.shape), np.zeros(a.shape)
        total = special.digamma(a[..., keep] + b[..., keep])
        log_v[..., keep] = special.digamma(a[..., keep]) - total
        log_w[..., keep] = special.digamma(b[..., keep]) - total
        return log_v, log_w

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[log pi_k] = E[log v_k] + sum_{j<k} E[log(1 - v_j)], and E[log(1 - v_k)]."""
        log_v, log_w = cls._stick_moments(natural)
        before = np.cumsum(log_w, axis=-1) - log_w
        return log_v + before, log_w

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = sum over the random sticks of log Gamma(a_k) + log Gamma(b_k) - log Gamma(a_k + b_k)."""
        a, b = cls._sticks(natural)
        keep = cls._random(a.shape[-1])
        a, b = a[..., keep], b[..., keep]
        return (special.gammaln(a) + special.gammaln(b) - special.gammaln(a + b)).sum(-1)

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[pi_k] = E[v_k] prod_{j<k} E[1 - v_j] (E[v_K] = 1 for ``ClosedStickBreaking``)."""
        a, b = cls._sticks(natural)
        v = a / (a + b)
        if cls.closed:
            v[..., -1] = 1.0
        rest = np.cumprod(1.0 - v, axis=-1)
        return v * np.concatenate([np.ones(v.shape[:-1] + (1,)), rest[..., :-1]], axis=-1)

    @classmethod
    def marginal(cls, natural: Arrays):
        """The weights' elementwise marginals: exact mean and variance, pi_k = v_k prod_{j<k} (1 - v_j)
        of independent Beta sticks giving E[pi_k^2] = E[v_k^2] prod_{j<k} E[(1 - v_j)^2], and
        credible intervals from MARGINAL_DRAWS draws of q with a fixed seed (no closed form)."""
        a, b = cls._sticks(natural)
        v1, v2 = a / (a + b), a * (a + 1.0) / ((a + b) * (a + b + 1.0))
        w1, w2 = 1.0 - v1, b * (b + 1.0) / ((a + b) * (a + b + 1.0))
        if cls.closed:
            v1[..., -1] = v2[..., -1] = 1.0
        first = np.concatenate([np.ones(a.shape[:-1] + (1,)), np.cumprod(w1, axis=-1)[..., :-1]], axis=-1)
        second = np.concatenate([np.ones(a.shape[:-1] + (1,)), np.cumprod(w2, axis=-1)[..., :-1]], axis=-1)
        mean = v1 * first
        draws = cls.sample(natural, np.random.default_rng(0), (MARGINAL_DRAWS,))
        return _Marginal(mean, np.maximum(v2 * second - mean ** 2, 0.0), draws)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (log pi, log(1 - v)) of weights pi: 1 - v_k = r_k / r_{k-1} with r_k = 1 - sum_{j<=k} pi_j
        (0 at a closed K-th entry)."""
        pi = np.asarray(x, float)
        r = 1.0 - np.cumsum(pi, axis=-1)
        log_r = np.log(np.clip(r, TINY, None))
        log_w = log_r - np.concatenate([np.zeros(pi.shape[:-1] + (1,)), log_r[..., :-1]], axis=-1)
        if cls.closed:
            log_w[..., -1] = 0.0
        return np.log(pi), log_w

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Sticks v_k ~ Beta(a_k, b_k) (v_K = 1 when closed), kept inside (0, 1); pi from them."""
        a, b = cls._sticks(natural)
        shape = tuple(size) + a.shape
        v = np.clip(rng.beta(np.broadcast_to(a, shape), np.broadcast_to(np.maximum(b, TINY), shape)),
                    TINY, 1.0 - np.finfo(float).epsneg)
        if cls.closed:
            v[..., -1] = 1.0
        rest = np.cumprod(1.0 - v, axis=-1)
        return v * np.concatenate([np.ones(shape[:-1] + (1,)), rest[..., :-1]], axis=-1)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """The product of the sticks' scipy.stats Beta distributions, read at pi's sticks."""
        a, b = cls._sticks(natural)
        from ._scipy import Elementwise, Sticks
        if a.ndim == 1:
            return Sticks(a, b, cls.closed)
        return Elementwise(Sticks, a.shape[:-1], alpha=a, beta=b, closed=cls.closed)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        shape = tuple(plate_shape) + tuple(event_shape)
        return cls.natural_from(rng.uniform(0.5, 3.0, size=shape), rng.uniform(0.5, 3.0, size=shape))

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """Each stick's a and b plus Gamma(concentration, 1 / concentration) noise."""
        a, b = cls._sticks(natural)
        return cls.natural_from(*(p + rng.gamma(concentration, 1.0 / concentration, size=p.shape) for p in (a, b)))


class ClosedStickBreaking(StickBreaking):
    """Stick-breaking weights with v_K = 1 (the weights sum to 1)."""

    name = "ClosedStickBreaking"
    support = _Weights(closed=True)
    closed = True
