"""The parts of a step, as functions of (engine, plan, state, ...): they return natural
parameters, Contexts and bounds, and never read or write a node's q or a module global. Batch and
stochastic VMP (``batch.py``, ``stochastic.py``) build their steps from them; an executor runs
them where the data are.

- :func:`sweep`: one batch VMP sweep, parents first (Winn & Bishop section 3.2);
- :func:`local_step`: the local nodes of a minibatch optimized given the global q (Hoffman et
  al. 2013, Fig. 6 step 5; Paquet Alg. 2);
- :func:`targets`: lambda^temp of stepped nodes from one draw (Paquet eq. (6)), from one snapshot
  (option (b)) or each from the state its predecessors left (option (a), :func:`coordinate`);
- :func:`minibatch_bound`, :func:`subsample_bound`, :func:`heldout_bound`: the bound's
  estimates (O(minibatch)); :func:`complete` / :func:`optimize_locals`: a pass over all data.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..graph.change import relative_change
from ..graph.leaves import Context, per_datapoint
from . import local_pair
from .engine import Engine
from .state import State
from .subsample import own_and_children, scaled_context


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


def local_step(engine: Engine, plan, state: State, ctx: Context, weight=None,
               fused: bool = True) -> tuple[Context, dict, int]:
    """Optimize the local nodes of one minibatch given the global q in ``state``.

    The locals start from their prior messages (a leaf local at its first update,
    :func:`_lead`), so nothing of earlier minibatches leaks in. Each drawn datapoint (a document
    and its tokens) keeps iterating until the mean change of the mean parameters of its locals
    on the data plate itself (a document's topic proportions; all its locals when none is) is
    below ``plan.local_tol``, as scikit-learn's per-document E-step; later sweeps touch only the
    datapoints still moving, and a datapoint whose locals but one are held at the data leaves
    after the first (:func:`_settled`). ``weight`` (a policy's local weight, e.g. 1/T, a number
    or one per datapoint) multiplies the minibatch's factors. Returns
    the Context of the rows with the locals' moments in its overrides, their natural parameters
    (restricted to the rows), and the number of observed elements read. A conjugate pair of
    locals (a Categorical reading a Dirichlet per datapoint) is iterated in exp-space
    (:mod:`vmp.inference.local_pair`) unless ``fused`` is False: the same iterates.
    """
    ctx = replace(ctx, overrides={}, state=state)
    natural = {}
    pair = _pair(engine, plan) if fused else None
    lead = _lead(engine, plan.local) if pair is None else None
    for node in plan.local:
        if node is lead:
            natural[node.name] = engine.target(state, node, ctx=ctx if weight is None else
                                               own_and_children(engine, plan, ctx, node, weight))
            ctx.overrides[node.name] = node.family.moments(natural[node.name])
        elif pair is None or node is not pair.z:  # the pair's z is computed first: no start needed
            _start(engine, ctx, node, weight, natural)
    if pair is not None:
        accesses = pair.run(engine, plan, state, ctx, natural, weight)
        if accesses is not None:
            return ctx, natural, accesses
        _start(engine, ctx, pair.z, weight, natural)
    return ctx, natural, _iterate(engine, plan, state, ctx, natural, weight, lead)


def _iterate(engine: Engine, plan, state: State, ctx: Context, natural: dict, weight, lead) -> int:
    """Passes over the started locals (:func:`_pass`) until each drawn datapoint's judged
    locals move by less than ``plan.local_tol`` or it settled (:func:`_settled`), at most
    ``plan.local_iterations``; later passes read only the datapoints still moving. Returns the
    observed elements read."""
    data = [f for f in engine.factors.values() if f.child.has_data and plan.on_batch(f)]
    n = len(ctx.subset[plan.plate_name])
    active = np.arange(n)
    on_plate = [node for node in plan.local if any(p.name == plan.plate_name for p in node.plates)]
    judged = on_plate or plan.local  # a datapoint's own locals (a document's topics) say when it converged
    settled = _settled(engine, plan.local, ctx, n)
    accesses, sub, where, reads = 0, None, None, 0
    for _ in range(plan.local_iterations):
        if sub is None or active.size != len(sub.subset[plan.plate_name]):  # else the same rows: sub holds their q
            sub, where = (ctx, None) if active.size == n else _active(ctx, active, plan.local)
            reads = sum(int(np.prod(sub.shape(f.child.plates))) for f in data)
        w = weight if np.ndim(weight) == 0 or active.size == n else np.asarray(weight)[active]
        change = _pass(engine, plan, state, ctx, (sub, where), natural, w, lead, judged, active.size)
        lead = None  # it started at the first pass's update
        accesses += reads
        moving = change >= plan.local_tol
        if settled is not None:
            moving &= ~settled[active]
        active = active[moving]
        if not active.size:
            break
    return accesses


def _pass(engine: Engine, plan, state: State, ctx: Context, active: tuple, natural: dict, weight, skip,
          judged: list, size: int) -> np.ndarray:
    """One coordinate-ascent pass over the locals, children first, at the datapoints still moving
    (``active``: their Context and, per subset plate, their elements' positions in ``ctx``;
    ``skip``: a local that starts at this pass's update). Writes the new q into ``natural`` and
    the overrides; returns per active datapoint the largest mean change of its judged locals."""
    sub, where = active
    change = np.zeros(size)
    for node in reversed(plan.local):
        if node is skip:
            continue
        contexts = sub if weight is None else own_and_children(engine, plan, sub, node, weight)
        axis, plate = _subset_axis(node, ctx)
        # read before the update: a sliced target writes each slice's moments into sub's overrides
        old = _at(natural[node.name], axis, where, plate), _at(ctx.overrides[node.name], axis, where, plate)
        if engine.coupled_plate(node) is None:
            new = engine.target(state, node, ctx=contexts)
        else:
            new = _sliced_target(engine, state, node, contexts, sub, old[0])
        moments = node.family.moments(new)
        if node in judged:
            moved = element_change(node.family, old[0], old[1], new, moments)
            moved = moved.mean(axis=tuple(i for i in range(moved.ndim) if i != axis)) if moved.ndim > 1 else moved
            owner = sub.owner[plate]
            change = np.maximum(change, np.bincount(owner, moved, size) / np.maximum(
                np.bincount(owner, minlength=size), 1))
        natural[node.name] = _put(natural[node.name], axis, where, plate, new)
        ctx.overrides[node.name] = _put(ctx.overrides[node.name], axis, where, plate, moments)
        if sub is not ctx:
            sub.overrides[node.name] = moments
    return change


def _settled(engine: Engine, local: list, ctx: Context, n: int) -> np.ndarray | None:
    """Per drawn datapoint, whether one pass of the loop reaches its coordinate-ascent fixed
    point: every local but at most one is held at the data there (the elements of a partially
    observed local with every coordinate observed: their pinned q reads only the data,
    ``Clamp.observed``), and that one's elements meet in no term (uncoupled), so its single
    update given the others is exact (Winn & Bishop eq. (5)), as a complete row of a batch fit
    is data. None when no local has a Clamp (the loop as it was)."""
    held = [node for node in local if node.clamp is not None]
    if not held:
        return None
    free, coupled = np.zeros(n), np.zeros(n)
    for node in local:
        if node.clamp is None:
            moving = np.ones(n, bool)
        else:
            open_ = ~np.asarray(ctx.take(node.clamp.observed, node.plates), bool)
            moving = per_datapoint(open_.astype(float), node.plates, ctx, n) > 0
        free += moving
        if engine.coupled_plate(node) is not None:
            coupled += moving
    return (free <= 1) & (coupled == 0)


def _lead(engine: Engine, local: list):
    """The local the first pass updates first (the last one started), when it reads no factor
    but its own and its elements are uncoupled (a partially observed leaf x): its first update
    reads exactly what its start read, so it starts at that update (``engine.target``: the
    start's message divided by its multiplicity, pinned) and the first pass skips it."""
    node = local[-1] if local else None
    if node is None or engine.touching[node.name] != [engine.factors[node.name]] \
            or engine.coupled_plate(node) is not None:
        return None
    return node


def _start(engine: Engine, ctx: Context, node, weight, natural: dict) -> None:
    """A local's starting q: its own factor's message (its prior given the other locals)."""
    own = engine.factors[node.name].messages(node, ctx=scaled_context(ctx, node, 1.0, weight))
    natural[node.name] = node.pinned(own, ctx)
    ctx.overrides[node.name] = node.family.moments(natural[node.name])


def _pair(engine: Engine, plan):
    """The plan's conjugate pair of locals (found once per plan), or None."""
    if "_local_pair" not in plan.__dict__:
        plan._local_pair = local_pair.find(engine, plan)
    return plan._local_pair


def _sliced_target(engine: Engine, state: State, node, contexts, sub: Context, natural: tuple) -> tuple:
    """lambda^temp of a local whose elements meet in one term along a plate (the z_n1..z_nK of a
    factorial mixture), one slice at a time, each slice reading the ones before it through the
    overrides of ``sub`` (which the contexts share): coordinate ascent, as ``Engine.coordinate``."""
    plate = engine.coupled_plate(node)
    axis = node.plates.index(plate)
    natural = tuple(np.array(a, float, copy=True) for a in natural)
    for i in range(plate.size):
        part = engine.target(state, node, contexts.sliced(plate, i))
        for arr, t in zip(natural, part):
            arr[(slice(None),) * axis + (i,)] = t
        sub.overrides[node.name] = node.family.moments(natural)
    return natural


def _subset_axis(node, ctx: Context) -> tuple[int, str]:
    axis = next(i for i, p in enumerate(node.plates) if p.name in ctx.subset)
    return axis, node.plates[axis].name


def _active(ctx: Context, active: np.ndarray, nodes) -> tuple[Context, dict]:
    """The Context of the drawn datapoints at positions ``active`` (sorted) with the locals'
    moments restricted to them, and per subset plate the positions of their elements."""
    where, subset, owner = {}, {}, {}
    for name, elements in ctx.subset.items():
        at = np.flatnonzero(np.isin(ctx.owner[name], active))
        where[name] = at
        subset[name] = elements[at]
        owner[name] = np.searchsorted(active, ctx.owner[name][at])
    sub = Context(subset=subset, owner=owner, state=ctx.state)
    for node in nodes:
        axis, plate = _subset_axis(node, ctx)
        sub.overrides[node.name] = _at(ctx.overrides[node.name], axis, where, plate)
    return sub, where


def _at(arrays: tuple, axis: int, where: dict | None, plate: str) -> tuple:
    if where is None:
        return arrays
    return tuple(np.take(a, where[plate], axis=axis) for a in arrays)


def _put(arrays: tuple, axis: int, where: dict | None, plate: str, values: tuple) -> tuple:
    """``arrays`` with ``values`` at the positions ``where`` (in place: local_step owns them)."""
    if where is None:
        return tuple(values)
    out = []
    for a, v in zip(arrays, values):
        if not a.flags.writeable:
            a = a.copy()
        a[(slice(None),) * axis + (where[plate],)] = v
        out.append(a)
    return tuple(out)


def targets(engine: Engine, plan, state: State, draw, nodes, weight=None, sliced: bool = False) -> dict:
    """lambda^temp of each of ``nodes`` from one draw, all read from ``state`` (option (b)).

    With ``sliced``, a node whose elements meet in one term along a plate (Paquet eq. (7)'s
    factorized dot) gets its target one slice at a time, each slice reading the slices before
    it (Gauss-Seidel within the node, ``Engine.coordinate`` at rho = 1) and every other node
    from ``state``; all slices at once from ``state`` is a Jacobi step on coupled coordinates,
    which overshoots and diverges even under small rho_t."""
    out = {}
    for node in nodes:
        ctx = plan.contexts(engine, draw, node, weight)
        if sliced and engine.coupled_plate(node) is not None:
            out[node.name] = engine.coordinate(state, node, ctx=ctx)[0]
        else:
            out[node.name] = engine.target(state, node, ctx=ctx)
    return out


def coordinate(engine: Engine, plan, state: State, draw, node, rho: float, weight=None, gradient: bool = False):
    """(natural, moments) of ``node`` after one stochastic coordinate step (option (a)); with
    ``gradient``, (natural, moments, lambda^temp - lambda) (:meth:`Engine.coordinate_step`)."""
    ctx = plan.contexts(engine, draw, node, weight)
    if gradient:
        return engine.coordinate_step(state, node, ctx=ctx, rho=rho)
    return engine.coordinate(state, node, ctx=ctx, rho=rho)


def complete(engine: Engine, state: State, nodes, iterations: int = 50, tol: float = 1e-4) -> State:
    """``state`` with exact coordinate updates of ``nodes`` on all data given every other q
    (a pass over all data: for evaluating the full bound, or ``model.infer_locals()``). Nodes
    the state lacks start from their prior messages."""
    for node in nodes:
        if node.name not in state.natural:
            own = node.pinned(engine.factors[node.name].messages(node, ctx=Context(state=state)))
            state = state.updated({node.name: (own, node.family.moments(own))})
    for _ in range(iterations):
        old = [state.moments[n.name] for n in nodes]
        for node in reversed(nodes):
            state = state.updated({node.name: engine.coordinate(state, node)})
        change = max((max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(o, state.moments[n.name]))
                      for o, n in zip(old, nodes)), default=0.0)
        if change < tol:
            break
    return state


def optimize_locals(engine: Engine, plan, state: State) -> State:
    """Exact local updates on all data given the global q (for evaluating the full ELBO)."""
    return complete(engine, state, plan.local, plan.local_iterations, plan.local_tol)


def data_bound(engine: Engine, plan, ctx: Context) -> float:
    """N/|S| times the minibatch's expected log-likelihood terms (its factors on the rows)."""
    plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner, state=ctx.state)
    return plan.scale * sum(float(f.elog(engine.factor_weight(f), ctx=plain)) for f in engine.factors.values()
                            if plan.on_batch(f))


def local_terms(engine: Engine, plan, ctx: Context, natural: dict, n: int, weight=None) -> np.ndarray:
    """Per drawn datapoint: its factors' E[log p] (data and locals; times ``weight``, a policy's
    1/T per datapoint or one number) plus its locals' entropies, at the locals in
    ``ctx.overrides`` and the globals in ``ctx.state``."""
    plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner, state=ctx.state)
    covered, done, total = (), None, np.zeros(n)
    found = local_pair.covered_terms(plan, ctx) if weight is None else None
    if found is not None:  # a fused loop's z: its factors' terms and entropy from its normalizers
        covered, done, total = found[0], found[1], found[2].copy()
    for f in engine.factors.values():
        if plan.on_batch(f) and not any(f is g for g in covered):
            per = f.elog(engine.factor_weight(f), per_element=True,
                         ctx=plain if weight is None else scaled_context(plain, f.child, 1.0, weight))
            total += per_datapoint(per, f.child.plates, ctx, n)
    for node in plan.local:
        if node.name == done:
            continue
        h = node.family.entropy(natural[node.name], ctx.overrides[node.name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += per_datapoint(h, node.plates, ctx, n)
    return total


def global_terms(engine: Engine, plan, state: State) -> float:
    """The bound's terms of the global nodes: their factors' E[log p] and their entropies."""
    ctx = Context(state=state)
    total = sum(float(f.elog(engine.factor_weight(f), cached=False, ctx=ctx))
                for f in engine.factors.values() if not plan.on_batch(f))
    return total + sum(engine.entropy(state, node) for node in plan.stepped)


def minibatch_bound(engine: Engine, plan, state: State, ctx: Context, natural: dict) -> float:
    """Hoffman et al.'s noisy bound of one step: the global terms plus N/|S| times the drawn
    rows' local terms (an unbiased estimate of the bound on the training rows)."""
    n = len(ctx.subset[plan.plate_name])
    return global_terms(engine, plan, state) + plan.scale * float(local_terms(engine, plan, ctx, natural, n).sum())


def subsample_bound(engine: Engine, plan, state: State, rows: np.ndarray, weight=None,
                    terms: bool = False) -> tuple:
    """(estimate, standard error) of the bound from the data-plate elements ``rows``, drawn
    uniformly without replacement: the global terms plus N/n times their local terms (locals
    optimized on the rows only). Unbiased for the data part; the standard error is
    N s / sqrt(n) sqrt(1 - n/N), s the spread of the per-datapoint terms. ``weight`` (a policy's
    1/T, one number or one per row) gives the tempered bound (Mandt et al. eq. (4)): the rows'
    factors weighted, their locals optimized under it. With ``terms``, the per-row local terms
    too (the stopping rule pairs them across evaluations)."""
    ell = row_terms(engine, plan, state, rows, weight)
    big_n, n = plan.plate.size, rows.size
    spread = float(np.std(ell, ddof=1)) if n > 1 else 0.0
    stderr = big_n * spread / np.sqrt(n) * np.sqrt(max(1.0 - n / big_n, 0.0))
    out = global_terms(engine, plan, state) + big_n / n * float(ell.sum()), stderr
    return out + (ell,) if terms else out


def heldout_bound(engine: Engine, plan, state: State) -> float:
    """Per-element ELBO of the held-out rows (at most ``evaluation_size`` of them): locals
    optimized on them, their factors and entropies summed, divided by their number."""
    rows = plan.heldout_evaluation
    return float(row_terms(engine, plan, state, rows).sum()) / rows.size


def row_terms(engine: Engine, plan, state: State, rows: np.ndarray, weight=None) -> np.ndarray:
    """Per element of ``rows`` (sorted), its local terms with its locals optimized given the
    globals in ``state`` (where the rows live when the executor can: ``Executor.local_step``;
    on the driver under a policy's ``weight``)."""
    remote = None if weight is not None else engine.executor.local_step(engine, plan, state, rows)
    if remote is not None:
        return remote.terms
    ctx, natural, _ = local_step(engine, plan, state, plan.context(rows), weight)
    return local_terms(engine, plan, ctx, natural, rows.size, weight)


def element_change(family, old_natural, old_moments, new_natural, new_moments) -> np.ndarray:
    """Per element, the mean absolute change of the mean parameter (probabilities, normalized
    Dirichlet counts, means) over its event axes: the local convergence test, as scikit-learn's
    mean change of a document's topic proportions."""
    return family.mean_change(family.mean(old_natural, old_moments), family.mean(new_natural, new_moments))



