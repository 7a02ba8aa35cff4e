"""The hooks of a message-weighting policy, which the loop calls (the policies, SVI+, annealing and
tempering, are in ``vmp/policies/``): every one is a weight on the data plate's factors.

For a minibatch S of the data plate, a policy returns two weights, each None (no change), a
number, or an array over the drawn elements (one per datapoint, shared by every factor that
datapoint's messages come from):

- ``local``: multiplies the factors in the local updates (annealing: 1/T);
- ``global_``: multiplies the factors in the global targets, on top of N/|S| (SVI+:
  1 + eps_n - mean(eps); annealing: 1/T).

Weights compose by multiplication with the subsampling scale and with data weights (counts).

In batch VMP (``fit(method="batch", policies=...)``) a policy with :attr:`batch` weights every
factor of the data plate, the locals' and the globals' updates alike, by its global weight (the
policies that allow batch VMP give the same weight to both), over all of the plate's rows.

The objective a tempered fit ascends is the bound with the data plate's factors weighted by
:meth:`tempered_weight` (Mandt et al. eq. (4)), plus the policy's own terms (:meth:`objective_terms`)
when its update of ``st`` is a coordinate step on that bound (global tempering's q(T)). Batch VMP's
stopping rule and decrease check and the monitors watch that objective, and compare only values at
one temperature of the policies without own terms (annealing's schedule moves the objective).

A policy keeps no state of its own: what it learns (a temperature's q, for instance) is plain
data ``st`` that lives in the fit's State, starts as :meth:`Policy.start` and is returned anew by
:meth:`Policy.observe`. Every hook is declared here; the loop calls each of them on every policy.
"""
from __future__ import annotations

import numpy as np


class Policy:
    #: draws of the global weights when a weighted target leaves its domain (then the step is skipped)
    redraws: int = 0
    #: whether :meth:`observe` reads the minibatch's data bound (computed only when some policy does)
    needs_data_bound: bool = False
    #: whether the policy weights batch VMP; if not, why (the error a batch fit gives)
    batch: bool = True
    batch_refusal: str = ""

    @property
    def name(self) -> str:
        return type(self).__name__

    def start(self, engine, plan, state, rng: np.random.Generator) -> dict:
        """The policy's initial state (plain data), given the model, the subsampling plan and
        the fit's initial State."""
        return {}

    def weights(self, t: int, rows: np.ndarray, rng: np.random.Generator, st: dict):
        """(local, global_) weights for step t on the drawn rows."""
        return None, None

    def observe(self, engine, plan, ctx, data_bound: float | None, st: dict) -> dict:
        """After the local step of a minibatch (locals in ``ctx.overrides``, q in ``ctx.state``):
        the policy's new state. ``data_bound`` is N/|S| times the minibatch's expected
        log-likelihood terms when :attr:`needs_data_bound`."""
        return st

    def tempered_weight(self, t: int, rows: np.ndarray, st: dict):
        """1/T (a number, or one value per row of ``rows``) on the data plate's factors in the
        objective of step t; None: the policy does not temper (T = 1)."""
        return None

    def objective_terms(self, st: dict) -> float | None:
        """The policy's own terms of the objective when its update of ``st`` ascends it (None:
        the objective moves whenever :meth:`tempered_weight` does)."""
        return None

    def record(self, t: int, rows: np.ndarray, st: dict) -> dict:
        """Values for the history at step t (e.g. {'temperature': T})."""
        return {}
