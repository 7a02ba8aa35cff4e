"""A Gaussian Markov chain's marginals by block cyclic reduction: log T vectorized levels.

The chain's log-density, up to its normalizer, is

    -1/2 sum_t x_t^T P_t x_t + sum_{t < T-1} x_t^T K_t x_{t+1} + sum_t b_t^T x_t

(a block-tridiagonal precision with diagonal blocks P_t and off-diagonal blocks -K_t). Odd-even
(cyclic) reduction integrates out the odd steps given their even neighbours, all at once
(Heller 1976; Golub & Van Loan section 4.5.4): for odd i,

    q(x_i | x_{i-1}, x_{i+1}) = N(m_i + F_i x_{i-1} + G_i x_{i+1}, S_i),
    S_i = P_i^-1,  F_i = S_i K_{i-1}^T,  G_i = S_i K_i,  m_i = S_i b_i,

and the even steps keep a block-tridiagonal system with

    P'_{i-1} -= K_{i-1} F_i,  P'_{i+1} -= K_i^T G_i,  K'_{i-1} = K_{i-1} G_i,
    b'_{i-1} += K_{i-1} m_i,  b'_{i+1} += K_i^T m_i,

each a Schur complement: elimination in another order, so every pivot P_i is positive definite
when the precision is, and log|Lambda| = sum of log|P_i| over the pivots, A = sum of
[1/2 b_i^T S_i b_i - 1/2 log|P_i| + D/2 log 2 pi] (the Gaussian integral of each eliminated block).
Down the levels again, the marginals of the odd steps follow from their neighbours' (selected
inversion): with X = Cov(x_{i-1}, x_{i+1}),

    mu_i = m_i + F_i mu_{i-1} + G_i mu_{i+1},
    Sigma_i = S_i + F Sigma_{i-1} F^T + F X G^T + G X^T F^T + G Sigma_{i+1} G^T,
    Cov(x_{i-1}, x_i) = Sigma_{i-1} F^T + X G^T,  Cov(x_i, x_{i+1}) = F X + G Sigma_{i+1}.

A level of n blocks is a few array operations over n/2 blocks and all chains: O(T D^3) work in
O(log T) Python steps. The last odd block of a level with an even number of blocks has no
right neighbour (K_i = 0). Arrays are time-major, (T, S, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._kalman import _solve, _t
from ._linalg import Cholesky, sym

LOG2PI = float(np.log(2 * np.pi))


@dataclass
class Smoothed:
    """Marginals of S chains, time-major: means (T, S, D), covariances (T, S, D, D), and
    cross-covariances Cov(x_t, x_{t+1}) (T-1, S, D, D)."""

    mean: np.ndarray
    covariance: np.ndarray
    cross: np.ndarray


@dataclass
class _Level:
    """The odd blocks eliminated at one level: their steps, F, G, m, S, pivots P and linear
    terms b (the last odd block of an even level has no right neighbour: its K_i and G_i are 0)."""

    steps: np.ndarray
    f: np.ndarray
    g: np.ndarray
    m: np.ndarray
    s: np.ndarray
    pivot: np.ndarray
    linear: np.ndarray


@dataclass
class Reduction:
    """Per step (T, S): each pivot's log|P_i| and b_i^T S_i b_i; ``ok`` (S,) True where every
    pivot is finite and positive definite; ``smoothed`` the marginals."""

    logdet: np.ndarray
    quad: np.ndarray
    ok: np.ndarray
    smoothed: Smoothed = field(repr=False)

    def log_normalizer(self) -> np.ndarray:
        d = self.smoothed.mean.shape[-1]
        return 0.5 * self.quad - 0.5 * self.logdet + 0.5 * d * LOG2PI

    def entropy(self) -> np.ndarray:
        d = self.smoothed.mean.shape[-1]
        return 0.5 * d * (1.0 + LOG2PI) - 0.5 * self.logdet


def _right(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` with zeros appended to length n (a missing right neighbour)."""
    if len(a) == n:
        return a
    return np.concatenate([a, np.zeros((n - len(a),) + a.shape[1:])])


