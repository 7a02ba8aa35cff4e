"""Local variational tempering (Mandt et al., Variational Tempering, section 3.4, eq. (10)-(11)).

A temperature per datapoint, q(y_n) = r_n over the grid 1 = T_1 < ... < T_M. Datapoint n's factors
(its locals' and its observations') are weighted E[1/T_n] = sum_m r_nm / T_m in the local updates
and in the global targets (eq. (11)). After the local step the drawn datapoints' r_n are set to
the mean-field optimum

    r_nm  propto  exp{ (1/T_m) E_q[log p(x_n, z_n | beta)] - log C_n(T_m) + log pi_m },

i.e. eq. (10) written with p(x_n, z_n | beta / T) = p(x_n, z_n | beta)^(1/T) / C_n(T), where
C_n(T) = int int p(x_n, z_n | beta)^(1/T) dx_n dz_n is the tempered log-normalizer of datapoint n's
local subtree (:func:`vmp.inference.tempered.log_normalizers`: its own bound at 1/T, with the
globals' moments plugged in as Mandt et al. do; ``importance`` > 0 importance-samples it). The
typeset eq. (10) also scales log pi_m by 1/T_m; here the prior enters as in any mean-field update.

With ``collapsed=True`` the locals are integrated out of the update of T_n instead (q(z_n, T_n) =
q(T_n) q(z_n | T_n), each temperature with its own optimal locals):

    r_nm  propto  pi_m Z_n(T_m) / C_n(T_m),   Z_n(T) = int p(x_n, z_n | beta)^(1/T) dz_n,

the posterior of T_n given the globals, with Z_n bounded by the subtree's bound at 1/T as C_n is.
The mean-field update reads E_q[log p] at the locals of the current temperature, so a datapoint at
a high T has flat locals, a low E_q[log p], and stays hot; the collapsed one does not.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from .. import domains
from ..graph.leaves import Context, per_datapoint
from ..inference.tempered import log_normalizers, selector
from ..inference.policy import Policy
from .tempering import log_prior


class LocalTempering(Policy):
    def __init__(self, temperatures, prior=None, importance: int = 0, collapsed: bool = False):
        self.temperatures = domains.grid("LocalTempering(temperatures=)", temperatures)
        self.log_prior = log_prior("LocalTempering", self.temperatures, prior)
        self.importance = domains.integer("LocalTempering(importance=)", importance, 0)
        if not isinstance(collapsed, (bool, np.bool_)):
            raise domains.refuse("LocalTempering(collapsed=)", "True or False", collapsed)
        self.collapsed = bool(collapsed)

    def start(self, engine, plan, state, rng) -> dict:
        selector(engine, plan)
        return {"r": np.tile(np.exp(self.log_prior), (plan.plate.size, 1)),
                "seed": int(rng.integers(2 ** 62)) if self.importance else 0, "calls": 0}

    def inverse(self, rows, st) -> np.ndarray:
        """E[1/T_n] for the datapoints ``rows``."""
        return st["r"][rows] @ (1.0 / self.temperatures)

    def weights(self, t, rows, rng, st):
        w = self.inverse(rows, st)
        return w, w

    def tempered_weight(self, t, rows, st):
        return self.inverse(rows, st)

    def observe(self, engine, plan, ctx, data_bound, st):
        """Update of r_n for the drawn datapoints (eq. (10), or collapsed), locals in ``ctx``."""
        rows = ctx.subset[plan.plate_name]
        plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner, state=ctx.state)
        rng = np.random.default_rng([st["seed"], st["calls"]])
        log_c = log_normalizers(engine, plan, plain, self.temperatures, samples=self.importance, rng=rng)
        if self.collapsed:
            fit = log_normalizers(engine, plan, plain, self.temperatures, integrate_data=False,
                                  samples=self.importance, rng=rng)
        else:
            ell = np.zeros(rows.size)
            for f in engine.factors.values():
                if plan.on_batch(f):
                    ell += per_datapoint(f.elog(engine.factor_weight(f), per_element=True, ctx=plain),
                                         f.child.plates, ctx, rows.size)
            fit = ell[:, None] / self.temperatures
        logits = fit - log_c + self.log_prior
        r = st["r"].copy()
        r[rows] = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
        return dict(st, r=r, calls=st["calls"] + 1)

    def record(self, t, rows, st):
        return {"temperature": float(np.mean(1.0 / self.inverse(rows, st)))}
