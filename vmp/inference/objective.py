"""The objective a fit with policies ascends, and the stretch of its evaluations the loop watches.

With policies the steps ascend the bound with the data plate's factors weighted by the
policies' 1/T, plus the policies' own terms (Mandt et al. eq. (4)-(5)). Batch VMP's stopping
rule and decrease check and the monitors compare its values, but only values of one objective:
a new :class:`~vmp.inference.state.Stretch` begins when the temperature of a policy without own
terms (annealing's schedule) moves. A stretch is shifted by one constant to start at the bound,
so that relative tolerances read the bound's size (a tempered bound's parts can cancel to near
zero).
"""
from __future__ import annotations

import numpy as np

from .method import Method, combine
from .state import State, Stretch

#: a tempering weight that moved by less than this (relative) since the stretch of evaluations
#: began counts as the same temperature: the objective is the same, so its values compare
SAME_TEMPERATURE = 1e-9


def extend(method: Method, engine, state: State, t: int, value: float) -> Stretch:
    """The state's stretch of evaluations with this one added (``value``: the bound at step t),
    or a new stretch starting at ``value`` when the objective changed."""
    rows = method.objective_rows()
    weight, key, terms = None, [], 0.0
    for p, st in zip(method.policies, state.loop.policies):
        w, own = p.tempered_weight(t, rows, st), p.objective_terms(st)
        weight = combine(weight, w)
        if own is None:
            key.append(1.0 if w is None else w)
        else:
            terms += own
    objective = value if weight is None else method.tempered_bound(engine, state, rows, weight)
    objective += terms
    key = [np.asarray(k, float) for k in key]
    stretch = state.loop.objective
    if stretch is not None and len(stretch.key) == len(key) and all(
            np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=SAME_TEMPERATURE, atol=0.0)
            for a, b in zip(stretch.key, key)):
        return Stretch(stretch.key, stretch.values + [objective + stretch.offset], stretch.offset)
    return Stretch(key, [value], value - objective)
