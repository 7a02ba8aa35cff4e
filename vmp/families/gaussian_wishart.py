"""The joint Normal-Wishart q(mu, Lambda) = N(mu | m, (beta Lambda)^-1) W(Lambda | nu, W)
(Bishop PRML eqs. (10.59)-(10.63), section 2.3.6; BayesPy's GaussianWishart).

With u = (Lambda mu, mu^T Lambda mu, Lambda, log|Lambda|),

    log p(mu, Lambda) = <eta, u> - A(eta),
    eta = (beta m, -beta/2, -(W^-1 + beta m m^T)/2, (nu - D)/2),
    A = D/2 log 2 pi - D/2 log beta + nu/2 log|W| + nu D/2 log 2 + log Gamma_D(nu/2)

(the Gaussian's 1/2 log|beta Lambda| joins the Wishart's (nu - D - 1)/2 log|Lambda|). A point is
one array plates + (D + 1, D): Lambda in its first D rows, mu in its last (``split``, ``join``).
A Gaussian child x ~ N(mu, Lambda^-1) reads all four statistics: its expected log-density
-1/2 tr(E[Lambda] x x^T) + x^T E[Lambda mu] - 1/2 E[mu^T Lambda mu] + 1/2 E[log|Lambda|] - D/2 log 2 pi
is linear in them, so the means and precisions of a mixture are updated together.
"""
from __future__ import annotations

import numpy as np

from . import constraints
from ._linalg import inv_pd, matvec, sym
from .base import Arrays, Family
from .wishart import Wishart

LOG2PI = np.log(2 * np.pi)