def _eliminate(p, k, b, steps):
    """One level: the odd blocks integrated out; returns the level and the even blocks' system."""
    d, n_odd = p.shape[-1], len(p) // 2
    left, right = k[0::2], _right(k[1::2], n_odd)  # K_{i-1}, K_i for the odd i
    odd_b = b[1::2]
    rhs = np.concatenate([_t(left), right, odd_b[..., None], np.broadcast_to(np.eye(d), left.shape)], axis=-1)
    with np.errstate(invalid="ignore", over="ignore"):
        sol = _solve(p[1::2], rhs)
        f, g, m, s = sol[..., :d], sol[..., d:2 * d], sol[..., 2 * d], sol[..., 2 * d + 1:]
        even_p, even_b = p[0::2].copy(), b[0::2].copy()
        rest = len(even_p) - 1
        even_p[:n_odd] -= left @ f
        even_p[1:] -= (_t(right) @ g)[:rest]
        even_b[:n_odd] += (left @ m[..., None])[..., 0]
        even_b[1:] += (_t(right) @ m[..., None])[..., 0][:rest]
        coupling = (left @ g)[:rest]
    level = _Level(steps[1::2], f, g, m, sym(s), p[1::2], odd_b)
    return level, sym(even_p), coupling, even_b, steps[0::2]


def _substitute(level: _Level, mu, sigma, cross):
    """The marginals of one level's blocks from those of its even blocks (the level below's)."""
    f, g = level.f, level.g
    ft, gt = _t(f), _t(g)
    n_odd, n_even = len(f), len(mu)
    mu_r, sig_r, x = _right(mu[1:], n_odd), _right(sigma[1:], n_odd), _right(cross, n_odd)
    with np.errstate(invalid="ignore", over="ignore"):
        mu_odd = level.m + (f @ mu[:n_odd, ..., None])[..., 0] + (g @ mu_r[..., None])[..., 0]
        fxg = f @ x @ gt
        sig_odd = sym(level.s + f @ sigma[:n_odd] @ ft + fxg + _t(fxg) + g @ sig_r @ gt)
        before = sigma[:n_odd] @ ft + x @ gt  # Cov(x_{i-1}, x_i)
        after = f @ x + g @ sig_r  # Cov(x_i, x_{i+1})
    n = n_even + n_odd
    out_mu = np.empty((n,) + mu.shape[1:])
    out_sig = np.empty((n,) + sigma.shape[1:])
    out_cross = np.empty((n - 1,) + sigma.shape[1:])
    out_mu[0::2], out_mu[1::2] = mu, mu_odd
    out_sig[0::2], out_sig[1::2] = sigma, sig_odd
    out_cross[0::2], out_cross[1::2] = before, after[:n_even - 1]
    return out_mu, out_sig, out_cross


def reduce(precision: np.ndarray, coupling: np.ndarray, linear: np.ndarray) -> Reduction:
    """The marginals, log-determinant and log-normalizer terms of chains with blocks P
    (T, S, D, D), K (T-1, S, D, D) and b (T, S, D)."""
    steps = np.arange(len(linear))
    levels = []
    p, k, b = precision, coupling, linear
    while len(p) > 1:
        level, p, k, b, steps = _eliminate(p, k, b, steps)
        levels.append(level)
    root_s = sym(_solve(p, np.broadcast_to(np.eye(p.shape[-1]), p.shape)))
    root_m = (root_s @ b[..., None])[..., 0]
    pivots = [(lv.steps, lv.pivot, lv.linear, lv.m) for lv in levels] + [(steps, p, b, root_m)]
    mu, sigma, cross = root_m, root_s, np.empty((0,) + p.shape[1:])
    for level in reversed(levels):
        mu, sigma, cross = _substitute(level, mu, sigma, cross)
    return _pivots(pivots, Smoothed(mu, sigma, cross), len(linear))


def _pivots(pivots, smoothed: Smoothed, steps: int) -> Reduction:
    """log|P_i| and b_i^T S_i b_i at each step's pivot, and the positive-definiteness check (one
    vectorized Cholesky factorization of all pivots)."""
    at = np.concatenate([s for s, _, _, _ in pivots])
    pivot = np.concatenate([p for _, p, _, _ in pivots])
    quad = np.concatenate([np.einsum("tsi,tsi->ts", b, m) for _, _, b, m in pivots])
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(pivot).all((-2, -1)) & np.isfinite(quad)
        eye = np.eye(pivot.shape[-1])
        safe = np.where(finite[..., None, None], pivot, eye)
        f = Cholesky(safe, vectorize=True)
        ok = finite & f.ok
        if not ok.all():
            f = Cholesky(np.where(ok[..., None, None], safe, eye), vectorize=True)
        logdet = np.where(ok, f.logdet(), np.nan)
    order = np.empty(steps, np.intp)
    order[at] = np.arange(steps)
    return Reduction(logdet[order], quad[order], ok.all(0), smoothed)
