"""Global variational tempering (Mandt et al., Variational Tempering, section 3, eq. (5) and (9)).

The temperature is a latent variable y over a grid 1 = T_1 < ... < T_M with prior pi_m and a
multinomial q(y) = r. The data plate's factors are weighted E_q[1/T] = sum_m r_m / T_m (the role
1/T plays in annealing), in the local updates and in the global targets, and after each minibatch

    r_m  propto  exp{ (1/T_m) sum_i E_q[log p(x_i, z_i | beta)] + log pi_m - log C(T_m) }      (eq. 9)

with the sum over all data estimated as N/|S| times the minibatch's. The tempered partition
function (eq. 3)

    C(T) = int p(beta) prod_i C_i(beta, T) dbeta,   C_i(beta, T) = int int p(x_i, z_i | beta)^(1/T) dx_i dz_i

is given by the user or estimated as the paper describes: Monte Carlo over the prior of the global
nodes (``samples`` draws of beta), each draw's sum_i log C_i(beta, T) from the local subtree's own
tempered bound on ``partition_rows`` datapoints scaled by N / their number
(:func:`vmp.inference.tempered.log_normalizers`: exact for observed nodes under at most one local
Categorical, a mean-field bound above that, as LDA's theta; ``importance`` > 0 refines it).
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .. import domains
from ..graph.leaves import Context
from ..inference.tempered import log_normalizers, point_statistics, selector
from ..inference.policy import Policy


def log_prior(name: str, temperatures: np.ndarray, prior) -> np.ndarray:
    """log pi_m over the grid: uniform, or the given positive weights."""
    if prior is None:
        return np.log(np.full(temperatures.size, 1.0 / temperatures.size))
    return np.log(domains.per_temperature(f"{name}(prior=)", prior, temperatures.size, positive=True))


class Tempering(Policy):
    def __init__(self, temperatures, log_partition=None, prior=None, samples: int = 100,
                 partition_rows: int = 200, importance: int = 0):
        self.temperatures = domains.grid("Tempering(temperatures=)", temperatures)
        self.log_prior = log_prior("Tempering", self.temperatures, prior)
        self.log_partition = None if log_partition is None else domains.per_temperature(
            "Tempering(log_partition=)", log_partition, self.temperatures.size)
        self.samples = domains.integer("Tempering(samples=)", samples, 1)
        self.partition_rows = domains.integer("Tempering(partition_rows=)", partition_rows, 1)
        self.importance = domains.integer("Tempering(importance=)", importance, 0)

    needs_data_bound = True

    def inverse_temperature(self, st: dict) -> float:
        """E_q[1/T]."""
        return float(np.sum(st["r"] / self.temperatures))

    def start(self, engine, plan, state, rng) -> dict:
        log_c = self.log_partition
        if log_c is None:
            log_c = estimate_log_partition(engine, plan, state, self.temperatures, self.samples, rng,
                                           self.partition_rows, self.importance)
        return {"r": np.full(self.temperatures.size, 1.0 / self.temperatures.size), "log_partition": log_c}

    def weights(self, t, rows, rng, st):
        w = self.inverse_temperature(st)
        return (None, None) if w == 1.0 else (w, w)

    def observe(self, engine, plan, ctx, data_bound, st):
        """Mandt eq. (9) with the minibatch estimate of sum_i E[log p(x_i, z_i | beta)]."""
        logits = data_bound / self.temperatures + self.log_prior - st["log_partition"]
        return dict(st, r=np.exp(logits - logsumexp(logits)))

    def tempered_weight(self, t, rows, st):
        w = self.inverse_temperature(st)
        return None if w == 1.0 else w

    def objective_terms(self, st):
        """E_q[log p(T)] - E_q[log C(T)] + H[q(T)]: with E_q[1/T] on the data plate's factors, the
        bound of Mandt et al. eq. (5) whose coordinate step in q(T) is eq. (9)."""
        r = st["r"]
        nz = r > 0
        return float(r @ (self.log_prior - st["log_partition"]) - np.sum(r[nz] * np.log(r[nz])))

    def record(self, t, rows, st):
        return {"temperature": 1.0 / self.inverse_temperature(st)}


def estimate_log_partition(engine, plan, state, temperatures, samples: int, rng: np.random.Generator,
                           rows: int = 200, importance: int = 0) -> np.ndarray:
    """log C(T_m) by Monte Carlo over the global nodes' prior (see the module docstring)."""
    selector(engine, plan)
    size = plan.plate.size
    drawn = np.arange(size) if rows >= size else np.sort(rng.choice(size, rows, replace=False))
    base = plan.context(drawn)
    out = np.empty((samples, temperatures.size))
    for s in range(samples):
        point = state
        for node in [n for n in plan.stepped if n not in plan.local]:
            eta = engine.factors[node.name].messages(node, ctx=Context(state=point))
            point = point.updated({node.name: (eta, point_statistics(node, node.family.sample(eta, rng)))})
        ctx = Context(subset=base.subset, owner=base.owner, state=point)
        per = log_normalizers(engine, plan, ctx, temperatures, samples=importance, rng=rng)
        out[s] = size / drawn.size * per.sum(axis=0)
    return logsumexp(out, axis=0) - np.log(samples)
