"""Sums over counts for the tempered log-normalizers of the count families (Poisson, Binomial,
Multinomial): log sum_y exp(l(y)) of a concave l, streamed in blocks of counts outwards from its
maximum."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import gammaln, logsumexp

#: a block ending this far (in log) below the running maximum ends the sum on that side of a
#: concave sequence: what is left is below e^-40 of the total
TAIL = 40.0
BLOCK = 256


def log_sum_over_counts(log_term: Callable[[np.ndarray], np.ndarray], mode: np.ndarray,
                        last: np.ndarray | None = None) -> np.ndarray:
    """log sum_{y = 0}^{last} exp(log_term(y)) per element (no upper end without ``last``), for
    log_term concave in y with its maximum at about ``mode``: blocks of counts from the mode
    upwards and downwards until each side ends below the maximum by TAIL. ``log_term`` maps counts
    shaped like ``mode`` with a leading block axis to values of that shape."""
    mode = np.asarray(mode, float)
    top = np.inf if last is None else np.asarray(last, float)
    start = np.floor(np.clip(mode, 0.0, top))
    best, total = np.full(mode.shape, -np.inf), np.zeros(mode.shape)
    offsets = np.arange(BLOCK, dtype=float).reshape((-1,) + (1,) * mode.ndim)
    for sign in (1.0, -1.0):
        j = 0
        while True:
            y = start + sign * (offsets + j) - (sign < 0)
            inside = (y >= 0) & (y <= top)
            values = np.where(inside, log_term(np.where(inside, y, 0.0)), -np.inf)
            peak = np.maximum(best, values.max(axis=0))
            safe = np.where(np.isfinite(peak), peak, 0.0)
            total = total * np.exp(best - safe) + np.exp(values - safe).sum(axis=0)
            best = peak
            j += BLOCK
            if np.all(~inside[-1] | (values[-1] < best - TAIL)):
                break
    return np.where(np.isfinite(best), best, 0.0) + np.log(total)


#: multiply-adds the Multinomial's polynomial product may take (elements x K x (n + 1)^2)
MAX_WORK = 2e9
#: elements x (n + 1)^2 per block of the product
MAX_BLOCK = 2**22


def log_multinomial_sum(log_p: np.ndarray, trials: np.ndarray, s: float) -> np.ndarray:
    """log sum over x with sum_k x_k = n of (n! / prod_k x_k!)^s prod_k p_k^(s x_k), per element:
    the coefficient of t^n in prod_k sum_j (p_k^j / j!)^s t^j, the polynomials multiplied in log
    space and truncated at the largest n, a block of elements at a time."""
    shape = log_p.shape[:-1]
    n = np.broadcast_to(trials, shape).astype(int).reshape(-1)
    log_p = log_p.reshape(-1, log_p.shape[-1])
    top = int(n.max(initial=0))
    if n.size * log_p.shape[-1] * (top + 1.0) ** 2 > MAX_WORK:
        raise NotImplementedError(
            f"Multinomial: the tempered log-normalizer sums over every count vector, {n.size} elements x "
            f"{log_p.shape[-1]} categories x (n + 1)^2 with n up to {top} is too much work; model the counts "
            f"as Categorical tokens with weights (as LDA does), whose tempered normalizer is closed-form")
    step = max(1, MAX_BLOCK // (top + 1) ** 2)
    out = np.concatenate([_coefficient(log_p[i:i + step], n[i:i + step], top, s)
                          for i in range(0, n.size, step)]) if n.size else np.zeros(0)
    return out.reshape(shape)


def _coefficient(log_p: np.ndarray, n: np.ndarray, top: int, s: float) -> np.ndarray:
    j = np.arange(top + 1.0)
    with np.errstate(invalid="ignore"):
        per_k = s * (j * log_p[..., None] - gammaln(j + 1.0))
    per_k = np.where(np.isnan(per_k), 0.0, per_k)  # 0 * log 0: j = 0 of a zero probability
    lag = j[:, None] - j[None, :]  # (m, i): power m of the product from power m - i so far
    inside = lag >= 0
    poly = per_k[..., 0, :]
    for k in range(1, log_p.shape[-1]):
        shifted = np.where(inside, poly[..., np.clip(lag, 0, top).astype(int)], -np.inf)
        poly = logsumexp(shifted + per_k[..., k, None, :], axis=-1)
    return s * gammaln(n + 1.0) + np.take_along_axis(poly, n[..., None], axis=-1)[..., 0]
