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

from ..graph.leaves import Context, per_datapoint
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

    needs_data_bound = True

    def inverse_temperature(self, st: dict) -> float:
        """E_q[1/T]."""
        return float(np.sum(st["r"] / self.temperatures))

    def start(self, engine, plan, state, rng) -> dict:
        log_c = self.log_partition
        if log_c is None:
            log_c = estimate_log_partition(engine, plan, state, self.temperatures, self.samples, rng)
        if log_c.shape != self.temperatures.shape:
            raise ValueError("Tempering: log_partition needs one value per temperature")
        return {"r": np.full(self.temperatures.size, 1.0 / self.temperatures.size), "log_partition": log_c}

    def weights(self, t, rows, rng, st):
        w = self.inverse_temperature(st)
        return (None, None) if w == 1.0 else (w, w)

    def observe(self, engine, plan, ctx, data_bound, st):
        """Mandt eq. (9) with the minibatch estimate of sum_i E[log p(x_i, z_i | beta)]."""
        logits = data_bound / self.temperatures + self.log_prior - st["log_partition"]
        return dict(st, r=np.exp(logits - logsumexp(logits)))

    def record(self, t, rows, st):
        return {"temperature": 1.0 / self.inverse_temperature(st)}


def _observed(engine, plan) -> list:
    return [n for n in engine.model.nodes.values() if n.observed and any(p.name in plan.names for p in n.plates)]


def estimate_log_partition(engine, plan, state, temperatures, samples, rng) -> np.ndarray:
    """log C(T_m) by Monte Carlo over the global nodes' prior (see the module docstring)."""
    from ..errors import GraphError

    local = plan.local
    selectors = [n for n in local if _enumerable(n)]
    if len(selectors) != len(local) or len(selectors) > 1:
        raise GraphError("Tempering: log C(T) can be estimated only when the data plate holds observed nodes "
                         "and at most one local Categorical selector; give log_partition= otherwise")
    observed = _observed(engine, plan)
    z = selectors[0] if selectors else None
    out = np.empty((samples, temperatures.size))
    for s in range(samples):
        point = state
        for node in plan.stepped:
            eta = engine.factors[node.name].messages(node, ctx=Context(state=point))
            point = point.updated({node.name: (eta, _point(node, node.family.sample(eta, rng)))})
        out[s] = _log_integral(engine, point, observed, z, temperatures)
    return logsumexp(out, axis=0) - np.log(samples)


def _point(node, value):
    return node.family.statistics(value, node.event_shape)


def _enumerable(node) -> bool:
    """A Categorical node over its own factor: its K values per element can be summed over
    (log pi read from its factor's message), as _log_integral does."""
    from ..factors import CategoricalFactor

    return node.factor_cls is CategoricalFactor


def _log_integral(engine, point, observed, z, temperatures) -> np.ndarray:
    """sum_i log int p(x_i, z_i | beta)^(1/T) for the globals' point moments in ``point``."""
    total = np.zeros(temperatures.size)
    at = Context(state=point)
    if z is None:
        for x in observed:
            eta, c = engine.conditional(x).messages(x, ctx=at), x.factor_weights()
            total += _tempered(x.family, eta, c, temperatures)
        return total
    k = z.event_shape[0]
    c_z = z.factor_weights()
    log_pi = engine.factors[z.name].messages(z, ctx=at)[0]  # log pi at the point, per element
    per_k = []
    for j in range(k):
        onehot = np.zeros(z.plate_shape + (k,))
        onehot[..., j] = 1.0
        at_j = Context(state=point.updated({z.name: ((), (onehot,))}))
        acc = np.zeros(z.plate_shape + (temperatures.size,))
        for x in observed:
            eta, c = engine.conditional(x).messages(x, ctx=at_j), x.factor_weights()
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


