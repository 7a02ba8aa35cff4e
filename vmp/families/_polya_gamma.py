"""Polya-Gamma draws and densities (Polson, Scott & Windle 2013, JASA, sections 2 and 4).

- ``devroye(c, rng)``: exact draws of PG(1, c), vectorized over c: J*(1, c/2) / 4 by Devroye's
  alternating-series rejection sampler (Polson et al. Algorithm 1; Devroye 2009), with proposals
  from an exponential tail and a truncated inverse Gaussian, truncation point t = 0.64.
- ``draws(b, c, rng)``: PG(b, c) as the sum of b exact PG(1, c) draws for the integer part of b;
  a fractional part f is drawn from the representation
  omega = sum_k g_k / (2 pi^2 (k - 1/2)^2 + c^2 / 2), g_k ~ Gamma(f, 1) (Polson et al. eq. (1)),
  its first ``GAMMA_TERMS`` terms drawn and the rest replaced by its mean (that rest's standard
  deviation is below 2e-5 at f < 1).
- ``log_density(x, b, c)``: log PG(x | b, c) = b log cosh(c/2) - c^2 x / 2 + log PG(x | b, 0),
  with PG(x | b, 0) = 2^(b-1) / Gamma(b) sum_n (-1)^n Gamma(n + b) / Gamma(n + 1)
  (2n + b) / sqrt(2 pi x^3) exp(-(2n + b)^2 / (8 x)) (Polson et al. eq. (2)).
- ``polya_gamma``: that density as a ``scipy.stats.rv_continuous`` (moments and entropy by
  scipy's numerical integration), the family's ``to_scipy``.
"""
from __future__ import annotations

import functools

import numpy as np
from scipy import special

TRUNCATION = 0.64
GAMMA_TERMS = 200


def _a(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The n-th term a_n(x) of the J*(1) density's alternating series (Devroye's piecewise form,
    Polson et al. eq. (5))."""
    k = n + 0.5
    small = np.pi * k * (2.0 / (np.pi * x)) ** 1.5 * np.exp(-2.0 * k * k / x)
    large = np.pi * k * np.exp(-k * k * np.pi**2 * x / 2.0)
    return np.where(x <= TRUNCATION, small, large)


def _inverse_gaussian_cdf(t: float, z: np.ndarray) -> np.ndarray:
    """P(X < t) for X ~ IG(mean 1/z, shape 1); the Levy limit 2 Phi(-1/sqrt t) at z = 0."""
    r = 1.0 / np.sqrt(t)
    with np.errstate(divide="ignore"):
        first = special.ndtr(r * (t * z - 1.0))
        second = np.exp(2.0 * z + special.log_ndtr(-r * (t * z + 1.0)))
    return first + second


def _truncated_inverse_gaussian(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws of IG(mean 1/z, shape 1) truncated to (0, t), one per element of z."""
    t = TRUNCATION
    out = np.empty(z.shape)
    low = z < 1.0 / t  # mean above t: a truncated Levy draw, accepted with prob exp(-z^2 x / 2)
    todo = np.flatnonzero(low)
    while todo.size:
        e1, e2 = rng.standard_exponential(todo.size), rng.standard_exponential(todo.size)
        tail = e1 * e1 <= 2.0 * e2 / t  # Devroye's exponential method for |N| > 1/sqrt(t)
        x = t / (1.0 + t * e1) ** 2
        accept = tail & (rng.random(todo.size) <= np.exp(-0.5 * z[todo] ** 2 * x))
        out[todo[accept]] = x[accept]
        todo = todo[~accept]
    todo = np.flatnonzero(~low)
    while todo.size:  # mean below t: Michael, Schucany & Haas, rejected above t
        mu = 1.0 / z[todo]
        y = rng.standard_normal(todo.size) ** 2
        x = mu + 0.5 * mu * mu * y - 0.5 * mu * np.sqrt(4.0 * mu * y + (mu * y) ** 2)
        x = np.where(rng.random(todo.size) > mu / (mu + x), mu * mu / x, x)
        accept = x < t
        out[todo[accept]] = x[accept]
        todo = todo[~accept]
    return out


