"""The joint Normal-Gamma q(mu, tau) = N(mu | m, 1/(beta tau)) Gamma(tau | a, b), elementwise over
plates (Bishop PRML eq. (2.154); BayesPy's GaussianGamma; one per coordinate is scikit-learn's
"diag" BayesianGaussianMixture, with a = nu/2 and b = 1/(2 W)).

With u = (tau mu, tau mu^2, tau, log tau),

    log p(mu, tau) = <eta, u> - A(eta),
    eta = (beta m, -beta/2, -(b + beta m^2/2), a - 1/2),
    A = 1/2 log 2 pi - 1/2 log beta + log Gamma(a) - a log b.

A point is the pair (mu, tau) on a last axis of 2. A Normal child x ~ N(mu, 1/tau) has the
expected log-density -1/2 E[tau] x^2 + x E[tau mu] - 1/2 E[tau mu^2] + 1/2 E[log tau] - 1/2 log 2 pi.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from . import constraints
from .base import Arrays, Family

LOG2PI = np.log(2 * np.pi)


class _MeanAndPrecision(constraints.Constraint):
    """Points (mu, tau): mu finite, tau positive."""

    event_dim = 1
    description = "pairs (mu, tau) of a finite mean and a positive precision"

    def check(self, value):
        value = np.asarray(value, float)
        return constraints.real.check(value[..., 0]) & constraints.positive.check(value[..., 1])


class NormalGamma(Family):
    name = "NormalGamma"
    event_ndims = (0, 0, 0, 0)
    support = _MeanAndPrecision()
    clusters = True
    arg_constraints = {"mean": constraints.real, "beta": constraints.positive, "shape": constraints.shape,
                       "rate": constraints.positive}

    @staticmethod
    def natural_from(mean: np.ndarray, beta: np.ndarray, shape: np.ndarray, rate: np.ndarray) -> Arrays:
        """eta = (beta m, -beta/2, -(b + beta m^2/2), a - 1/2)."""
        m, beta, a, b = np.broadcast_arrays(*(np.asarray(v, float) for v in (mean, beta, shape, rate)))
        return beta * m, -0.5 * beta, -(b + 0.5 * beta * m * m), a - 0.5

    @staticmethod
    def _parts(natural: Arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(m, beta, a, b): beta = -2 eta_2, m = eta_1 / beta, a = eta_4 + 1/2,
        b = -eta_3 - eta_1^2 / (2 beta)."""
        beta = -2.0 * natural[1]
        return natural[0] / beta, beta, natural[3] + 0.5, -natural[2] - 0.5 * natural[0] ** 2 / beta

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """m, beta, a, b, and E[tau] = a / b ("precision")."""
        m, beta, a, b = cls._parts(natural)
        return {"mean": m, "beta": beta, "shape": a, "rate": b, "precision": a / b}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[tau mu] = (a/b) m, E[tau mu^2] = 1/beta + (a/b) m^2, E[tau] = a/b,
        E[log tau] = psi(a) - log b."""
        m, beta, a, b = cls._parts(natural)
        tau = a / b
        return tau * m, 1.0 / beta + tau * m * m, tau, special.digamma(a) - np.log(b)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = 1/2 log 2 pi - 1/2 log beta + log Gamma(a) - a log b."""
        _, beta, a, b = cls._parts(natural)
        return 0.5 * (LOG2PI - np.log(beta)) + special.gammaln(a) - a * np.log(b)

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[mu] = m (E[tau] is ``parameters()["precision"]``)."""
        return cls._parts(natural)[0]

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (tau mu, tau mu^2, tau, log tau) of pairs (mu, tau)."""
        x = np.asarray(x, float)
        mu, tau = x[..., 0], x[..., 1]
        return tau * mu, tau * mu * mu, tau, np.log(tau)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """tau ~ Gamma(a, b), then mu ~ N(m, 1/(beta tau)); pairs (mu, tau)."""
        m, beta, a, b = cls._parts(natural)
        shape = tuple(size) + np.shape(m)
        tau = rng.gamma(np.broadcast_to(a, shape), 1.0 / np.broadcast_to(b, shape))
        mu = m + rng.standard_normal(shape) / np.sqrt(beta * tau)
        return np.stack([mu, tau], axis=-1)

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of E[mu]: mu ~ St(m, b / (a beta), 2a) (Bishop PRML eq. (2.159))."""
        m, beta, a, b = cls._parts(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.t(2.0 * a, loc=m, scale=np.sqrt(b / (a * beta)))

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """N(mu | m, 1/(beta tau)) Gamma(tau | a, b) from scipy.stats' two distributions."""
        p = cls.parameters(natural)
        from ._scipy import Elementwise, MeanGammaPrecision
        if np.ndim(p["mean"]) == 0:
            return MeanGammaPrecision(p["mean"], p["beta"], p["shape"], p["rate"])
        return Elementwise(MeanGammaPrecision, np.shape(p["mean"]), mean=p["mean"], beta=p["beta"],
                           shape=p["shape"], rate=p["rate"])

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.normal(size=plate_shape), rng.uniform(0.5, 2.0, size=plate_shape),
                                rng.uniform(1.0, 3.0, size=plate_shape), rng.uniform(0.5, 2.0, size=plate_shape))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """m moved to ``mean``; beta, a and b kept."""
        _, beta, a, b = cls._parts(natural)
        return cls.natural_from(np.broadcast_to(mean, np.shape(beta)), beta, a, b)

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """m moved to a draw of mu from q itself."""
        return cls.with_mean(natural, cls.sample(natural, rng)[..., 0])
