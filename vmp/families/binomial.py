"""Binomial(x | n, p) with a known number of trials n per element: eta = log(p / (1 - p)),
u = x, A = n log(1 + e^eta), base measure h(x) = C(n, x).

The number of trials is data, not a parameter: ``Binomial.of(n)`` is the family bound to the
trials of one node (per element, broadcast over its plates). ``Binomial`` itself is bound to
``EXAMPLE_TRIALS`` for the table-driven tests. Its base measure is not 1, so it is observed-only.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy import special

from . import constraints
from ._count_sums import log_sum_over_counts
from .base import Arrays, Family
from .bernoulli import Bernoulli

EXAMPLE_TRIALS = np.array([1.0, 4.0, 10.0])


class Binomial(Family):
    name = "Binomial"
    event_ndims = (0,)
    support = constraints.integer_interval(0, EXAMPLE_TRIALS)
    arg_constraints = {"probability": constraints.unit_interval}
    unit_base_measure = False
    latent = False
    #: n, over the plates of the family's node
    trials: ClassVar[np.ndarray] = EXAMPLE_TRIALS
    bound_to = ("trials",)

    @classmethod
    def of(cls, trials: np.ndarray) -> type["Binomial"]:
        """The family with n = ``trials`` (non-negative integers over the plates)."""
        trials = np.asarray(trials, float)
        return cls.bound(trials=trials, support=constraints.integer_interval(0, trials, "trials"))

    natural_from = staticmethod(Bernoulli.natural_from)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """p = sigmoid(eta), and the trials n."""
        n, p = np.broadcast_arrays(cls.trials, special.expit(natural[0]))
        return {"probability": p, "trials": n}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = n sigmoid(eta)."""
        return (cls.trials * special.expit(natural[0]),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = n log(1 + e^eta)."""
        return cls.trials * np.logaddexp(0.0, natural[0])

    @classmethod
    def log_base_measure(cls, x: np.ndarray, event_shape: tuple[int, ...]) -> np.ndarray:
        """log h(x) = log C(n, x) = log Gamma(n + 1) - log Gamma(x + 1) - log Gamma(n - x + 1)."""
        n, x = cls.trials, np.asarray(x, float)
        return special.gammaln(n + 1.0) - special.gammaln(x + 1.0) - special.gammaln(n - x + 1.0)

    @classmethod
    def expected_log_base_measure(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """E[log C(n, x)] = sum_{x=0}^{n} Bin(x | n, p) log C(n, x), by enumeration (x up to max n)."""
        n, p = np.broadcast_arrays(cls.trials, special.expit(natural[0]))
        x = np.arange(int(n.max(initial=0)) + 1).reshape((-1,) + (1,) * p.ndim)
        inside = x <= n
        xs = np.where(inside, x, 0)
        log_c = special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_pmf = log_c + special.xlogy(xs, p) + special.xlog1py(n - xs, -p)
        return np.sum(np.where(inside, np.exp(log_pmf) * log_c, 0.0), axis=0)

    @classmethod
    def tempered_log_normalizer(cls, natural: Arrays, s: float) -> np.ndarray:
        """log sum_{x=0}^{n} Bin(x | n, p)^s = log sum_x exp{s (log C(n, x) + x eta)} - s n log(1 + e^eta)
        (Mandt et al. eq. (3)): C(n, x) is raised to s too; summed over x."""
        n, eta = np.broadcast_arrays(cls.trials, np.asarray(natural[0], float))

        def log_term(x):
            xs = np.minimum(x, n)
            return s * (special.gammaln(n + 1.0) - special.gammaln(xs + 1.0) - special.gammaln(n - xs + 1.0)
                        + xs * eta)
        return log_sum_over_counts(log_term, n * special.expit(eta), last=n) - s * n * np.logaddexp(0.0, eta)

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[x] = n p."""
        return cls.moments(natural)[0]

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = x."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        n, p = np.broadcast_arrays(cls.trials, special.expit(natural[0]))
        return rng.binomial(n.astype(np.int64), p, size=tuple(size) + p.shape).astype(float)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        from scipy import stats  # when asked for: scipy.stats is slow to import
        p = special.expit(natural[0])
        return stats.binom(cls.trials, p)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return (rng.normal(size=plate_shape),)
