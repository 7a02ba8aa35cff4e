"""The posterior predictive of a logit link (``logit=`` / ``logits=``), integrating over q.

The predictive reads the link's expression psi only (never its Polya-gamma auxiliary, which is
a device of the fit). Where q makes psi Gaussian (``is_linear``: ``dot(w, X)``, sums, gathers;
for stick-breaking logits, each stick's psi_k from nodes of its own, so the sticks are
independent under mean field), the probability p = sigmoid(psi) has its expectations as 1-D
integrals, taken by quadrature accurate to about 1e-11 (``logistic_normal``):

- Bernoulli: P(y = 1) = E[sigmoid(psi)], and the predictive Bernoulli(E[p]) exactly;
- Categorical: E[pi_k] = E[sigmoid(psi_k)] prod_{j<k} (1 - E[sigmoid(psi_j)]) (independent
  sticks; Linderman et al. 2015, eq. (2)), the predictive Categorical(E[pi]) exactly;
- Binomial, Multinomial: E[y] = n E[p], Var[y] = n (E[p] - E[p^2]) + n^2 Var[p] (law of total
  variance), E[p^2] = E[sigmoid] - E[sigmoid'] (sigmoid^2 = sigmoid - sigmoid');
- NegativeBinomial: E[y] = r E[e^psi] = r e^{m + v/2}, Var[y] = r (E[e^psi] + E[e^{2 psi}])
  + r^2 Var[e^psi] (log-normal moments).

Otherwise (a gate w[z], a product dot(u[rows], v[cols]), a node shared by the sticks) the
expectations are Monte Carlo averages of p over ``draws`` joint draws of psi (``method``
"monte-carlo"). ``probability_interval(level)`` is the central credible interval of p under q:
sigmoid of psi's Gaussian quantiles where exact, else quantiles of draws.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import special

from .factors.logit import (LogitBernoulliFactor, LogitNegativeBinomialFactor, LogitStickBreakingFactor,
                            stick_probabilities)
from .graph.draws import align, draw, plates_of
from .graph.expectations import FirstTwo, expect, is_linear
from .graph.expressions import Sticks, random_nodes
from .predictive_distribution import Predictive


@dataclass
class LogitPredictive(Predictive):
    """A logit link's predictive. Beyond ``Predictive``: ``probability``, E[p] of the link's
    probability (sigmoid(psi), or the K stick-breaking probabilities); ``probabilities``, the
    class probabilities of a Bernoulli ((1 - p, p), plates + (2,)) or a Categorical (plates +
    (K,)), else None; ``probability_interval(level)``."""

    probability: np.ndarray = None
    probabilities: np.ndarray | None = None
    _interval: Callable = field(default=None, repr=False)

    def probability_interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """The central ``level`` credible interval of p under q, per element (and class)."""
        return self._interval(level)


def logistic_normal(m: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E[sigmoid(psi)], E[sigmoid'(psi)]) for psi ~ N(m, s^2), elementwise: Gauss-Hermite over
    psi (64 nodes) where s <= 1; where s > 1, E[sigmoid(psi)] = E_L[Phi((m + L) / s)] and
    E[sigmoid'(psi)] = E_L[N(L | m, s^2)] for L standard logistic (sigmoid is its CDF, sigmoid'
    its density), by composite Gauss-Legendre over L in [-40, 40] (8 nodes per unit pair)."""
    m, s = np.broadcast_arrays(np.asarray(m, float), np.asarray(s, float))
    x, w = np.polynomial.hermite.hermgauss(64)
    sig = special.expit(m[..., None] + np.sqrt(2.0) * s[..., None] * x)
    narrow = ((w * sig).sum(-1) / np.sqrt(np.pi), (w * sig * (1.0 - sig)).sum(-1) / np.sqrt(np.pi))
    g, gw = np.polynomial.legendre.leggauss(8)
    left = np.arange(-40.0, 40.0, 2.0)
    l = (left[:, None] + 1.0 + g).ravel()
    density = np.tile(gw, left.size) * special.expit(l) * special.expit(-l)
    safe = np.maximum(s, 1e-300)[..., None]
    wide = ((density * special.ndtr((m[..., None] + l) / safe)).sum(-1),
            (density * np.exp(-0.5 * ((l - m[..., None]) / safe) ** 2) / (np.sqrt(2 * np.pi) * safe)).sum(-1))
    return tuple(np.where(s <= 1.0, a, b) for a, b in zip(narrow, wide))


