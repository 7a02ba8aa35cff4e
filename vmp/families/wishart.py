"""Wishart(Lambda | n, V) with E[Lambda] = n V (as scipy.stats.wishart).

log p = (n - D - 1)/2 log|Lambda| - tr(V^-1 Lambda)/2 - A, eta = (-V^-1/2, (n - D - 1)/2),
u = (Lambda, log|Lambda|), A = n/2 log|V| + nD/2 log 2 + log Gamma_D(n/2).
"""
from __future__ import annotations

import numpy as np

from ._linalg import Cholesky, inv_pd, is_pd, logdet_pd, multidigamma, multigammaln, sym, vectorized
from .base import Arrays, Family


class Wishart(Family):
    name = "Wishart"
    event_ndims = (2, 0)

    @staticmethod
    def natural_from(dof: np.ndarray, scale: np.ndarray) -> Arrays:
        scale = np.asarray(scale, float)
        d = scale.shape[-1]
        dof = np.asarray(dof, float) * np.ones(scale.shape[:-2])
        return -0.5 * inv_pd(scale), 0.5 * (dof - d - 1.0)

    @staticmethod
    def parameters(natural: Arrays) -> dict[str, np.ndarray]:
        d = natural[0].shape[-1]
        return {"dof": 2.0 * natural[1] + d + 1.0, "scale": inv_pd(-2.0 * sym(natural[0]))}

    @staticmethod
    def _scale(natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """V and log|V| from V^-1 = -2 eta_1: one Cholesky factorization of V^-1 for a
        vectorized stack (log|V| = -log|V^-1|), else LAPACK's inverse and a factorization of V."""
        if vectorized(natural[0].shape):
            f = Cholesky(natural[0], scale=-2.0)
            return f.inv(), -f.logdet()
        v = inv_pd(-2.0 * sym(natural[0]))
        return v, logdet_pd(v)

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[Lambda] = n V, E[log|Lambda|] = psi_D(n/2) + D log 2 + log|V| (Bishop eq. B.81)."""
        d = natural[0].shape[-1]
        n = 2.0 * natural[1] + d + 1.0
        v, logdet_v = cls._scale(natural)
        return n[..., None, None] * v, multidigamma(0.5 * n, d) + d * np.log(2.0) + logdet_v

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = n/2 log|V| + nD/2 log 2 + log Gamma_D(n/2)."""
        d = natural[0].shape[-1]
        n = 2.0 * natural[1] + d + 1.0
        logdet_v = cls._scale(natural)[1]
        return 0.5 * n * logdet_v + 0.5 * n * d * np.log(2.0) + multigammaln(0.5 * n, d)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        d = natural[0].shape[-1]
        n = 2.0 * natural[1] + d + 1.0
        return is_pd(-2.0 * natural[0]) & np.isfinite(n) & (n > d - 1)

    @staticmethod
    def statistics(x: np.ndarray) -> Arrays:
        x = np.asarray(x, float)
        return x, logdet_pd(x)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator) -> np.ndarray:
        """Bartlett decomposition, vectorized over plates."""
        p = cls.parameters(natural)
        n, v = p["dof"], p["scale"]
        d = v.shape[-1]
        chol = np.linalg.cholesky(v)
        a = np.tril(rng.standard_normal(v.shape), -1)
        diag = np.sqrt(rng.chisquare(n[..., None] - np.arange(d)))
        a = a + diag[..., :, None] * np.eye(d)
        la = chol @ a
        return la @ np.swapaxes(la, -1, -2)

    @classmethod
    def inverse_mean(cls, natural: Arrays) -> np.ndarray:
        """E[Lambda^-1] = V^-1 / (n - D - 1) (inverse-Wishart mean; infinite for n <= D + 1)."""
        d = natural[0].shape[-1]
        n = 2.0 * natural[1] + d + 1.0
        v_inv = -2.0 * sym(natural[0])
        ok = (n > d + 1)[..., None, None]
        return np.where(ok, v_inv / np.where(ok, n[..., None, None] - d - 1.0, 1.0), np.inf)

    @classmethod
    def t_marginal(cls, natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """(nu, S) of int N(x | m, Lambda^-1) W(Lambda | n, V) dLambda = St(x | m, S, nu) with
        nu = n - D + 1, S = V^-1 / nu (Bishop PRML eq. 2.161 with Lambda_St = nu V)."""
        nu = 2.0 * natural[1] + 2.0
        return nu, -2.0 * sym(natural[0]) / nu[..., None, None]

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        if p["scale"].ndim != 2:
            raise ValueError("to_scipy needs a single element: index the plates first")
        from scipy import stats  # when asked for: scipy.stats is slow to import
        return stats.wishart(df=float(p["dof"]), scale=p["scale"])
