"""A plate of frozen scipy.stats distributions where scipy has no batched form (Dirichlet,
Wishart, multivariate normal): each method is called per plate element and the results are
stacked into plates + result shape."""
from __future__ import annotations

from typing import Callable

import numpy as np


class Elementwise:
    """``make(**parameters at one element)`` for every element of ``plate_shape``; a method
    call maps over the elements, with each array argument indexed at the element."""

    def __init__(self, make: Callable, plate_shape: tuple[int, ...], **parameters: np.ndarray):
        self.plate_shape = tuple(plate_shape)
        self._items = {idx: make(**{k: _at(v, idx) for k, v in parameters.items()})
                       for idx in np.ndindex(*self.plate_shape)}

    def __getitem__(self, idx):
        return self._items[idx if isinstance(idx, tuple) else (idx,)]

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        if not callable(getattr(next(iter(self._items.values())), method)):  # an attribute (a mean vector)
            out = [np.asarray(getattr(d, method)) for d in self._items.values()]
            return np.stack(out).reshape(self.plate_shape + out[0].shape)

        def call(*args, **kwargs):
            out = [np.asarray(getattr(d, method)(*(_at(a, idx) for a in args), **kwargs))
                   for idx, d in self._items.items()]
            return np.stack(out).reshape(self.plate_shape + out[0].shape)
        return call


def _at(value, idx):
    return np.asarray(value)[idx] if np.ndim(value) else value


class MeanPrecision:
    """The Normal-Wishart N(mu | m, (beta Lambda)^-1) W(Lambda | nu, W) of one element, from
    scipy.stats' multivariate normal and Wishart: a point is Lambda's D rows, then mu.
    H = H[W(nu, W)] + D/2 (1 + log 2 pi) - D/2 log beta - 1/2 E[log|Lambda|] (the conditional
    Gaussian's entropy averaged over Lambda), E[log|Lambda|] = sum_i psi((nu + 1 - i)/2) + D log 2 + log|W|."""

    def __init__(self, mean, beta, dof, scale):
        from scipy import stats

        self.m, self.beta, self.dof = np.asarray(mean, float), float(beta), float(dof)
        self.scale = np.asarray(scale, float)
        self._wishart = stats.wishart(df=self.dof, scale=self.scale)

    @property
    def mean(self) -> np.ndarray:
        return self.m

    def entropy(self) -> float:
        from scipy import special

        d = self.m.size
        log_det = (special.digamma(0.5 * (self.dof + 1 - np.arange(1, d + 1))).sum() + d * np.log(2.0)
                   + np.linalg.slogdet(self.scale)[1])
        return (self._wishart.entropy() + 0.5 * d * (1 + np.log(2 * np.pi)) - 0.5 * d * np.log(self.beta)
                - 0.5 * log_det)

    def logpdf(self, x) -> np.ndarray:
        from scipy import stats

        x = np.asarray(x, float)
        flat = x.reshape((-1,) + x.shape[-2:])
        out = [self._wishart.logpdf(p[:-1]) + stats.multivariate_normal(self.m, np.linalg.inv(self.beta * p[:-1]))
               .logpdf(p[-1]) for p in flat]
        return np.asarray(out).reshape(x.shape[:-2])


class MeanGammaPrecision:
    """The Normal-Gamma N(mu | m, 1/(beta tau)) Gamma(tau | a, b) of one element from scipy.stats'
    normal and Gamma: a point is (mu, tau). H = H[Gamma(a, b)] + 1/2 (1 + log 2 pi) - 1/2 log beta
    - 1/2 (psi(a) - log b)."""

    def __init__(self, mean, beta, shape, rate):
        from scipy import stats

        self.m, self.beta, self.a, self.b = float(mean), float(beta), float(shape), float(rate)
        self._gamma = stats.gamma(self.a, scale=1.0 / self.b)

    @property
    def mean(self) -> float:
        return self.m

    def entropy(self) -> float:
        from scipy import special

        log_tau = special.digamma(self.a) - np.log(self.b)
        return self._gamma.entropy() + 0.5 * (1 + np.log(2 * np.pi)) - 0.5 * np.log(self.beta) - 0.5 * log_tau

    def logpdf(self, x) -> np.ndarray:
        from scipy import stats

        x = np.asarray(x, float)
        mu, tau = x[..., 0], x[..., 1]
        return self._gamma.logpdf(tau) + stats.norm(self.m, 1.0 / np.sqrt(self.beta * tau)).logpdf(mu)


class Sticks:
    """Weights pi_k = v_k prod_{j<k} (1 - v_j) with independent sticks v_k ~ Beta(a_k, b_k) (v_K = 1
    when ``closed``), from scipy.stats' Beta: entropy and log density with respect to the sticks."""

    def __init__(self, alpha, beta, closed):
        from scipy import stats

        self.closed = bool(closed)
        a, b = np.asarray(alpha, float), np.asarray(beta, float)
        keep = slice(0, a.size - 1 if self.closed else a.size)
        self._sticks = stats.beta(a[keep], b[keep])

    @property
    def mean(self) -> np.ndarray:
        v = np.append(self._sticks.mean(), 1.0) if self.closed else self._sticks.mean()
        return v * np.concatenate([[1.0], np.cumprod(1.0 - v)[:-1]])

    def entropy(self) -> float:
        return float(np.sum(self._sticks.entropy()))

    def logpdf(self, x) -> np.ndarray:
        pi = np.asarray(x, float)
        before = np.concatenate([np.zeros(pi.shape[:-1] + (1,)), np.cumsum(pi, axis=-1)[..., :-1]], axis=-1)
        v = pi / (1.0 - before)
        if self.closed:
            v = v[..., :-1]
        return self._sticks.logpdf(v).sum(-1)