def devroye(c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of PG(1, c), one per element of ``c`` (Polson et al. Algorithm 1)."""
    z = 0.5 * np.abs(np.asarray(c, float))
    shape = z.shape
    z = z.reshape(-1)
    t = TRUNCATION
    k = np.pi**2 / 8.0 + 0.5 * z * z
    p = np.pi / (2.0 * k) * np.exp(-k * t)
    q = 2.0 * np.exp(-z) * _inverse_gaussian_cdf(t, z)
    out = np.empty(z.shape)
    todo = np.arange(z.size)
    while todo.size:
        exponential = rng.random(todo.size) < p[todo] / (p[todo] + q[todo])
        x = np.empty(todo.size)
        x[exponential] = t + rng.standard_exponential(int(exponential.sum())) / k[todo[exponential]]
        x[~exponential] = _truncated_inverse_gaussian(z[todo[~exponential]], rng)
        s = _a(np.zeros(todo.size), x)
        y = rng.random(todo.size) * s
        undecided = np.ones(todo.size, bool)
        accept = np.zeros(todo.size, bool)
        n = 0
        while undecided.any():
            n += 1
            term = _a(np.full(todo.size, float(n)), x)
            if n % 2:
                s = s - term
                hit = undecided & (y < s)
                accept |= hit
            else:
                s = s + term
                hit = undecided & (y > s)
            undecided &= ~hit
        out[todo[accept]] = x[accept]
        todo = todo[~accept]
    return (out / 4.0).reshape(shape)


def draws(b: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws of PG(b, c) over the broadcast shape of ``b`` and ``c`` (b >= 0; PG(0, c) = 0)."""
    b, c = np.broadcast_arrays(np.asarray(b, float), np.asarray(c, float))
    whole = np.floor(b).astype(np.int64).reshape(-1)
    flat_c = c.reshape(-1)
    ones = devroye(np.repeat(flat_c, whole), rng)
    out = np.bincount(np.repeat(np.arange(whole.size), whole), ones, minlength=whole.size).astype(float)
    fraction = b.reshape(-1) - whole
    part = np.flatnonzero(fraction > 0)
    if part.size:
        out[part] += _gamma_series(fraction[part], flat_c[part], rng)
    return out.reshape(b.shape)


def _gamma_series(f: np.ndarray, c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """PG(f, c) from its first GAMMA_TERMS gamma terms plus the mean of the rest."""
    k = np.arange(1, GAMMA_TERMS + 1)
    d = 2.0 * np.pi**2 * (k - 0.5) ** 2 + 0.5 * c[:, None] ** 2
    head = (rng.standard_gamma(np.broadcast_to(f[:, None], d.shape)) / d).sum(-1)
    rest = f * mean_per_unit(c) - f * (1.0 / d).sum(-1)
    return head + rest


def mean_per_unit(c: np.ndarray) -> np.ndarray:
    """E[PG(1, c)] = tanh(c/2) / (2c), by its series 1/4 - c^2/48 + c^4/480 near c = 0."""
    c = np.abs(np.asarray(c, float))
    small = c < 1e-3
    safe = np.where(small, 1.0, c)
    return np.where(small, 0.25 - c * c / 48.0 + c**4 / 480.0, np.tanh(0.5 * safe) / (2.0 * safe))


def log_cosh(x: np.ndarray) -> np.ndarray:
    """log cosh(x) without overflow: |x| + log1p(e^(-2|x|)) - log 2."""
    x = np.abs(x)
    return x + np.log1p(np.exp(-2.0 * x)) - np.log(2.0)


def _log_series_terms(x: np.ndarray, b: np.ndarray, n: np.ndarray):
    """log |term| and sign of the n-th term of PG(x | b, 0)'s series (n on a trailing axis)."""
    m = 2.0 * n + b[..., None]
    log_term = (special.gammaln(n + b[..., None]) - special.gammaln(n + 1.0) + np.log(m)
                - 0.5 * np.log(2.0 * np.pi) - 1.5 * np.log(x[..., None]) - m * m / (8.0 * x[..., None]))
    return log_term, np.where(n % 2 == 0, 1.0, -1.0)


def log_density(x: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """log PG(x | b, c) for x > 0, b > 0 (the series of PG(x | b, 0), summed in scaled form,
    times the tilt cosh^b(c/2) exp(-c^2 x / 2))."""
    x, b, c = np.broadcast_arrays(np.asarray(x, float), np.asarray(b, float), np.asarray(c, float))
    terms = int(np.ceil(np.sqrt(8.0 * float(np.max(x, initial=1.0)) * 80.0) / 2.0)) + 8
    n = np.arange(terms, dtype=float)
    log_term, sign = _log_series_terms(x, b, n)
    top = log_term.max(-1, keepdims=True)
    total = (sign * np.exp(log_term - top)).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_base = (b - 1.0) * np.log(2.0) - special.gammaln(b) + top[..., 0] + np.log(np.maximum(total, 0.0))
    return b * log_cosh(0.5 * c) - 0.5 * c * c * x + log_base


@functools.cache
def _distribution():
    """The ``rv_continuous`` of PG(b, c), made on first use (scipy.stats is slow to import)."""
    from scipy import integrate, stats

    class _PolyaGammaGen(stats.rv_continuous):
        """PG(b, c) on (0, 5 + b): beyond it PG(b, 0)'s mass is below 1e-12 (its tail falls as
        exp(-pi^2 x / 2)), the tilt only lowers it, and the series loses its digits to cancellation."""

        def _argcheck(self, b, c):
            return (b > 0) & (c >= 0)

        def _get_support(self, b, c):
            return np.zeros_like(b), 5.0 + b

        def _pdf(self, x, b, c):
            return np.exp(self._logpdf(x, b, c))

        def _munp(self, n, b, c):
            """E[x^n] by numerical integration of the series density (an independent check of the
            family's closed-form moments)."""
            def one(b_, c_):
                return integrate.quad(lambda x: x**n * self._pdf(x, b_, c_), 0.0, 5.0 + b_, limit=200)[0]
            return np.vectorize(one, otypes=[float])(b, c)

        def _logpdf(self, x, b, c):
            with np.errstate(divide="ignore"):
                return np.where(x > 0, log_density(np.maximum(x, 1e-300), b, c), -np.inf)

    return _PolyaGammaGen(a=0.0, name="polya_gamma")


def polya_gamma(b, c):
    """PG(b, c) as a frozen ``scipy.stats`` distribution over the density series."""
    return _distribution()(b, c)
