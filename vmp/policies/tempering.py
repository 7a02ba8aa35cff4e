"""Global variational tempering (Mandt et al., Variational Tempering, section 3, eq. (5) and (9)).

The temperature is a latent variable y over a grid 1 = T_1 < ... < T_M with prior pi_m and a
multinomial q(y) = r. The data plate's factors are weighted E_q[1/T] = sum_m r_m / T_m (the role
1/T plays in annealing), and after each minibatch

    r_m  propto  exp{ (1/T_m) sum_i E_q[log p(x_i, z_i | beta)] + log pi_m - log C(T_m) }      (eq. 9)

with the sum over all data estimated as N/|S| times the minibatch's. The tempered partition
function C(T) = int p(beta) prod_i int p(x_i, z_i | beta)^(1/T) dx_i dz_i dbeta (eq. 3) is given by
the user or estimated by Monte Carlo over the prior of the global nodes: for a draw of beta, each
datapoint's integral is exp{A(c eta / T) - (c/T) A(eta)} for an observed node with natural
parameter eta and count c (every family here has unit base measure), summed over a local
Categorical selector's categories when there is one. log C(1) = 0 exactly.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .base import Policy


class Tempering(Policy):
    def __init__(self, temperatures, log_partition=None, prior=None, samples: int = 100):
        t = np.asarray(temperatures, float)
        if t.ndim != 1 or t.size < 1 or np.any(t < 1) or np.any(np.diff(t) <= 0):
            raise ValueError("Tempering: temperatures must be an increasing 1-D grid of values >= 1")
        self.temperatures = t
        self.log_prior = np.log(np.full(t.size, 1.0 / t.size) if prior is None else np.asarray(prior, float))
        self.log_partition = None if log_partition is None else np.asarray(log_partition, float)
        self.samples = int(samples)
        self.r = np.full(t.size, 1.0 / t.size)

    @property
    def inverse_temperature(self) -> float:
        """E_q[1/T]."""
        return float(np.sum(self.r / self.temperatures))

    def prepare(self, engine, minibatch, rng) -> None:
        if self.log_partition is None:
            self.log_partition = estimate_log_partition(engine, minibatch, self.temperatures, self.samples, rng)
        if self.log_partition.shape != self.temperatures.shape:
            raise ValueError("Tempering: log_partition needs one value per temperature")

    def weights(self, t, rows, rng):
        w = self.inverse_temperature
        return (None, None) if w == 1.0 else (w, w)

    def observe(self, data_elog: float) -> None:
        """Mandt eq. (9) with the minibatch estimate of sum_i E[log p(x_i, z_i | beta)]."""
        logits = data_elog / self.temperatures + self.log_prior - self.log_partition
        self.r = np.exp(logits - logsumexp(logits))

    def record(self, t):
        return {"temperature": 1.0 / self.inverse_temperature}


def estimate_log_partition(engine, minibatch, temperatures, samples, rng) -> np.ndarray:
    """log C(T_m) by Monte Carlo over the global nodes' prior (see the module docstring)."""
    from ..errors import GraphError
    from ..families import Categorical
    from ..graph.compiled import CompiledFactor

    local = minibatch.local
    selectors = [n for n in local if n.family is Categorical]
    if len(selectors) != len(local) or len(selectors) > 1:
        raise GraphError("Tempering: log C(T) can be estimated only when the data plate holds observed nodes "
                         "and at most one local Categorical selector; give log_partition= otherwise")
    names = {minibatch.plate_name} | set(minibatch.linked)
    observed = [n for n in engine.model.nodes.values()
                if n.observed and any(p.name in names for p in n.plates)]
    saved = {n.name: (n.natural, n.moments) for n in engine.hidden}
    factors = {}
    for x in observed:  # the conditional of each observed node, compiled as if it were hidden
        x.observed = False
        try:
            factors[x.name] = CompiledFactor(x)
        finally:
            x.observed = True
    z = selectors[0] if selectors else None
    out = np.empty((samples, temperatures.size))
    try:
        for s in range(samples):
            for node in minibatch.globals:
                eta = engine.factors[node.name].messages(node)
                node.moments = _point(node, node.family.sample(eta, rng))
                node.natural = eta
                node.version += 1
            out[s] = _log_integral(engine, factors, observed, z, temperatures)
    finally:
        for n in engine.hidden:
            n.set_natural(*saved[n.name])
    return logsumexp(out, axis=0) - np.log(samples)


def _point(node, value):
    from ..families import Categorical, Dirichlet

    if node.family is Dirichlet:
        return (np.log(np.maximum(value, 1e-300)),)
    if node.family is Categorical:
        return Categorical.statistics(value, node.event_shape[0])
    return node.family.statistics(value)


def _log_integral(engine, factors, observed, z, temperatures) -> np.ndarray:
    """sum_i log int p(x_i, z_i | beta)^(1/T) for the globals' current point moments."""
    total = np.zeros(temperatures.size)
    if z is None:
        for x in observed:
            eta, c = factors[x.name].messages(x), x.factor_weights()
            total += _tempered(x.family, eta, c, temperatures)
        return total
    k = z.event_shape[0]
    c_z = z.factor_weights()
    log_pi = engine.factors[z.name].messages(z)[0]  # log pi at the point, per element
    per_k = []
    for j in range(k):
        onehot = np.zeros(z.plate_shape + (k,))
        onehot[..., j] = 1.0
        z.moments = (onehot,)
        z.version += 1
        acc = np.zeros(z.plate_shape + (temperatures.size,))
        for x in observed:
            eta, c = factors[x.name].messages(x), x.factor_weights()
            acc += _tempered(x.family, eta, c, temperatures, total=False)
        cz = 1.0 if c_z is None else c_z[..., None]
        acc += cz * log_pi[..., j, None] / temperatures
        per_k.append(acc)
    return np.sum(logsumexp(np.stack(per_k), axis=0), axis=tuple(range(len(z.plate_shape))))


def _tempered(family, eta, counts, temperatures, total: bool = True) -> np.ndarray:
    """log int p(x)^(c/T) dx = A(c eta / T) - (c / T) A(eta), per element (or summed)."""
    base = family.log_normalizer(eta)
    cols = []
    for temp in temperatures:
        c = (1.0 if counts is None else counts) / temp
        scaled = tuple(e * np.reshape(c, np.shape(c) + (1,) * (e.ndim - np.ndim(c))) for e in eta)
        cols.append(family.log_normalizer(scaled) - c * base)
    out = np.stack(cols, axis=-1)
    return out.sum(axis=tuple(range(out.ndim - 1))) if total else out
