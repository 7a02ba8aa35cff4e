"""The bound a stochastic fit's global nodes still have to gain, read from their parameters.

For a conjugate node with the others held, the bound as a function of its q is
L(q) = const - KL(q || q*), q* the coordinate optimum, whose natural parameter is the expected
target lambda* (Winn & Bishop 2005, eq. (5)). So the bound one batch coordinate pass over the
global nodes would still gain is sum_i KL(q_lambda_i || q_lambda_i*). SVI estimates
lambda* - lambda, the natural gradient (Hoffman et al. 2013, eq. (10)), by g_t = lambda^temp -
lambda at each step; an average gbar of recent g's estimates it with less noise, and
KL(q_lambda || q_(lambda + gbar)) ~ 1/2 gbar^T F gbar (F the Fisher information, the Hessian of
the log-normalizer) then carries a noise bias 1/2 tr(F Var gbar).

The g's of odd and even steps are averaged apart (gA, gB: exponential averages of memory
GAIN_MEMORY steps each, plain averages before): gbar = (gA + gB) / 2 and d = gA - gB have the
same mean gap and noise, and Var d = 4 Var gbar, so 1/2 tr(F Var gbar) ~ KL(q_lambda ||
q_(lambda + d)) / 4, which is subtracted. The averages are the fit's state (``extra["gain"]``),
O(global parameters) per step.
"""
from __future__ import annotations

import numpy as np

#: steps of memory of each half's exponential average of the gradients
GAIN_MEMORY = 20
#: halvings of a direction tried when lambda + direction leaves the natural-parameter domain
GAIN_HALVINGS = 30


def average(avg: dict | None, gradients: dict, t: int, memory: float = GAIN_MEMORY) -> dict:
    """The running averages after step ``t`` with ``gradients`` {node: g_t}: step t's parity
    picks the half; its weight is max(1/n, 1/memory) for the n-th g of that half."""
    avg = {"n": [0, 0], "g": [{}, {}]} if avg is None else avg
    half = t % 2
    n = avg["n"][half] + 1
    w = max(1.0 / n, 1.0 / memory)
    old = avg["g"][half]
    new = {name: [np.asarray(g, float) if name not in old else old[name][i] + w * (np.asarray(g, float) - old[name][i])
                  for i, g in enumerate(grad)] for name, grad in gradients.items()}
    counts = list(avg["n"])
    counts[half] = n
    return {"n": counts, "g": [new, avg["g"][1]] if half == 0 else [avg["g"][0], new]}


def divergence(family, natural: tuple, direction: tuple, moments: tuple | None = None) -> float:
    """sum over elements of KL(q_lambda || q_(lambda + direction)); an element whose lambda +
    direction leaves the domain reads 4^k KL(q_lambda || q_(lambda + direction / 2^k)) at the
    first k that stays in it (equal to second order: KL is quadratic near lambda)."""
    plates = family.plate_shape(natural)
    scale = np.ones(plates)
    for _ in range(GAIN_HALVINGS):
        other = tuple(a + _expand(scale, n) * d for a, d, n in zip(natural, direction, family.event_ndims))
        ok = family.valid(other)
        if ok.all():
            break
        scale = np.where(ok, scale, scale / 2.0)
    else:
        raise FloatingPointError(f"{family.name}: no step along the averaged gradient stays in the domain")
    return float(np.sum(family.kl(natural, other, moments) / scale ** 2))


def gain(families: dict, natural: dict, avg: dict, moments: dict | None = None) -> float:
    """G = sum over nodes of KL(q_lambda || q_(lambda + gbar)) - KL(q_lambda || q_(lambda + d)) / 4,
    gbar = (gA + gB) / 2, d = gA - gB: the bound one coordinate pass over the global nodes would
    gain, its noise bias removed (the module's docstring). ``families`` and ``natural`` per node."""
    a, b = avg["g"]
    total = 0.0
    for name, family in families.items():
        if name not in a or name not in b:
            return np.inf
        m = None if moments is None else moments[name]
        mean = tuple(0.5 * (x + y) for x, y in zip(a[name], b[name]))
        spread = tuple(x - y for x, y in zip(a[name], b[name]))
        total += divergence(family, natural[name], mean, m) - 0.25 * divergence(family, natural[name], spread, m)
    return total


def _expand(scale: np.ndarray, event_ndims: int) -> np.ndarray:
    return scale.reshape(scale.shape + (1,) * event_ndims)
