"""Stochastic VMP (Paquet Alg. 1 and 2; Hoffman et al. 2013):

    lambda_i^temp = eta_i + (N_i / C) sum_{k in drawn children} eta_ki             (Paquet eq. (6))
    lambda_i <- (1 - rho_t) lambda_i + rho_t lambda_i^temp

option (a) ``update="per-node"``: each node's new lambda is used by the next node;
option (b) ``update="global"``: every lambda^temp from one snapshot, then all applied.
"""
from __future__ import annotations

import time

import numpy as np

from ..graph.leaves import Context
from .engine import Engine
from .init import initialize
from .result import FitResult
from .schedules import RobbinsMonro, per_node
from .subsample import Minibatch, PerNode


def _accesses(engine, contexts) -> int:
    """Observed-node elements read by one node update (the x-axis of Paquet's Fig. 2)."""
    total = 0
    for name, ctx in contexts.items():
        child = engine.nodes[name]
        if child.observed:
            total += int(np.prod(child.plate_shape if ctx is None else ctx.shape(child.plates)))
    return total


def local_step(engine: Engine, mb: Minibatch, ctx: Context, rng: np.random.Generator) -> tuple[dict, int]:
    """Optimize the local nodes of one minibatch given the current global q.

    A pure function of (global moments, the rows in ``ctx``): the locals start from their prior
    messages, so nothing of earlier minibatches leaks in. Returns the locals' natural parameters
    (restricted to the rows) and the number of observed elements read.
    """
    ctx.overrides = {}
    natural = {}
    for node in mb.local:
        natural[node.name] = engine.factors[node.name].messages(node, ctx=ctx)
        ctx.overrides[node.name] = node.family.moments(natural[node.name])
    data = [f for f in engine.factors.values() if f.child.observed and any(p.name in ctx.subset for p in f.child.plates)]
    size = sum(int(np.prod(ctx.shape(f.child.plates))) for f in data)
    accesses = 0
    for _ in range(mb.local_iterations):
        change = 0.0
        for node in reversed(mb.local):
            new = engine.target(node, ctx=ctx)
            moments = node.family.moments(new)
            change = max(change, max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(moments, ctx.overrides[node.name])))
            natural[node.name] = new
            ctx.overrides[node.name] = moments
        accesses += size
        if change < mb.local_tol:
            break
    return natural, accesses


def minibatch_targets(engine: Engine, mb: Minibatch, ctx: Context, nodes) -> dict:
    """lambda^temp of each global node from one minibatch (locals already in ``ctx``): its prior
    message plus N/|S| times the summed messages of the minibatch's factors."""
    scaled = Context(subset=ctx.subset, overrides=ctx.overrides, scale=np.asarray(mb.scale))
    out = {}
    for node in nodes:
        per = {}
        for f in engine.touching[node.name]:
            on_batch = f.child is not node and any(p.name in ctx.subset for p in f.child.plates)
            per[f.child.name] = scaled if on_batch else None
        out[node.name] = engine.target(node, ctx=per)
    return out