def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mu, Lambda) of points shaped plates + (D + 1, D)."""
    x = np.asarray(x, float)
    return x[..., -1, :], x[..., :-1, :]


def join(mu: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """The point (mu, Lambda) as one array plates + (D + 1, D)."""
    mu, precision = np.asarray(mu, float), np.asarray(precision, float)
    return np.concatenate([precision, mu[..., None, :]], axis=-2)


class _MeanAndPrecision(constraints.Constraint):
    """Points (mu, Lambda): mu finite, Lambda symmetric positive definite."""

    event_dim = 2
    description = "a finite mean and a symmetric positive-definite precision (rows: Lambda, then mu)"

    def check(self, value):
        mu, precision = split(value)
        return constraints.real_vector.check(mu) & constraints.positive_definite.check(precision)


def _outer(m: np.ndarray) -> np.ndarray:
    return m[..., :, None] * m[..., None, :]


class GaussianWishart(Family):
    name = "GaussianWishart"
    event_ndims = (1, 0, 2, 0)
    support = _MeanAndPrecision()
    clusters = True
    #: and dof > D - 1, which depends on D: ``constraints_for``
    arg_constraints = {"mean": constraints.real_vector, "beta": constraints.positive,
                       "scale": constraints.positive_definite}
    example_event = (2,)

    @classmethod
    def constraints_for(cls, event_shape: tuple[int, ...]) -> dict[str, constraints.Constraint]:
        """beta > 0, nu > D - 1, W positive definite."""
        return {**cls.arg_constraints, "dof": Wishart.constraints_for(tuple(event_shape) * 2)["dof"]}

    @staticmethod
    def natural_from(mean: np.ndarray, beta: np.ndarray, dof: np.ndarray, scale: np.ndarray) -> Arrays:
        """eta = (beta m, -beta/2, -(W^-1 + beta m m^T)/2, (nu - D)/2)."""
        scale = np.asarray(scale, float)
        d = scale.shape[-1]
        plates = np.broadcast_shapes(np.shape(mean)[:-1], np.shape(beta), np.shape(dof), scale.shape[:-2])
        m = np.broadcast_to(np.asarray(mean, float), plates + (d,))
        beta = np.broadcast_to(np.asarray(beta, float), plates)
        dof = np.broadcast_to(np.asarray(dof, float), plates)
        w_inv = np.broadcast_to(inv_pd(scale), plates + (d, d))
        return (beta[..., None] * m, -0.5 * beta, -0.5 * (w_inv + beta[..., None, None] * _outer(m)),
                0.5 * (dof - d))

    @staticmethod
    def _parts(natural: Arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(m, beta, W^-1, nu): beta = -2 eta_2, m = eta_1 / beta, W^-1 = -2 eta_3 - eta_1 eta_1^T / beta,
        nu = 2 eta_4 + D."""
        d = natural[0].shape[-1]
        beta = -2.0 * natural[1]
        m = natural[0] / beta[..., None]
        w_inv = -2.0 * sym(natural[2]) - _outer(natural[0]) / beta[..., None, None]
        return m, beta, w_inv, 2.0 * natural[3] + d

    @classmethod
    def wishart(cls, natural: Arrays) -> Arrays:
        """The natural parameters of the marginal q(Lambda) = W(nu, W): (-W^-1/2, (nu - D - 1)/2)."""
        _, _, w_inv, nu = cls._parts(natural)
        return -0.5 * w_inv, 0.5 * (nu - natural[0].shape[-1] - 1.0)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """m, beta, nu, W, and E[Lambda] = nu W ("precision")."""
        m, beta, w_inv, nu = cls._parts(natural)
        scale = inv_pd(w_inv)
        return {"mean": m, "beta": beta, "dof": nu, "scale": scale, "precision": nu[..., None, None] * scale}

    @classmethod
    def constrained(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """m, beta, nu and W^-1 for W (positive definite exactly when W is)."""
        m, beta, w_inv, nu = cls._parts(natural)
        return {"mean": m, "beta": beta, "dof": nu, "scale": w_inv}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[Lambda mu] = nu W m, E[mu^T Lambda mu] = D/beta + nu m^T W m, E[Lambda] = nu W,
        E[log|Lambda|] = psi_D(nu/2) + D log 2 + log|W| (Bishop eqs. (10.64)-(10.65))."""
        m, beta, _, _ = cls._parts(natural)
        d = m.shape[-1]
        precision, log_det = Wishart.moments(cls.wishart(natural))
        lam_m = matvec(precision, m)
        return lam_m, d / beta + np.einsum("...i,...i->...", m, lam_m), precision, log_det

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = D/2 log 2 pi - D/2 log beta + A_Wishart(nu, W)."""
        d = natural[0].shape[-1]
        beta = -2.0 * natural[1]
        return 0.5 * d * (LOG2PI - np.log(beta)) + Wishart.log_normalizer(cls.wishart(natural))

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[mu] = m (E[Lambda] is ``parameters()["precision"]``)."""
        return cls._parts(natural)[0]

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (Lambda mu, mu^T Lambda mu, Lambda, log|Lambda|) of points (rows Lambda, then mu)."""
        mu, precision = split(x)
        lam_mu = matvec(precision, mu)
        _, log_det = Wishart.statistics(precision)
        return lam_mu, np.einsum("...i,...i->...", mu, lam_mu), precision, log_det

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Lambda ~ W(nu, W), then mu = m + C^-T z / sqrt(beta) with Lambda = C C^T and z standard
        normal (covariance (beta Lambda)^-1)."""
        m, beta, _, _ = cls._parts(natural)
        precision = Wishart.sample(cls.wishart(natural), rng, size)
        chol = np.linalg.cholesky(precision)
        z = rng.standard_normal(precision.shape[:-1])
        step = np.linalg.solve(np.swapaxes(chol, -1, -2), z[..., None])[..., 0]
        return join(m + step / np.sqrt(beta)[..., None], precision)

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of E[mu]'s coordinates: mu ~ St(m, [(nu - D + 1) beta W]^-1, nu - D + 1)
        (Bishop PRML eq. (10.81) without the data point's own variance), so mu_d is a Student-t with
        nu - D + 1 degrees of freedom, location m_d and squared scale [(nu - D + 1) beta W]^-1_dd."""
        m, beta, w_inv, nu = cls._parts(natural)
        dof = nu - m.shape[-1] + 1.0
        var = np.diagonal(w_inv, axis1=-2, axis2=-1) / (dof * beta)[..., None]
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.t(dof[..., None], loc=m, scale=np.sqrt(var))

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """N(mu | m, (beta Lambda)^-1) W(Lambda | nu, W) from scipy.stats' two distributions."""
        p = cls.parameters(natural)
        from ._scipy import Elementwise, MeanPrecision
        if p["mean"].ndim == 1:
            return MeanPrecision(p["mean"], p["beta"], p["dof"], p["scale"])
        return Elementwise(MeanPrecision, p["beta"].shape, mean=p["mean"], beta=p["beta"], dof=p["dof"],
                           scale=p["scale"])

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        d = event_shape[0]
        a = rng.normal(size=tuple(plate_shape) + (d, d))
        return cls.natural_from(rng.normal(size=tuple(plate_shape) + (d,)), rng.uniform(0.5, 2.0, size=plate_shape),
                                d + 1.0 + rng.uniform(size=plate_shape), a @ np.swapaxes(a, -1, -2) / d + np.eye(d))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """m moved to ``mean``; beta, nu and W kept."""
        _, beta, w_inv, nu = cls._parts(natural)
        m = np.broadcast_to(np.asarray(mean, float), natural[0].shape)
        return cls.natural_from(m, beta, nu, inv_pd(w_inv))

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """m moved to a draw of mu from q itself."""
        return cls.with_mean(natural, split(cls.sample(natural, rng))[0])
