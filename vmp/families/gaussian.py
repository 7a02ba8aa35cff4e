"""Multivariate Gaussian N(x | mu, Lambda^-1) over the last axis.

eta = (Lambda mu, -Lambda / 2), u(x) = (x, x x^T) (Winn & Bishop, table 1).
"""
from __future__ import annotations

import numpy as np

from . import constraints
from . import _gram
from ._linalg import _equilibrated, factor, inv_pd, keep_factor, known_factor, matvec, sym, vectorized
from .base import Arrays, Family

LOG2PI = np.log(2 * np.pi)
#: the precision 2 pi e of a pinned coordinate: a 1-D Gaussian of that precision has entropy 0
PIN = 2.0 * np.pi * np.e


def _ill(eta2: np.ndarray) -> bool:
    """Whether Lambda = -2 eta_2 as formed is ill-conditioned or not positive definite
    (``_gram.ill``), from the factorization its readers share."""
    try:
        return _gram.ill(factor(eta2, scale=-2.0), -2.0 * np.diagonal(eta2, axis1=-2, axis2=-1))
    except np.linalg.LinAlgError:
        return True


class Gaussian(Family):
    name = "Gaussian"
    event_ndims = (1, 2)
    outer = {1: (0, 0)}
    support = constraints.real_vector
    arg_constraints = {"mean": constraints.real_vector, "precision": constraints.positive_definite}
    location = True
    closed_optimum = True
    pins_coordinates = True
    spreads = True
    example_event = (2,)

    @staticmethod
    def natural_from(mean: np.ndarray, precision: np.ndarray) -> Arrays:
        """eta = (Lambda mu, -Lambda / 2)."""
        mean, precision = np.asarray(mean, float), np.asarray(precision, float)
        return np.einsum("...ij,...j->...i", precision, mean), -0.5 * precision

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """Lambda = -2 eta_2, Sigma = Lambda^-1, mu = Lambda^-1 eta_1 by a solve (Sigma and the
        solve from the factorization the moments share)."""
        precision = -2.0 * sym(natural[1])
        cov = inv_pd(natural[1], scale=-2.0)
        try:
            mean = factor(natural[1], scale=-2.0).solve(natural[0])
        except np.linalg.LinAlgError:
            mean = np.einsum("...ij,...j->...i", cov, natural[0])
        return {"mean": mean, "covariance": cov, "precision": precision}

    @classmethod
    def constrained(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """Lambda = -2 eta_2, and eta_1 = Lambda mu for mu: finite exactly when mu is."""
        return {"mean": natural[0], "precision": -2.0 * natural[1]}

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """``arg_constraints`` at eta: eta_1 = Lambda mu finite and Lambda = -2 eta_2 positive
        definite, read from the factorization that the moments and the entropy share
        (``_linalg.factor``): a non-finite entry leaves a non-finite pivot. Stacks that the
        column loop does not serve take the generic check."""
        if not vectorized(np.shape(natural[1])) and known_factor(natural[1], -2.0) is None:
            return super().valid(natural)
        with np.errstate(all="ignore"):
            finite = np.isfinite(natural[0])
            ok = factor(natural[1], scale=-2.0).ok
            # the common case in one reduction over the whole array (along a short last axis
            # numpy's reduction is several times slower)
            return np.array(ok) if finite.all() else np.all(finite, axis=-1) & ok

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[x] = mu, E[x x^T] = Sigma + mu mu^T, C-contiguous (the layout every reader wants:
        sparse products, contractions, the bound). A vectorized stack forms both in its own
        layout from the factorization its validity check made (``Cholesky.inv_outer``)."""
        if vectorized(np.shape(natural[1])):
            f = factor(natural[1], scale=-2.0)
            if np.all(f.ok):
                return f.inv_outer(natural[0])
        try:
            m, second = factor(natural[1], scale=-2.0).inv_outer(natural[0])
        except np.linalg.LinAlgError:  # not positive definite: the moments of the formula, by LU
            cov = inv_pd(natural[1], scale=-2.0)
            m = np.einsum("...ij,...j->...i", cov, natural[0])
            second = cov + m[..., :, None] * m[..., None, :]
        return np.ascontiguousarray(m), np.ascontiguousarray(second)

    @classmethod
    def spread(cls, natural: Arrays, c: np.ndarray) -> np.ndarray:
        """Var[c^T x] = c^T Lambda^-1 c for each vector c, by a triangular solve with Lambda's
        factor (``Cholesky.inv_quadratic``): c shaped (..., D) for a q without plates, plates +
        (K, D) (K vectors per element) for one with plates."""
        return factor(natural[1], scale=-2.0).inv_quadratic(c)

    @staticmethod
    def parts(message: Arrays | None):
        """The rows (B, z) of a message (B^T z, -1/2 B^T B) (declared by the message's factor,
        ``_gram.declare``), taken once; None."""
        return None if message is None else _gram.take(message[1])

    @staticmethod
    def declare_parts(total: Arrays | None, parts: list) -> None:
        """Declare on a sum of messages ``total`` the rows of its terms, stacked (``_gram.joined``:
        none unless every term has rows)."""
        rows = _gram.joined(parts)
        if rows is not None and total is not None and isinstance(total[1], np.ndarray):
            _gram.declare(total[1], rows)

    @staticmethod
    def factor_from_parts(total: Arrays, prior: Arrays | None, rows) -> None:
        """Where Lambda = -2 eta_2 of ``total`` = P + B^T B (P = the ``prior``'s, eta_1 = P m_0 +
        B^T z, (B, z) = ``rows()``) is ill-conditioned as formed (``_gram.ill``) or not positive
        definite, its factorization from P and B (``_gram.Gram``, per plate element) is kept for
        ``total``'s bits: moments, entropy, validity and draws read it."""
        if rows is None or prior is None or np.ndim(total[1]) < 2:
            return
        if not _ill(total[1]):
            return
        g = _gram.factorized((total[0], total[1]), (prior[0], prior[1]), rows())
        if g is not None:
            keep_factor(total[1], -2.0, g)

    @staticmethod
    def blended(out: Arrays, old: Arrays, new: Arrays, rho) -> None:
        """Where ``out`` = (1 - rho) ``old`` + rho ``new`` (a stochastic step) and ``old`` or ``new``
        is factorized from its parts, and Lambda of ``out`` is ill-conditioned as formed, its
        factorization from the stack of their roots (``_gram.blended``) is kept for ``out``'s
        bits."""
        if not any(isinstance(known_factor(n[1], -2.0), _gram.Gram) for n in (old, new)):
            return
        if not isinstance(out[1], np.ndarray) or not out[1].flags.owndata or not _ill(out[1]):
            return
        g = _gram.blended(out, old, new, rho)
        if g is not None:
            keep_factor(out[1], -2.0, g)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = 1/2 eta_1^T Lambda^-1 eta_1 - 1/2 log|Lambda| + D/2 log 2 pi, Lambda = -2 eta_2."""
        f = factor(natural[1], scale=-2.0)
        d = natural[0].shape[-1]
        mean = f.solve(natural[0])
        quad = np.einsum("...i,...i->...", natural[0], mean)
        return 0.5 * quad - 0.5 * f.logdet() + 0.5 * d * LOG2PI

    @classmethod
    def optimum(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """A(eta) = 1/2 eta_1^T E[x] - 1/2 log|Lambda| + D/2 log 2 pi (E[x] = Lambda^-1 eta_1; h = 1),
        from the moments and the kept factorization: no pass over E[x x^T]."""
        d = natural[0].shape[-1]
        quad = np.einsum("...i,...i->...", natural[0], moments[0])
        return 0.5 * quad - 0.5 * factor(natural[1], scale=-2.0).logdet() + 0.5 * d * LOG2PI

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H = D/2 (1 + log 2 pi) - 1/2 log|Lambda|."""
        d = natural[0].shape[-1]
        return 0.5 * d * (1.0 + LOG2PI) - 0.5 * factor(natural[1], scale=-2.0).logdet()

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (x, x x^T)."""
        x = np.asarray(x, float)
        return x, x[..., :, None] * x[..., None, :]

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """mu + L z with Sigma = L L^T and z standard normal (Sigma and L from the shared
        factorizations, ``_linalg.factor``: one draw per element of a vectorized stack is
        ``draw``, in the stack's layout; a Sigma shared by a plate applied by one product,
        ``_linalg.matvec``)."""
        known = known_factor(_gram.single(natural[1]), -2.0) or known_factor(natural[1], -2.0)
        if known is not None:  # a precision factorized from its parts: mean + E L^-T z (E Lambda E = L L^T)
            eta1 = np.asarray(natural[0], dtype=float)
            one = _gram.single(eta1[..., None]) if not known.plates else None
            mean = known.solve(one[..., 0]) if one is not None else known.solve(eta1)
            z = rng.standard_normal(tuple(size) + np.broadcast_shapes(eta1.shape, np.shape(natural[1])[:-1]))
            return mean + known.spread_draws(z)
        if not size and vectorized(np.shape(natural[1])):
            f = factor(natural[1], scale=-2.0)
            shape = f.plates + (f.d,)
            if np.all(f.ok) and np.shape(natural[0]) == shape:
                return f.draw(natural[0], rng.standard_normal(shape))
        cov = inv_pd(natural[1], scale=-2.0)
        mean = factor(natural[1], scale=-2.0).solve(natural[0])
        z = rng.standard_normal(tuple(size) + mean.shape)
        try:
            chol = factor(cov).lower() if vectorized(cov.shape) else np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:  # Sigma not positive definite once rounded (a precision of scale 1e16)
            return mean + cls._by_precision(natural[1], z)
        x = matvec(chol, z)
        x += mean
        return x

    @staticmethod
    def _by_precision(eta2: np.ndarray, z: np.ndarray) -> np.ndarray:
        """E L^-T z with E Lambda E = L L^T (Lambda = -2 eta2 equilibrated, ``_linalg._equilibrated``):
        a draw of covariance Lambda^-1 = E L^-T L^-1 E without forming Lambda^-1."""
        e, scaled = _equilibrated(-2.0 * np.asarray(eta2, dtype=float))
        chol = np.linalg.cholesky(scaled)
        upper = np.broadcast_to(np.swapaxes(chol, -1, -2), z.shape[:-1] + chol.shape[-2:])
        return e * np.linalg.solve(upper, z[..., None])[..., 0]

    @staticmethod
    def pin(natural: Arrays, observed: np.ndarray, x: np.ndarray) -> Arrays:
        """q(x_m | x_o = data) embedded in the D x D layout, for elements whose coordinates
        ``observed`` (plates + (D,), True where observed) are pinned at ``x``.

        The density exp(eta_1^T x + x^T eta_2 x) with x_o fixed is, in x_m, the Gaussian with
        eta_2' = eta_2[m, m] (precision Lambda_mm) and eta_1' = eta_1[m] + 2 eta_2[m, o] x_o
        (= eta_1[m] - Lambda_mo x_o). The observed coordinates get eta_1 = PIN x_o, eta_2 = -PIN/2 I
        and no coupling: the embedded q is q(x_m) times independent N(x_o, 1/PIN), so its mean is
        (x_o, E[x_m]), its covariance is Cov_mm on the masked block, and its entropy is that of
        q(x_m), 1/2 log det(2 pi e Cov_mm) (each pinned coordinate adds 1/2 log(2 pi e / PIN) = 0).
        The map is affine in eta and idempotent, so a blend of pinned parameters is pinned.
        Only E[x_o x_o^T] = x_o x_o^T + I/PIN differs from the moments of x_o held at the data:
        ``pinned_entries`` says which entries a caller replaces by the data's statistics."""
        o = np.asarray(observed, bool)
        eta1, eta2 = np.asarray(natural[0], float), np.asarray(natural[1], float)
        d = o.shape[-1]
        xo = np.where(o, x, 0.0)
        free = (~o).astype(float)
        eta2p = eta2 * free[..., :, None]
        eta2p *= free[..., None, :]
        eta2p.reshape(eta2p.shape[:-2] + (d * d,))[..., ::d + 1] -= 0.5 * PIN * o
        eta1p = eta1 + 2.0 * matvec(eta2, xo)
        eta1p *= free
        eta1p += PIN * xo
        return eta1p, eta2p

    @staticmethod
    def pinned_entries(observed: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per statistic (x, x x^T), the entries fixed by the observed coordinates: o and o o^T."""
        o = np.asarray(observed, bool)
        return o, o[..., :, None] & o[..., None, :]

    @classmethod
    def pinned_parameters(cls, natural: Arrays, observed: np.ndarray) -> dict[str, np.ndarray]:
        """Mean and covariance of q with the ``observed`` coordinates at their data (``pin``'s
        parameters): covariance Cov_mm on the masked block, 0 in the rows and columns of x_o."""
        p = cls.parameters(natural)
        free = ~np.asarray(observed, bool)
        return {"mean": p["mean"], "covariance": p["covariance"] * (free[..., :, None] & free[..., None, :])}

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        if p["mean"].ndim == 1:
            return stats.multivariate_normal(p["mean"], p["covariance"])
        from ._scipy import Elementwise
        return Elementwise(stats.multivariate_normal, p["mean"].shape[:-1], mean=p["mean"], cov=p["covariance"])

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q: x_d ~ N(mu_d, Sigma_dd)."""
        p = cls.parameters(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.norm(p["mean"], np.sqrt(np.diagonal(p["covariance"], axis1=-2, axis2=-1)))

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        d = event_shape[0]
        a = rng.normal(size=tuple(plate_shape) + (d, d))
        return cls.natural_from(rng.normal(size=tuple(plate_shape) + (d,)), a @ np.swapaxes(a, -1, -2) + np.eye(d))

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta_1 = Lambda m = -2 eta_2 m, Lambda kept."""
        lam_m = matvec(natural[1], np.broadcast_to(mean, natural[0].shape))
        return -2.0 * lam_m, natural[1]

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """The mean moved to a draw from q itself."""
        return cls.with_mean(natural, cls.sample(natural, rng))