def fit_stochastic(model, *, subsample, update: str = "per-node", step=None, iterations: int = 100,
                   seed: int | None = 0, init=None, evaluate_every: int = 10, callback=None) -> FitResult:
    """Stochastic VMP. ``subsample``: PerNode(children=C) or Minibatch(plate, size); ``update``:
    'per-node' (option (a)) or 'global' (option (b)); ``step``: a schedule (RobbinsMonro,
    Constant, Warmup) or a dict from node names to schedules with a 'default'; the full ELBO is
    evaluated every ``evaluate_every`` iterations, outside the step timings."""
    if update not in ("per-node", "global"):
        raise ValueError(f"update must be 'per-node' (option (a)) or 'global' (option (b)), got {update!r}")
    if not isinstance(subsample, (PerNode, Minibatch)):
        raise ValueError("subsample= takes vmp.PerNode(children=C) or vmp.Minibatch(plate, size)")
    engine = Engine(model)
    rng = np.random.default_rng(seed)
    initialize(engine, rng, init)
    minibatch = isinstance(subsample, Minibatch)
    if minibatch:
        subsample.prepare(engine, rng)
        stepped = subsample.globals
    else:
        subsample.prepare(engine)
        stepped = list(engine.schedule())
    schedules = per_node(RobbinsMonro() if step is None else step, [n.name for n in stepped])
    hist = {"iteration": [], "accesses": [], "step_seconds": [],
            "rho": {n.name: [] for n in stepped}, "change": {n.name: [] for n in stepped}}
    evals = {"iteration": [], "accesses": [], "elbo": [], "heldout": []}
    accesses = 0
    message, diverged = "reached the iteration limit", False

    def evaluate(t):
        if minibatch:
            _optimize_locals(engine, subsample)
        value = engine.elbo(cached=False)
        evals["iteration"].append(t)
        evals["accesses"].append(accesses)
        evals["elbo"].append(value)
        if minibatch and subsample.heldout.size:
            evals["heldout"].append(heldout_elbo(engine, subsample, rng))
        return value

    evaluate(0)
    start = time.perf_counter()
    for t in range(1, iterations + 1):
        tick = time.perf_counter()
        before = {n.name: n.natural for n in stepped}
        if minibatch:
            ctx = subsample.draw(rng)
            _, acc = local_step(engine, subsample, ctx, rng)
            accesses += acc
            if update == "global":
                targets = minibatch_targets(engine, subsample, ctx, stepped)
                for node in stepped:
                    engine._set(node, engine.blend(node.natural, targets[node.name], schedules[node.name](t)))
            else:
                for node in stepped:
                    lam = minibatch_targets(engine, subsample, ctx, [node])[node.name]
                    engine._set(node, engine.blend(node.natural, lam, schedules[node.name](t)))
            accesses += sum(_accesses(engine, {f.child.name: ctx for f in engine.touching[n.name]
                                               if f.child is not n and any(p.name in ctx.subset for p in f.child.plates)})
                            for n in stepped)
        else:
            targets = {}
            for node in stepped:
                contexts = subsample.contexts(engine, node, rng)
                accesses += _accesses(engine, contexts)
                rho = schedules[node.name](t)
                if update == "per-node":
                    engine.update(node, ctx=contexts, rho=rho)
                else:
                    targets[node.name] = engine.target(node, ctx=contexts)
            if update == "global":
                for node in stepped:
                    engine._set(node, engine.blend(node.natural, targets[node.name], schedules[node.name](t)))
        hist["step_seconds"].append(time.perf_counter() - tick)
        hist["iteration"].append(t)
        hist["accesses"].append(accesses)
        for node in stepped:
            hist["rho"][node.name].append(schedules[node.name](t))
            hist["change"][node.name].append(_relative_change(before[node.name], node.natural))
        if evaluate_every and t % evaluate_every == 0:
            value = evaluate(t)
            if not np.isfinite(value):
                message, diverged = f"the ELBO is not finite at iteration {t}", True
                break
        if callback is not None and callback(t, engine) is False:
            message = f"stopped by the callback at iteration {t}"
            break
    seconds = time.perf_counter() - start
    if not evals["iteration"] or evals["iteration"][-1] != hist["iteration"][-1]:
        evaluate(hist["iteration"][-1] if hist["iteration"] else 0)
    history = {k: (np.array(v) if not isinstance(v, dict) else {n: np.array(a) for n, a in v.items()})
               for k, v in hist.items()}
    history["evaluations"] = {k: np.array(v) for k, v in evals.items()}
    result = FitResult(np.array(evals["elbo"]), False, len(hist["iteration"]), message, None, seconds,
                       extra={"method": "stochastic", "update": update}, history=history)
    result.diverged = diverged
    return result


def _relative_change(old, new) -> float:
    num = sum(float(np.sum((a - b) ** 2)) for a, b in zip(old, new))
    den = sum(float(np.sum(a ** 2)) for a in old)
    return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))


def _optimize_locals(engine: Engine, mb: Minibatch) -> None:
    """Exact local updates on all data given the global q (for evaluating the full ELBO)."""
    for _ in range(mb.local_iterations):
        old = [n.moments for n in mb.local]
        for node in reversed(mb.local):
            engine.update(node)
        change = max((max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(o, n.moments))
                      for o, n in zip(old, mb.local)), default=0.0)
        if change < mb.local_tol:
            break


def heldout_elbo(engine: Engine, mb: Minibatch, rng) -> float:
    """Per-element ELBO of the held-out rows: locals optimized on them, their factors and
    entropies summed, divided by the number of held-out elements."""
    ctx = mb.context(mb.heldout)
    natural, _ = local_step(engine, mb, ctx, rng)
    total = 0.0
    for f in engine.factors.values():
        if any(p.name in ctx.subset for p in f.child.plates):
            total += float(f.elog(engine.factor_weight(f), ctx=ctx))
    for node in mb.local:
        h = node.family.entropy(natural[node.name], ctx.overrides[node.name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += float(np.sum(h))
    return total / mb.heldout.size