def predict_logit(node, draws: int, seed) -> LogitPredictive:
    """The predictive of every element of the logit node ``node`` under the current q."""
    role = "logits" if "logits" in node.parents else "logit"
    expr = node.parents[role]
    for parent in random_nodes(expr):
        if not parent.observed:
            parent._need_posterior()
    sampler = _sampler(node, role, expr)
    inner = expr.node if isinstance(expr, Sticks) else expr
    gaussian = is_linear(inner) and (not isinstance(expr, Sticks) or all(
        expr.dim_plate in n.plates for n in random_nodes(inner)))
    if gaussian:
        m, m2 = expect(expr, FirstTwo(), node.plates)
        s = np.sqrt(np.maximum(m2 - m * m, 0.0))
        p1, p2 = _quadrature(m, s, isinstance(expr, Sticks))
        odds = (m, s)
        interval = _gaussian_interval(m, s) if not isinstance(expr, Sticks) else _drawn_interval(node, role, expr)
    else:
        psi = _psi_draws(node, expr, draws, np.random.default_rng(seed))
        p = _probability(role, psi)
        p1, p2 = p.mean(0), (p * p).mean(0)
        odds = psi
        interval = _drawn_interval(node, role, expr)
    mean, var, scipy, classes = _counts(node, p1, p2, odds)
    method = "exact" if gaussian and scipy is not None else "monte-carlo" if not gaussian else "quadrature"
    return LogitPredictive(node.name, mean, var, None, method, scipy, sampler,
                           probability=p1, probabilities=classes, _interval=interval)


def _quadrature(m, s, sticks: bool) -> tuple[np.ndarray, np.ndarray]:
    """(E[p], E[p^2]) of sigmoid(psi), or of the stick-breaking probabilities (independent sticks)."""
    e1, d = logistic_normal(m, s)
    e2 = e1 - d
    if not sticks:
        return e1, e2
    stay1, stay2 = 1.0 - e1, 1.0 - 2.0 * e1 + e2
    ones = np.ones(m.shape[:-1] + (1,))
    before1 = np.concatenate([ones, np.cumprod(stay1, -1)], -1)
    before2 = np.concatenate([ones, np.cumprod(stay2, -1)], -1)
    return before1 * np.concatenate([e1, ones], -1), before2 * np.concatenate([e2, ones], -1)


def _counts(node, p1, p2, odds):
    """(mean, variance, scipy, class probabilities) of y given E[p], E[p^2] and ``odds``: psi's
    (mean, sd) when Gaussian, else its draws (for a NegativeBinomial's E[e^psi], E[e^{2 psi}])."""
    from scipy import stats

    factor = type(node.factor)
    if factor is LogitBernoulliFactor:
        return p1, p1 * (1 - p1), (lambda index: stats.bernoulli(p1 if index is None else p1[index])), \
            np.stack([1.0 - p1, p1], -1)
    if factor is LogitStickBreakingFactor and node.factor.trials is None:  # a Categorical
        return p1, p1 * (1 - p1), (lambda index: stats.multinomial(1, p1 if index is None else p1[index])), p1
    if factor is LogitNegativeBinomialFactor:
        r = np.broadcast_to(node.factor.r, node.plate_shape)
        if isinstance(odds, tuple):
            m, s = odds
            e1, e2 = np.exp(m + 0.5 * s * s), np.exp(2.0 * m + 2.0 * s * s)
        else:
            e1, e2 = np.exp(odds).mean(0), np.exp(2.0 * odds).mean(0)
        return r * e1, r * (e1 + e2) + r * r * (e2 - e1 * e1), None, None
    n = node.family.trials
    n = np.broadcast_to(n, node.plate_shape)[..., None] if factor is LogitStickBreakingFactor else np.broadcast_to(n, p1.shape)
    return n * p1, n * (p1 - p2) + n * n * (p2 - p1 * p1), None, None


def _sampler(node, role: str, expr) -> Callable:
    """Ancestral draws: psi from q, then y ~ p(y | psi)."""
    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        psi = align(draw(expr, n, rng, {}), plates_of(expr, node.plates), node.plates)
        natural = node.conditional({role: psi})
        lead = (n,) + node.plate_shape
        return node.family.sample(tuple(np.broadcast_to(a, lead + a.shape[len(lead):]) for a in natural), rng)
    return sample


def _psi_draws(node, expr, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` joint draws of the link's psi under q, over the node's plates (and sticks)."""
    psi = align(draw(expr, n, rng, {}), plates_of(expr, node.plates), node.plates)
    return np.broadcast_to(psi, (n,) + node.plate_shape + psi.shape[1 + len(node.plate_shape):])


def _probability(role: str, psi: np.ndarray) -> np.ndarray:
    return stick_probabilities(psi) if role == "logits" else special.expit(psi)


def _gaussian_interval(m, s) -> Callable:
    def interval(level: float):
        z = special.ndtri(0.5 + level / 2)
        return special.expit(m - z * s), special.expit(m + z * s)
    return interval


def _drawn_interval(node, role: str, expr) -> Callable:
    def interval(level: float):
        p = _probability(role, _psi_draws(node, expr, 4000, np.random.default_rng(0)))
        return tuple(np.quantile(p, [(1 - level) / 2, (1 + level) / 2], axis=0))
    return interval
