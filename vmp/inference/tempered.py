"""Tempered per-datapoint log-normalizers, from the local subtree's own bound (Mandt et al.,
Variational Tempering, eq. (3), (9) and (10)).

For datapoint n (a document with its tokens, a mixture point) with observed x_n and local
hidden nodes z_n (theta_n and the z of its tokens; a mixture's selector) under the globals beta,
and s = 1/T,

    log C_n(T) = log int int p(x_n, z_n | beta)^s dx_n dz_n                  (data integrated)
    log Z_n(T) = log int p(x_n, z_n | beta)^s dz_n                          (data fixed)

are bounded by the same coordinate ascent the local step runs, with every factor of the subtree
weighted s and the entropies not (the tempered bound, Mandt eq. (4) per datapoint):

    log Z_n(T) >= max_q  s E_q[log p(x_n, z_n | beta)] + H[q(z_n)].

For C_n each observed element is integrated exactly given its parents: a family with unit base
measure gives int p(x | eta)^s dx = exp{A(s eta) - s A(eta)}; with c copies (a word count) it is
c times that. Under a local Categorical selector z (a gate beta[z]) this is linear in z's
one-hot statistics, g_k = c [A(s eta_k) - s A(eta_k)] with eta_k the parents' natural parameter at
z = k, so it replaces the observed factor's message to z; an observed node that no selector gates
adds its value at the optimized locals. The globals enter through their moments in the State
(plug-in E_q[A(eta / T)] ~ A(E_q[eta] / T), as Mandt et al. approximate the tempered likelihood);
give a State of point moments (a prior draw of beta) for the exact integrand. When the locals are
one Categorical per element (a mixture) the bound is the exact log-sum-exp; above it (LDA's theta)
it is a mean-field lower bound.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.special import logsumexp

from ..graph.leaves import Context, per_datapoint
from .executor import add
from .subsample import scaled_context


def log_normalizers(engine, plan, ctx: Context, temperatures, integrate_data: bool = True, samples: int = 0,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """(drawn datapoints, temperatures): log C_n(T) (``integrate_data``) or log Z_n(T) for the rows
    of ``ctx`` (a subset of the data plate; the globals' moments in ``ctx.state``). With
    ``samples`` = 0 the optimized tempered bound; with ``samples`` > 0 the importance-sampling
    estimate whose proposal r is the optimized q mixed evenly with the tempered prior: the locals
    other than the selector are drawn from r, the selector is summed out exactly (its tempered
    target's log-normalizer),

        C_n ~ (1/S) sum_j p~(v_j) / r(v_j),   v_j ~ r,

    which tends to the exact value as S grows (its log is biased low by Jensen, less than the
    bound is). The temperatures are fitted in the order given, each starting from the last."""
    temperatures = np.asarray(temperatures, float)
    n = len(ctx.subset[plan.plate_name])
    base = Context(subset=ctx.subset, owner=ctx.owner, state=ctx.state)
    z = selector(engine, plan)
    gated = _gated_terms(engine, plan, base, z, temperatures) if integrate_data else None
    rest = [node for node in _locals(plan, integrate_data) if node is not z]
    out = np.empty((n, temperatures.size))
    fit = None
    for m, temp in enumerate(temperatures):
        g = None if gated is None else gated[..., m]
        fit = _fit(engine, plan, base, 1.0 / temp, z, g, integrate_data, fit)
        if samples > 0 and rest:
            draws = [_importance(engine, plan, fit, 1.0 / temp, z, g, integrate_data, rng) for _ in range(samples)]
            out[:, m] = logsumexp(np.stack(draws), axis=0) - np.log(samples)
        else:
            out[:, m] = _value(engine, plan, fit, 1.0 / temp, z, g, integrate_data)
    return out


def selector(engine, plan):
    """The local Categorical with observed children, whose categories are enumerated (or None)."""
    from ..errors import GraphError

    under = [z for z in plan.local if z.family.selects and z.family.one_hot and not z.family.joint_plates
             and _gated(engine, z)]
    if len(under) > 1:
        raise GraphError(f"tempering: the data plate '{plan.plate_name}' has several local Categorical selectors "
                         f"({', '.join(z.name for z in under)}); the tempered normalizer enumerates one")
    return under[0] if under else None


def _gated(engine, z) -> list:
    """The observed children of ``z`` (their factors' messages to z are replaced when integrated)."""
    return [f.child for f in engine.touching[z.name] if f.child.has_data]


def _observed(engine, plan) -> list:
    return [n for n in engine.model.nodes.values() if n.has_data and any(p.name in plan.names for p in n.plates)]


def _locals(plan, integrate_data: bool) -> list:
    """The locals the tempered bound fits: a partially observed node's masked entries are latent
    in the tempered joint, so integrating its data integrates them too (C_n reads every
    coordinate of x_n, as for a complete row); with the data fixed they are locals."""
    return [n for n in plan.local if not (integrate_data and n.has_data)]


def tempered_integral(family, eta: tuple, counts, s: np.ndarray) -> np.ndarray:
    """c log int p(x | eta)^s dx per element (``Family.tempered_log_normalizer``: A(s eta) - s A(eta)
    when h = 1), one column per s, for c copies."""
    out = np.stack([family.tempered_log_normalizer(eta, si) for si in s], axis=-1)
    if counts is not None:
        out = out * np.reshape(counts, np.shape(counts) + (1,))
    return out


def _gated_terms(engine, plan, base: Context, z, temperatures) -> np.ndarray | None:
    """g (z's elements, K, temperatures) summed over the observed nodes z gates. When a node's
    natural parameter at z = k reads nothing per element but z (LDA's w ~ Cat(beta[z]): every
    token's is E[log beta_k]), it is computed once per k and spread over the elements."""
    if z is None:
        return None
    k = z.event_shape[0]
    shape = base.shape(z.plates)
    s = 1.0 / temperatures
    g = np.zeros(shape + (k, s.size))
    for x in _gated(engine, z):
        shared = _shared(engine, plan, x, z)
        at = replace(base, subset={p.name: np.zeros(1, np.int64) for p in x.plates}) if shared else base
        counts = _counts(engine, x, base)
        for j in range(k):
            onehot = np.zeros(at.shape(z.plates) + (k,))
            onehot[..., j] = 1.0
            eta = engine.conditional(x).messages(x, ctx=replace(at, overrides={z.name: (onehot,)}))
            per = tempered_integral(_family_at(x, at), eta, None, s)
            per = np.broadcast_to(per.reshape(-1, s.size)[0], shape + (s.size,)) if shared else per
            g[..., j, :] += per if counts is None else per * counts[..., None]
    return g


def _shared(engine, plan, x, z) -> bool:
    """Whether x's natural parameter reads no per-datapoint leaf other than the selector z, and
    neither it nor x's family reads a constant that differs between datapoints (a Poisson's
    exposure, a Binomial's trials)."""
    f = engine.conditional(x)
    return x.plates == z.plates and all(
        leaf.node is x or leaf.node is z or not any(p.name in plan.names for p in leaf.plates)
        for leaf in f.leaves()) and not any(
        _varies(o.array, [f.plate_of.get(ch) for ch in o.letters], plan.names)
        for t in f.terms for o in t.operands if o.leaf is None and o.array is not None) and not (
        hasattr(x.family, "trials") and _varies(np.broadcast_to(x.family.trials, x.plate_shape),
                                                [p.name for p in x.plates], plan.names))


def _varies(arr, plates: list, data: set) -> bool:
    """Whether ``arr`` (axes over ``plates``, broadcastable) differs along a data plate."""
    arr = np.asarray(arr)
    return any(name in data and axis < arr.ndim and arr.shape[axis] > 1
               and np.any(arr != np.take(arr, [0], axis=axis)) for axis, name in enumerate(plates))


def _family_at(x, ctx: Context):
    """x's family, bound to the trials of the elements ``ctx`` keeps when it carries per-element
    trials (Binomial, Multinomial)."""
    if not hasattr(x.family, "trials"):
        return x.family
    return x.family.of(ctx.take(np.broadcast_to(x.family.trials, x.plate_shape), x.plates))


def _counts(engine, node, ctx: Context):
    """The copies of each element whose integral C_n counts: its factor's weights, 0 where the
    element is barren (a row of a partially observed node with nothing observed is not in the
    model)."""
    w, keep = node.factor_weights(), engine.factors[node.name].live
    if keep is not None:
        w = keep.astype(float) if w is None else w * keep
    return None if w is None else ctx.take(w, node.plates)


def _multiplicity(node, ctx: Context) -> np.ndarray:
    """m_i over the drawn elements (Paquet eq. (5)): a token seen c times is c copies."""
    if node.weights is None:
        return np.ones(ctx.shape(node.plates))
    m = ctx.take(node.weights, node.plates)
    return np.where(m > 0, m, 1.0)


def _fit(engine, plan, base: Context, s: float, z, g, integrate_data: bool, start=None) -> tuple:
    """Coordinate ascent on the tempered local bound at s = 1/T: the locals' moments (in the
    Context's overrides), their natural parameters, and the tempered priors' (own factor^s).
    It starts from the priors, or from ``start`` (the fit at the previous temperature)."""
    ctx = replace(base, overrides={})
    natural = {}
    local = _locals(plan, integrate_data)
    for node in local:
        own = engine.factors[node.name].messages(node, ctx=scaled_context(ctx, node, 1.0, s))
        natural[node.name] = node.pinned(own, ctx)
        ctx.overrides[node.name] = node.family.moments(natural[node.name])
    prior = dict(natural)
    if start is not None:
        natural, ctx.overrides = dict(start[1]), dict(start[0].overrides)
    for _ in range(plan.local_iterations):
        change = 0.0
        for node in reversed(local):
            new = _target(engine, ctx, node, s, integrate_data)
            if node is z and g is not None:
                new = (new[0] + g / _multiplicity(z, ctx)[..., None],)
            moments = node.family.moments(new)
            change = max(change, float(np.max(np.abs(moments[0] - ctx.overrides[node.name][0]), initial=0.0)))
            natural[node.name], ctx.overrides[node.name] = new, moments
        if change < plan.local_tol:
            break
    return ctx, natural, prior


def _target(engine, ctx: Context, node, s: float, integrate_data: bool) -> tuple:
    """The node's tempered target: its factors weighted s (Paquet eq. (5)), without the observed
    children's when their data are integrated (their g replaces them)."""
    factors = [f for f in engine.touching[node.name] if not (integrate_data and f.child.has_data)]
    contexts = Context(factors={f.child.name: scaled_context(ctx, f.child, 1.0, s) for f in factors}, state=ctx.state)
    total = None
    for f in factors:
        total = add(total, engine.message(ctx.state, node, f, ctx=contexts))
    return node.pinned(engine.own_multiplicity(node, total, ctx=contexts), ctx)


def _value(engine, plan, fit, s: float, z, g, integrate_data: bool) -> np.ndarray:
    """The tempered bound per datapoint: s E_q[log p] of the subtree's factors, E_q[g], the
    locals' entropies, and the integrals of the observed nodes no selector gates."""
    ctx, natural, _ = fit
    n = len(ctx.subset[plan.plate_name])
    total = np.zeros(n)
    for f in engine.factors.values():
        if not plan.on_batch(f) or (integrate_data and f.child.has_data):
            continue
        per = f.elog(engine.factor_weight(f), per_element=True, ctx=ctx)
        total += s * per_datapoint(per, f.child.plates, ctx, n)
    for node in _locals(plan, integrate_data):
        h = node.family.entropy(natural[node.name], ctx.overrides[node.name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += per_datapoint(h, node.plates, ctx, n)
    if not integrate_data:
        return total
    if g is not None:
        total += per_datapoint(np.einsum("...k,...k->...", ctx.overrides[z.name][0], g), z.plates, ctx, n)
    return total + _ungated(engine, plan, ctx, s, z, n)


def _ungated(engine, plan, ctx: Context, s: float, z, n: int) -> np.ndarray:
    """The integrals of the observed nodes that no selector gates, at the locals in ``ctx``."""
    total = np.zeros(n)
    gated = _gated(engine, z) if z is not None else []
    for x in _observed(engine, plan):
        if x not in gated:
            eta = engine.conditional(x).messages(x, ctx=ctx)
            per = tempered_integral(_family_at(x, ctx), eta, _counts(engine, x, ctx), np.array([s]))[..., 0]
            total += per_datapoint(per, x.plates, ctx, n)
    return total


def _importance(engine, plan, fit, s: float, z, g, integrate_data: bool, rng) -> np.ndarray:
    """log p~(v) - log r(v) per datapoint for one draw v of the locals other than the selector,
    with the selector summed out: m_z A(lambda_z(v)), lambda_z its tempered target at v. The
    proposal r is, per element, an even mixture of q and the tempered prior (own factor^s): q
    alone is narrower than the tempered marginal and gives heavy-tailed weights."""
    ctx, natural, prior = fit
    n = len(ctx.subset[plan.plate_name])
    at = replace(ctx, overrides=dict(ctx.overrides))
    total = np.zeros(n)
    for node in _locals(plan, integrate_data):
        if node is not z:
            fam, lq, lp = node.family, natural[node.name], prior[node.name]
            pick = rng.random(fam.plate_shape(lq)) < 0.5
            mixed = tuple(np.where(pick.reshape(pick.shape + (1,) * (a.ndim - pick.ndim)), a, b) for a, b in zip(lq, lp))
            stats = point_statistics(node, fam.sample(mixed, rng))
            at.overrides[node.name] = stats
            log_r = np.logaddexp(fam.inner(lq, stats) - fam.log_normalizer(lq),
                                 fam.inner(lp, stats) - fam.log_normalizer(lp)) - np.log(2.0)
            total -= per_datapoint(_times(log_r, node, at), node.plates, at, n)
    for f in engine.factors.values():
        child = f.child
        if plan.on_batch(f) and child is not z and not child.observed and not (integrate_data and child.has_data):
            total += s * per_datapoint(f.elog(engine.factor_weight(f), per_element=True, ctx=at), child.plates, at, n)
        elif plan.on_batch(f) and child.observed and not integrate_data and (z is None or child not in _gated(engine, z)):
            total += s * per_datapoint(f.elog(engine.factor_weight(f), per_element=True, ctx=at), child.plates, at, n)
    if z is not None:
        lam = _target(engine, at, z, s, integrate_data)
        if g is not None:
            lam = (lam[0] + g / _multiplicity(z, at)[..., None],)
        total += per_datapoint(_times(z.family.log_normalizer(lam), z, at), z.plates, at, n)
    if integrate_data:
        total += _ungated(engine, plan, at, s, z, n)
    return total


def _times(values: np.ndarray, node, ctx: Context) -> np.ndarray:
    """``values`` times the node's multiplicity (c copies)."""
    return values if node.weights is None else values * ctx.take(node.weights, node.plates)


def point_statistics(node, value) -> tuple:
    """The sufficient statistics of a draw (a point mass's moments)."""
    return node.family.statistics(value, node.event_shape)
