"""Gaussian Markov chains in information form: the forward pass (the information filter).

A chain x_0 .. x_{T-1} (x_t in R^D) with log-density, up to its normalizer,

    -1/2 sum_t x_t^T P_t x_t + sum_{t < T-1} x_t^T C_t x_{t+1} + sum_t b_t^T x_t

has the block-tridiagonal precision with diagonal blocks P_t and off-diagonal blocks -C_t, and
the linear term b. The forward pass is the block LDL^T factorization of that precision (the
information filter: Schur complements, Golub & Van Loan section 4.5):

    D_0 = P_0,   D_t = P_t - C_{t-1}^T D_{t-1}^-1 C_{t-1},
    b~_0 = b_0,  b~_t = b_t + C_{t-1}^T D_{t-1}^-1 b~_{t-1},

with S_t = D_t^-1, G_t = S_t C_t and m_t = S_t b~_t. (D_t, b~_t) is the information form of x_t's
marginal given the potentials of the steps up to t, the filter's (a backward pass through
q(x_t | x_{t+1}) = N(m_t + G_t x_{t+1}, S_t) would be the RTS smoother; ``_cyclic.py`` computes
the smoothed marginals in log T vectorized levels instead). Each step is one solve and two array
operations over all chains; every Schur complement is a positive-definite D x D matrix. Arrays
are time-major, (T, S, ...).
"""
from __future__ import annotations

import numpy as np

from ._linalg import sym


def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a^-1 b for a stack of matrices; NaN for a singular one (its chain is then not valid)."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        out = np.full(b.shape, np.nan)
        for i in np.ndindex(a.shape[:-2]):
            try:
                out[i] = np.linalg.solve(a[i], b[i])
            except np.linalg.LinAlgError:
                pass
        return out


def forward(precision: np.ndarray, coupling: np.ndarray, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The forward pass's D_t (T, S, D, D) and b~_t (T, S, D) for chains with blocks P (T, S, D, D),
    C (T-1, S, D, D) and b (T, S, D), one solve per step: with X_t = [D_t | -b~_t] and
    D_t^-1 [C_t | b~_t] = [G_t | m_t], X_{t+1} = [P_{t+1} | -b_{t+1}] - C_t^T [G_t | m_t]."""
    steps, chains, d = linear.shape
    x = np.empty((steps, chains, d, d + 1))  # [D_t | -b~_t]
    x[..., :d] = precision
    np.negative(linear, out=x[..., d])
    rhs = np.zeros((chains, d, d + 1))  # [C_t | b~_t]
    step = np.empty((chains, d, d + 1))
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(steps - 1):
            rhs[..., :d] = coupling[t]
            np.negative(x[t, ..., d], out=rhs[..., d])
            np.matmul(_t(coupling[t]), _solve(x[t, ..., :d], rhs), out=step)
            x[t + 1] -= step
    return sym(x[..., :d]), -x[..., d]
