"""Wishart(Lambda | n, V) with E[Lambda] = n V (as scipy.stats.wishart).

log p = (n - D - 1)/2 log|Lambda| - tr(V^-1 Lambda)/2 - A, eta = (-V^-1/2, (n - D - 1)/2),
u = (Lambda, log|Lambda|), A = n/2 log|V| + nD/2 log 2 + log Gamma_D(n/2).
"""
from __future__ import annotations

import numpy as np

from . import constraints
from ._linalg import Cholesky, inv_pd, logdet_pd, multidigamma, multigammaln, sym, vectorized
from .base import Arrays, Family


class Wishart(Family):
    name = "Wishart"
    event_ndims = (2, 0)
    support = constraints.positive_definite
    #: and dof > D - 1, which depends on D: ``constraints_for``
    arg_constraints = {"scale": constraints.positive_definite}
    scalable = True
    example_event = (2, 2)

    @classmethod
    def constraints_for(cls, event_shape: tuple[int, ...]) -> dict[str, constraints.Constraint]:
        """n > D - 1 (the density is proper) and V positive definite."""
        d = event_shape[-1]
        return {"dof": constraints.greater_than(d - 1.0, f"finite and exceed D - 1 = {d - 1}"), **cls.arg_constraints}

    @staticmethod
    def natural_from(dof: np.ndarray, scale: np.ndarray) -> Arrays:
        """eta = (-V^-1 / 2, (n - D - 1) / 2)."""
        scale = np.asarray(scale, float)
        d = scale.shape[-1]
        dof = np.asarray(dof, float) * np.ones(scale.shape[:-2])
        return -0.5 * inv_pd(scale), 0.5 * (dof - d - 1.0)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """n = 2 eta_2 + D + 1, V = (-2 eta_1)^-1."""
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
    def constrained(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """n, and V^-1 = -2 eta_1 for V (positive definite exactly when V is)."""
        d = natural[0].shape[-1]
        return {"dof": 2.0 * natural[1] + d + 1.0, "scale": -2.0 * natural[0]}

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = (Lambda, log|Lambda|)."""
        x = np.asarray(x, float)
        return x, logdet_pd(x)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Bartlett decomposition, vectorized over plates."""
        p = cls.parameters(natural)
        n, v = p["dof"], p["scale"]
        d = v.shape[-1]
        chol = np.linalg.cholesky(v)
        size = tuple(size)
        a = np.tril(rng.standard_normal(size + v.shape), -1)
        diag = np.sqrt(rng.chisquare(np.broadcast_to(n[..., None] - np.arange(d), size + n.shape + (d,))))
        a = a + diag[..., :, None] * np.eye(d)
        la = chol @ a
        return la @ np.swapaxes(la, -1, -2)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        p = cls.parameters(natural)
        from scipy import stats  # when asked for: scipy.stats is slow to import
        if p["scale"].ndim == 2:
            return stats.wishart(df=float(p["dof"]), scale=p["scale"])
        from ._scipy import Elementwise
        return Elementwise(lambda df, scale: stats.wishart(df=float(df), scale=scale), p["dof"].shape,
                           df=p["dof"], scale=p["scale"])

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        d = event_shape[0]
        a = rng.normal(size=tuple(plate_shape) + (d, d))
        return cls.natural_from(d + 1.0 + rng.uniform(size=plate_shape), a @ np.swapaxes(a, -1, -2) / d + np.eye(d))

    @classmethod
    def scale_dimension(cls, event_shape: tuple[int, ...]) -> int:
        """log|c Lambda| = log|Lambda| + D log c."""
        return event_shape[0]