class LocalTempering(Policy):
    """Local variational tempering (Mandt et al., section 3.4, eq. (10)-(11)): a temperature per
    datapoint, q(y_n) = r_n over the grid.

    Datapoint n's factors are weighted E[1/T_n] = sum_m r_nm / T_m, in the local updates and in the
    global targets (eq. (11)). The r_n of the drawn datapoints are set to the mean-field optimum
    r_nm ∝ exp{E_q[log p(x_n, z_n | beta / T_m)] + log pi_m}, using
    log p(x | eta / T) = (1/T) log p(x | eta) - [A(eta / T) - A(eta) / T] for an exponential family
    and the plug-in E_q[A(eta / T)] ≈ A(E_q[eta] / T) (the tempered likelihood is not conjugate;
    Mandt et al. approximate it too). The typeset eq. (10) also scales log pi_m by 1/T_m; here the
    prior enters as in any mean-field update. Supported data plates: observed nodes and at most one
    local Categorical selector, as for the partition function of Tempering.
    """

    def __init__(self, temperatures, prior=None):
        t = np.asarray(temperatures, float)
        if t.ndim != 1 or t.size < 1 or np.any(t < 1) or np.any(np.diff(t) <= 0):
            raise ValueError("LocalTempering: temperatures must be an increasing 1-D grid of values >= 1")
        self.temperatures = t
        self.log_prior = np.log(np.full(t.size, 1.0 / t.size) if prior is None else np.asarray(prior, float))

    def start(self, engine, plan, state, rng) -> dict:
        _local_structure(plan)
        return {"r": np.tile(np.exp(self.log_prior), (plan.plate.size, 1))}

    def inverse(self, rows, st) -> np.ndarray:
        return st["r"][rows] @ (1.0 / self.temperatures)

    def weights(self, t, rows, rng, st):
        w = self.inverse(rows, st)
        return w, w

    def observe(self, engine, plan, ctx, data_bound, st):
        """Mean-field update of r_n for the drawn datapoints (eq. (10)), locals in ``ctx``."""
        rows = ctx.subset[plan.plate_name]
        ell = np.zeros(rows.size)
        plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner, state=ctx.state)
        for f in engine.factors.values():
            if any(p.name in ctx.subset for p in f.child.plates):
                per = f.elog(engine.factor_weight(f), per_element=True, ctx=plain)
                ell += per_datapoint(per, f.child.plates, ctx, rows.size)
        log_c = _local_log_normalizers(engine, plan, ctx, self.temperatures)
        logits = ell[:, None] / self.temperatures - log_c + self.log_prior
        r = st["r"].copy()
        r[rows] = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
        return dict(st, r=r)

    def record(self, t, rows, st):
        return {"temperature": float(np.mean(1.0 / self.inverse(rows, st)))}


def _local_structure(plan):
    from ..errors import GraphError

    local = plan.local
    if not all(_enumerable(n) for n in local) or len(local) > 1:
        raise GraphError("LocalTempering supports data plates with observed nodes and at most one local "
                         "Categorical selector")


def _local_log_normalizers(engine, plan, ctx, temperatures) -> np.ndarray:
    """Per drawn datapoint, log int p(x_n, z_n | E[eta])^(1/T) dx dz, as in estimate_log_partition."""
    observed = _observed(engine, plan)
    rows = ctx.subset[plan.plate_name]
    out = np.zeros((rows.size, temperatures.size))
    z = plan.local[0] if plan.local else None
    plain = Context(subset=ctx.subset, owner=ctx.owner, state=ctx.state)
    if z is None:
        for x in observed:
            eta = engine.conditional(x).messages(x, ctx=plain)
            c = None if x.factor_weights() is None else ctx.take(x.factor_weights(), x.plates)
            per = _tempered(x.family, eta, c, temperatures, total=False)
            out += per_datapoint(per, x.plates, ctx, rows.size)
        return out
    k = z.event_shape[0]
    c_z = None if z.factor_weights() is None else ctx.take(z.factor_weights(), z.plates)
    log_pi = engine.factors[z.name].messages(z, ctx=plain)[0]
    comps = []
    for j in range(k):
        onehot = np.zeros(ctx.shape(z.plates) + (k,))
        onehot[..., j] = 1.0
        with_z = Context(subset=ctx.subset, owner=ctx.owner, overrides={z.name: (onehot,)}, state=ctx.state)
        acc = np.zeros(ctx.shape(z.plates) + (temperatures.size,))
        for x in observed:
            eta = engine.conditional(x).messages(x, ctx=with_z)
            c = None if x.factor_weights() is None else ctx.take(x.factor_weights(), x.plates)
            acc += _tempered(x.family, eta, c, temperatures, total=False)
        cz = 1.0 if c_z is None else c_z[..., None]
        comps.append(acc + cz * log_pi[..., j, None] / temperatures)
    per = logsumexp(np.stack(comps), axis=0)
    return out + per_datapoint(per, z.plates, ctx, rows.size)
