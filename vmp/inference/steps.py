"""Steps as functions of (engine, state, draw): they return natural parameters and an info
record, and never read or write a node's q or a module global. These are what an executor runs.

- :func:`sweep`: one batch VMP sweep, parents first (Winn & Bishop section 3.2);
- :func:`local_step`: the local nodes of a minibatch optimized given the global q (Hoffman et
  al. 2013, Fig. 6 step 5; Paquet Alg. 2);
- :func:`targets`: lambda^temp of stepped nodes from one draw (Paquet eq. (6)), from one snapshot
  (option (b)) or each from the state its predecessors left (option (a), :func:`coordinate`);
- :func:`optimize_locals` and :func:`heldout_bound` for evaluations.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..graph.leaves import Context
from .engine import Engine
from .state import State
from .subsample import scaled_context


def sweep(engine: Engine, state: State, schedule) -> tuple[State, dict]:
    """One coordinate-ascent sweep; info: the relative change of each node's parameters."""
    change = {}
    for node in schedule:
        old = state.natural[node.name]
        new, moments = engine.coordinate(state, node)
        engine.check_domain(node, new)
        state = state.updated({node.name: (new, moments)})
        change[node.name] = relative_change(old, new)
    return state, {"change": change}


def local_step(engine: Engine, plan, state: State, ctx: Context, weight=None) -> tuple[Context, dict, int]:
    """Optimize the local nodes of one minibatch given the global q in ``state``.

    The locals start from their prior messages, so nothing of earlier minibatches leaks in.
    ``weight`` (a policy's local weight, e.g. 1/T) multiplies the minibatch's factors. Returns
    the Context of the rows with the locals' moments in its overrides, their natural parameters
    (restricted to the rows), and the number of observed elements read.
    """
    ctx = replace(ctx, overrides={}, state=state)
    natural = {}
    for node in plan.local:
        own = scaled_context(ctx, node, 1.0, weight)
        natural[node.name] = engine.factors[node.name].messages(node, ctx=own)
        ctx.overrides[node.name] = node.family.moments(natural[node.name])
    data = [f for f in engine.factors.values() if f.child.observed and plan.on_batch(f)]
    size = sum(int(np.prod(ctx.shape(f.child.plates))) for f in data)
    accesses = 0
    for _ in range(plan.local_iterations):
        change = 0.0
        for node in reversed(plan.local):
            contexts = ctx if weight is None else _own_and_children(engine, plan, ctx, node, weight)
            new = engine.target(state, node, ctx=contexts)
            moments = node.family.moments(new)
            change = max(change, mean_change(node.family, natural[node.name], ctx.overrides[node.name], new, moments))
            natural[node.name] = new
            ctx.overrides[node.name] = moments
        accesses += size
        if change < plan.local_tol:
            break
    return ctx, natural, accesses


def _own_and_children(engine, plan, ctx, node, weight) -> dict:
    return {f.child.name: scaled_context(ctx, f.child, 1.0, weight) if plan.on_batch(f) else None
            for f in engine.touching[node.name]}


def targets(engine: Engine, plan, state: State, draw, nodes, weight=None) -> dict:
    """lambda^temp of each of ``nodes`` from one draw, all read from ``state`` (option (b))."""
    return {node.name: engine.target(state, node, ctx=plan.contexts(engine, draw, node, weight))
            for node in nodes}


def coordinate(engine: Engine, plan, state: State, draw, node, rho: float, weight=None):
    """(natural, moments) of ``node`` after one stochastic coordinate step (option (a))."""
    return engine.coordinate(state, node, ctx=plan.contexts(engine, draw, node, weight), rho=rho)


def optimize_locals(engine: Engine, plan, state: State) -> State:
    """Exact local updates on all data given the global q (for evaluating the full ELBO)."""
    for _ in range(plan.local_iterations):
        old = [state.moments[n.name] for n in plan.local]
        for node in reversed(plan.local):
            state = state.updated({node.name: engine.coordinate(state, node)})
        change = max((max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(o, state.moments[n.name]))
                      for o, n in zip(old, plan.local)), default=0.0)
        if change < plan.local_tol:
            break
    return state


def data_bound(engine: Engine, plan, ctx: Context) -> float:
    """N/|S| times the minibatch's expected log-likelihood terms (its factors on the rows)."""
    plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner, state=ctx.state)
    return plan.scale * sum(float(f.elog(engine.factor_weight(f), ctx=plain)) for f in engine.factors.values()
                            if plan.on_batch(f))


def heldout_bound(engine: Engine, plan, state: State) -> float:
    """Per-element ELBO of the held-out rows: locals optimized on them, their factors and
    entropies summed, divided by the number of held-out elements."""
    ctx, natural, _ = local_step(engine, plan, state, plan.context(plan.heldout))
    total = 0.0
    for f in engine.factors.values():
        if plan.on_batch(f):
            total += float(f.elog(engine.factor_weight(f), ctx=ctx))
    for node in plan.local:
        h = node.family.entropy(natural[node.name], ctx.overrides[node.name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += float(np.sum(h))
    return total / plan.heldout.size


def mean_change(family, old_natural, old_moments, new_natural, new_moments) -> float:
    """Mean absolute change of the mean parameter (probabilities, normalized Dirichlet counts,
    means): the local convergence test, as scikit-learn's mean_change of the document topics."""
    from .. import families as fam

    if family is fam.Dirichlet:
        a, b = old_natural[0] + 1.0, new_natural[0] + 1.0
        return float(np.mean(np.abs(a / a.sum(-1, keepdims=True) - b / b.sum(-1, keepdims=True))))
    return float(np.mean(np.abs(old_moments[0] - new_moments[0])))


def relative_change(old, new) -> float:
    """||lambda_new - lambda_old|| / ||lambda_old||."""
    if hasattr(new, "relative_change"):  # an executor's handle: summed where the rows are
        return new.relative_change(old)
    num = sum(float(np.sum((a - b) ** 2)) for a, b in zip(old, new))
    den = sum(float(np.sum(a ** 2)) for a in old)
    return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))
