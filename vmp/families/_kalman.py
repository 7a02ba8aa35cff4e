"""Gaussian Markov chains in information form: the block-tridiagonal solve (an RTS smoother).

A chain x_0 .. x_{T-1} (x_t in R^D) with log-density, up to its normalizer,

    -1/2 sum_t x_t^T P_t x_t + sum_{t < T-1} x_t^T C_t x_{t+1} + sum_t b_t^T x_t

has the block-tridiagonal precision with diagonal blocks P_t and off-diagonal blocks -C_t, and
the linear term b. The forward pass is the block LDL^T factorization of that precision (the
information filter: Schur complements, Golub & Van Loan section 4.5):

    D_0 = P_0,   D_t = P_t - C_{t-1}^T D_{t-1}^-1 C_{t-1},
    b~_0 = b_0,  b~_t = b_t + C_{t-1}^T D_{t-1}^-1 b~_{t-1},

with S_t = D_t^-1, G_t = S_t C_t and m_t = S_t b~_t; log|Lambda| = sum_t log|D_t| and
b^T Lambda^-1 b = sum_t b~_t^T S_t b~_t. The backward pass reads q(x_t | x_{t+1}) =
N(m_t + G_t x_{t+1}, S_t) (Rauch, Tung & Striebel 1965 in information form; Beal 2003 section 5.3):

    mu_{T-1} = m_{T-1},  Sigma_{T-1} = S_{T-1},
    mu_t = m_t + G_t mu_{t+1},  Sigma_t = S_t + G_t Sigma_{t+1} G_t^T,  Cov(x_t, x_{t+1}) = G_t Sigma_{t+1}.

Each step is a few array operations over all chains (no inverse of the T D x T D matrix); every
Schur complement is a positive-definite D x D matrix, so nothing is lost over long chains. Arrays
are time-major inside, (T, S, ...), S the chains.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._linalg import Cholesky, sym

LOG2PI = float(np.log(2 * np.pi))


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


@dataclass
class Forward:
    """The forward pass over S chains: Schur complements D (T, S, D, D), their inverses S,
    G_t = S_t C_t (T-1, S, D, D), m_t = S_t b~_t and b~ (T, S, D); ``ok`` (S,) is True where every
    D_t is finite and positive definite (the chain's precision is)."""

    schur: np.ndarray
    inverse: np.ndarray
    gain: np.ndarray
    mean: np.ndarray
    linear: np.ndarray
    ok: np.ndarray
    logdet: np.ndarray  # (T, S): log|D_t|

    def log_normalizer(self) -> np.ndarray:
        """Per step (T, S): 1/2 b~_t^T S_t b~_t - 1/2 log|D_t| + D/2 log 2 pi (summed over t: A)."""
        d = self.mean.shape[-1]
        quad = np.einsum("tsi,tsi->ts", self.linear, self.mean)
        return 0.5 * quad - 0.5 * self.logdet + 0.5 * d * LOG2PI

    def entropy(self) -> np.ndarray:
        """Per step (T, S): D/2 (1 + log 2 pi) - 1/2 log|D_t| (summed over t: H = 1/2 log|2 pi e Sigma|)."""
        d = self.mean.shape[-1]
        return 0.5 * d * (1.0 + LOG2PI) - 0.5 * self.logdet


def forward(precision: np.ndarray, coupling: np.ndarray, linear: np.ndarray) -> Forward:
    """The forward pass on P (T, S, D, D), C (T-1, S, D, D) and b (T, S, D), one solve per step:
    with X_t = [D_t | -b~_t] and D_t^-1 [C_t | b~_t | I] = [G_t | m_t | S_t],
    X_{t+1} = [P_{t+1} | -b_{t+1}] - C_t^T [G_t | m_t]."""
    steps, chains, d = linear.shape
    x = np.empty((steps, chains, d, d + 1))  # [D_t | -b~_t]
    x[..., :d] = precision
    np.negative(linear, out=x[..., d])
    rhs = np.zeros((steps, chains, d, 2 * d + 1))  # [C_t | b~_t | I]
    rhs[:-1, ..., :d] = coupling
    rhs[..., d + 1:] = np.eye(d)
    solved = np.empty(rhs.shape)  # [G_t | m_t | S_t]
    step = np.empty((chains, d, d + 1))
    ct = _t(coupling)
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(steps):
            np.negative(x[t, ..., d], out=rhs[t, ..., d])
            solved[t] = _solve(x[t, ..., :d], rhs[t])
            if t < steps - 1:
                np.matmul(ct[t], solved[t, ..., :d + 1], out=step)
                x[t + 1] -= step
    return _checked(x[..., :d], sym(solved[..., d + 1:]), solved[:-1, ..., :d], rhs[..., d], solved[..., d])


def _checked(schur, inverse, gain, tilde, mean) -> Forward:
    """The pass with its positive-definiteness check and log-determinants (one vectorized
    Cholesky factorization of every D_t)."""
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(schur).all((-2, -1)) & np.isfinite(tilde).all(-1)
        eye = np.eye(schur.shape[-1])
        safe = np.where(finite[..., None, None], sym(schur), eye)
        f = Cholesky(safe, vectorize=True)
        ok = finite & f.ok
        if not ok.all():
            f = Cholesky(np.where(ok[..., None, None], safe, eye), vectorize=True)
        logdet = np.where(ok, f.logdet(), np.nan)
    return Forward(schur, inverse, gain, mean, tilde, ok.all(0), logdet)


@dataclass
class Smoothed:
    """Marginals of S chains, time-major: means (T, S, D), covariances (T, S, D, D), and
    cross-covariances Cov(x_t, x_{t+1}) (T-1, S, D, D)."""

    mean: np.ndarray
    covariance: np.ndarray
    cross: np.ndarray


def backward(fw: Forward) -> Smoothed:
    """The backward pass: mu, Sigma_t and Cov(x_t, x_{t+1}) from q(x_t | x_{t+1}), one augmented
    product per step: with W_t = [[Sigma_t, mu_t], [0, 0]] and G'_t = [[G_t, 0], [0, 1]],
    W_t = G'_t W_{t+1} G'_t^T + [[S_t, m_t], [0, 0]], and G'_t W_{t+1} holds Cov(x_t, x_{t+1})."""
    steps, chains, d = fw.mean.shape
    aug = np.zeros((steps, chains, d + 1, d + 1))
    aug[..., :d, :d] = fw.inverse
    aug[..., :d, d] = fw.mean
    g = np.zeros((max(steps - 1, 0), chains, d + 1, d + 1))
    g[..., :d, :d] = fw.gain
    g[..., d, d] = 1.0
    gt = _t(g)
    w = aug  # W_t written over [[S_t, m_t], [0, 0]]
    left = np.empty(g.shape)
    scratch = np.empty(aug.shape[1:])
    for t in range(steps - 2, -1, -1):
        np.matmul(g[t], w[t + 1], out=left[t])
        np.matmul(left[t], gt[t], out=scratch)
        w[t] += scratch
    return Smoothed(w[..., :d, d], sym(w[..., :d, :d]), left[..., :d, :d])


def smooth(precision: np.ndarray, coupling: np.ndarray, linear: np.ndarray) -> tuple[Forward, Smoothed]:
    fw = forward(precision, coupling, linear)
    return fw, backward(fw)
