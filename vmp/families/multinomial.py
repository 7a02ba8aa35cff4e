"""Multinomial(x | n, p) over count vectors x with n = sum_k x_k trials: eta = log p (up to a
constant), u = x, A = n log sum_k e^eta_k, base measure h(x) = n! / prod_k x_k!.

The number of trials is data, not a parameter: ``Multinomial.of(n)`` is the family bound to the
trials of one node (per element, broadcast over its plates; a node reads them from its data).
``Multinomial`` itself is bound to ``EXAMPLE_TRIALS`` for the table-driven tests. Its base
measure is not 1, so it is observed-only.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy import special

from . import constraints
from ._count_sums import log_multinomial_sum
from .base import Arrays, Family
from .categorical import Categorical

EXAMPLE_TRIALS = np.array([1.0, 4.0, 10.0])


class _Counts(constraints.Constraint):
    """Vectors of non-negative integers over the last axis (summing to n when n is given)."""

    event_dim = 1

    def __init__(self, trials=None):
        self.trials = trials
        self.description = "vectors of non-negative integer counts" + (
            "" if trials is None else " summing to the number of trials")

    def check(self, value):
        value = np.asarray(value, float)
        ok = np.all(constraints.nonnegative_integer.check(value), axis=-1)
        return ok if self.trials is None else ok & (value.sum(-1) == self.trials)


class Multinomial(Family):
    name = "Multinomial"
    event_ndims = (1,)
    support = _Counts(EXAMPLE_TRIALS)
    arg_constraints = {"probabilities": constraints.simplex}
    unit_base_measure = False
    latent = False
    example_event = (3,)
    #: n, over the plates of the family's node
    trials: ClassVar[np.ndarray] = EXAMPLE_TRIALS
    bound_to = ("trials",)

    @classmethod
    def of(cls, trials: np.ndarray) -> type["Multinomial"]:
        """The family with n = ``trials`` (non-negative integers over the plates)."""
        trials = np.asarray(trials, float)
        return cls.bound(trials=trials, support=_Counts(trials))

    @staticmethod
    def natural_from(probabilities: np.ndarray) -> Arrays:
        """eta = log p."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.log(np.asarray(probabilities, float)),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """p = softmax(eta), and the trials n."""
        p = Categorical.moments(natural)[0]
        return {"probabilities": p, "trials": np.broadcast_to(cls.trials, p.shape[:-1])}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = n softmax(eta)."""
        return (np.asarray(cls.trials)[..., None] * Categorical.moments(natural)[0],)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = n log sum_k e^eta_k."""
        return cls.trials * Categorical.log_normalizer(natural)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """softmax(eta) is in the simplex (as a Categorical's)."""
        return Categorical.valid(natural)

    @classmethod
    def log_base_measure(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> np.ndarray:
        """log h(x) = log Gamma(n + 1) - sum_k log Gamma(x_k + 1), n = sum_k x_k."""
        x = np.asarray(x, float)
        return special.gammaln(x.sum(-1) + 1.0) - special.gammaln(x + 1.0).sum(-1)

    @classmethod
    def expected_log_base_measure(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """E[log h(x)] = log n! - sum_k E[log x_k!], each x_k ~ Binomial(n, p_k), by enumeration."""
        p = Categorical.moments(natural)[0]
        n = np.broadcast_to(cls.trials, p.shape[:-1])[..., None]
        x = np.arange(int(n.max(initial=0)) + 1.0).reshape((-1,) + (1,) * p.ndim)
        inside = x <= n
        xs = np.where(inside, x, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = (special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
                       + special.xlogy(xs, p) + special.xlog1py(n - xs, -p))
        e_log_fact = np.sum(np.where(inside, np.exp(log_pmf) * special.gammaln(xs + 1.0), 0.0), axis=0)
        return special.gammaln(n[..., 0] + 1.0) - e_log_fact.sum(-1)

    @classmethod
    def tempered_log_normalizer(cls, natural: Arrays, s: float) -> np.ndarray:
        """log sum_x Mult(x | n, p)^s over the count vectors summing to n (Mandt et al. eq. (3)):
        the coefficient n! / prod_k x_k! is raised to s too; a product of polynomials."""
        log_p = np.asarray(natural[0], float) - Categorical.log_normalizer(natural)[..., None]
        return log_multinomial_sum(log_p, cls.trials, s)

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = x."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        p = Categorical.moments(natural)[0]
        n = np.broadcast_to(cls.trials, p.shape[:-1]).astype(np.int64)
        return rng.multinomial(n, p, size=tuple(size) + p.shape[:-1]).astype(float)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        from scipy import stats  # when asked for: scipy.stats is slow to import
        p = Categorical.moments(natural)[0]
        n = np.broadcast_to(cls.trials, p.shape[:-1])
        if p.ndim == 1:
            return stats.multinomial(int(n), p)
        from ._scipy import Elementwise
        return Elementwise(lambda n, p: stats.multinomial(int(n), p), p.shape[:-1], n=n, p=p)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        return (rng.normal(size=tuple(plate_shape) + tuple(event_shape)),)
