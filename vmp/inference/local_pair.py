"""The local loop of a conjugate pair: a Categorical local z whose own factor reads a local y of
the data plate gathered per token (LDA's z_n ~ Cat(theta_{d_n})), iterated without forming the
tokens x K responsibilities at each sweep.

Both coordinate updates are Winn & Bishop eq. (5). Every factor touching z or y other than z's own
reads no other local, so its messages are constant over the loop (C for z, C_y for y), and z's
own factor is one term coef * <E[z_n], E[u_y]_{d_n}>. With D_n = coef * w_n / m_n (the factor's
weight over z's own multiplicity, one value per datapoint):

    eta_z,n = C_n + D_{d_n} E[u_y]_{d_n},      E[z_n] = f_n * g_{d_n} / s_n,
    f_n = exp(C_n - max C_n),   g_d = exp(D_d E[u_y]_d - max),   s_n = <f_n, g_{d_n}>,
    lambda_y,d = C_y,d + coef * sum_{n in d} w'_n E[z_n] = C_y,d + g_d * sum_{n in d} (coef w'_n / s_n) f_n

(w' the weight of the messages to the parents). This is Hoffman, Blei & Bach (2010) Alg. 1's
E-step, phi proportional to exp(E[log theta]) exp(E[log beta]) kept through its normalizer only, derived
from the factor's terms: a sweep forms s (one number per token) and one sparse product; E[z] is
formed once, at the end, and its log-normalizer log s_n + max_k C_n + max_k D_d E[u_y]_d is kept
for its entropy (``Categorical.remember``: no logarithm over the categories) and for the bound's
terms of z (:func:`covered_terms`). The iterates are the generic loop's (z, then y; each
datapoint until its own y stops moving), so the fixed point is the same.
"""
from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from .. import families as fam
from ..graph.leaves import GatherLeaf, NodeLeaf
from .executor import add
from .subsample import own_and_children

#: smallest normalizer s_n trusted in exp-space; below it the generic loop runs instead
TINY = 1e-250


class Pair:
    """The structure of one (y, z) pair, found once per plan by :func:`find`."""

    def __init__(self, y, z, factor, coef: float, comp: int, leaf: GatherLeaf, covered: tuple = ()):
        self.y, self.z, self.factor, self.coef, self.comp, self.leaf = y, z, factor, coef, comp, leaf
        #: the factors whose every term reads z (z's own and its children's): their E[log p] and
        #: z's entropy sum to z's log-normalizer (:func:`_z_terms`); () when some term does not
        self.covered = covered

    def run(self, engine, plan, state, ctx, natural: dict, weight) -> int | None:
        """Iterate the pair on the drawn rows of ``ctx`` from the locals in ``natural`` and
        ``ctx.overrides``; write the result there and return the observed elements read (as the
        generic loop counts them), or None (nothing written) where exp-space would underflow."""
        y, z, f = self.y, self.z, self.factor
        cz = ctx if weight is None else own_and_children(engine, plan, ctx, z, weight)
        cy = ctx if weight is None else own_and_children(engine, plan, ctx, y, weight)
        fz, fy = cz.of(f.child.name), cy.of(f.child.name)
        const = None
        for g in engine.touching[z.name]:
            if g is not f:
                const = add(const, engine.message(state, z, g, ctx=cz))
        n_tok = ctx.shape(z.plates)[0]
        c = np.zeros((n_tok,) + z.event_shape) if const is None else np.ascontiguousarray(
            engine.own_multiplicity(z, const, ctx=cz)[0])
        fw = engine.factor_weight(f)
        d = self._per_token(f.element_weight(z, fw, fz), n_tok)
        d = engine.own_multiplicity(z, (d[:, None],), ctx=cz)[0][:, 0]
        wy = self._per_token(f.element_weight(y, fw, fy), n_tok)
        doc = self.leaf.indices(fy)
        live = np.flatnonzero(wy)  # tokens that send y a message (barren ones do not)
        n = len(ctx.subset[plan.plate_name])
        d_doc = np.zeros(n)
        d_doc[doc[live]] = d[live]
        if not np.allclose(d_doc[doc[live]], d[live], rtol=1e-12, atol=0.0):  # D: one value per datapoint
            return None
        cy_total = None
        for g in engine.touching[y.name]:
            if g is not f:
                cy_total = add(cy_total, engine.message(state, y, g, ctx=cy))
        f_live = fam.Categorical.shifted_exp(c if live.size == n_tok else c[live])
        if not np.isfinite(f_live).all():  # a NaN or +inf in C
            return None
        loop = self._iterate(engine, plan, ctx, natural, cy_total, f_live, wy[live], doc[live], d_doc, n)
        if loop is None:
            return None
        accesses, nat_y, mom_y, g_used, u_used, s_used = loop
        nat_z = u_used[doc]
        nat_z *= d[:, None]
        nat_z += c
        if live.size == n_tok:
            p = g_used[doc]
            p *= f_live
            p /= s_used[:, None]
            shift = fam.Categorical.largest(c) + np.max(d_doc[:, None] * u_used, axis=-1)[doc]
            with np.errstate(divide="ignore"):
                log_s = np.log(s_used)
            fam.Categorical.remember(nat_z, p, shift, log_s)
            if weight is None and self.covered:
                m = None if z.weights is None else ctx.take(z.weights, z.plates)
                terms = _z_terms(m, p, shift + log_s, d, mom_y[self.comp] - u_used, doc, n)
                _TERMS.insert(0, (weakref.ref(p), terms))
                del _TERMS[2:]
        else:  # barren tokens: the generic z
            p = np.array(fam.Categorical.moments((nat_z,))[0])  # written below: a copy
            p[live] = f_live * g_used[doc[live]] / s_used[:, None]
        natural[z.name], ctx.overrides[z.name] = (nat_z,), (p,)
        natural[y.name], ctx.overrides[y.name] = nat_y, mom_y
        return accesses

    def _per_token(self, w, n_tok: int) -> np.ndarray:
        return self.coef * (np.ones(n_tok) if w is None else np.broadcast_to(np.asarray(w, float), (n_tok,)))

    def _iterate(self, engine, plan, ctx, natural, cy_total, f_live, wy, doc, d_doc, n):
        """The sweeps, each datapoint until its y stops moving. The arrays are over ``members``
        (grouped tokens, compact), of which the ``alive`` still move; they are compacted when a
        quarter of their tokens belong to datapoints that stopped (those iterate on unread until
        then). Returns the accesses, y's natural parameters and moments, and per datapoint the g
        and E[u_y] its z last read (per token s), or None where a normalizer underflows."""
        y, comp = self.y, self.comp
        grouped = doc.size < 2 or bool(np.all(doc[1:] >= doc[:-1]))
        order = np.arange(doc.size) if grouped else np.argsort(doc, kind="stable")  # tokens grouped by datapoint
        nat_y = [np.array(a, dtype=float) for a in natural[y.name]]
        mom_y = [np.array(a, dtype=float) for a in ctx.overrides[y.name]]
        g_used, u_used, s_used = np.empty_like(mom_y[comp]), np.empty_like(mom_y[comp]), np.empty(doc.size)
        reads = _reads(engine, plan, ctx, n)
        members, tok, ca, alive = np.arange(n), order, np.bincount(doc, minlength=n), np.ones(n, dtype=bool)
        mom, const, d_a = list(mom_y), list(cy_total), d_doc
        fa, wa = (f_live, wy) if grouped else (f_live[tok], wy[tok])
        scatter = _segments(ca)
        g = fam.Categorical.shifted_exp(d_a[:, None] * mom[comp])
        mean = y.family.mean(nat_y, mom_y)
        accesses, reading, ones = 0, int(reads.sum()), np.ones(g.shape[-1])
        for sweep in range(plan.local_iterations):
            s = np.repeat(g, ca, axis=0)
            s *= fa
            s = s @ ones  # through BLAS at every size: several times np.sum over a short last axis
            if s.size and not np.min(s) > TINY:
                return None
            np.divide(wa, s, out=scatter.data)
            new = list(const)
            new[comp] = const[comp] + g * (scatter @ fa)
            moments = y.family.moments(tuple(new))
            new_mean = y.family.mean(new, moments)
            moved = y.family.mean_change(mean, new_mean)
            accesses += reading
            still = alive & (moved >= plan.local_tol)
            last = sweep == plan.local_iterations - 1
            done = alive if last else alive & ~still
            if done.any():  # the datapoints stopping keep what their z last read
                rows, tokens = members[done], np.repeat(done, ca)
                g_used[rows], u_used[rows], s_used[tok[tokens]] = g[done], mom[comp][done], s[tokens]
                for full, a in zip(nat_y + mom_y, new + list(moments)):
                    full[rows] = a[done]
            alive = still
            if last or not alive.any():
                break
            mom, mean = list(moments), new_mean
            g = fam.Categorical.shifted_exp(d_a[:, None] * mom[comp])
            if done.any():
                reading = int(reads[members[alive]].sum())
                if 4 * ca[~alive].sum() > tok.size:
                    keep = np.repeat(alive, ca)
                    members, tok, ca, fa, wa, d_a = members[alive], tok[keep], ca[alive], fa[keep], wa[keep], d_a[alive]
                    mom, const, g, mean = [a[alive] for a in mom], [a[alive] for a in const], g[alive], mean[alive]
                    alive = alive[alive]
                    scatter = _segments(ca)
        return accesses, tuple(nat_y), tuple(mom_y), g_used, u_used, s_used


#: (a weak reference to z's moments p, per datapoint the terms of the covered factors and z's
#: entropy) of the last fused loops, for :func:`covered_terms`
_TERMS: list = []


def _z_terms(m, p: np.ndarray, log_norm: np.ndarray, d: np.ndarray, moved: np.ndarray, doc: np.ndarray,
             n: int) -> np.ndarray:
    """Per datapoint, the covered factors' weighted E[log p] plus z's weighted entropy. Every term
    of those factors reads z once, so their sum at token n is m_n <p_n, eta_n'>, eta_n' = C_n + D_n
    E[u_y]_{d_n} at the final y, while H(z_n) = log Z_n - <p_n, eta_n> at the y z last read; the sum
    is m_n (log Z_n + D_n <p_n, E[u_y]_{d_n} - E[u_y]^used_{d_n}>), with no sum over the topics but
    one: log Z_n = log s_n + the shift of the loop's exp-space (``m`` None: multiplicity 1)."""
    per_token = log_norm + d * np.einsum("nk,nk->n", p, moved[doc])
    if m is not None:
        per_token = per_token * m
    return np.bincount(doc, weights=per_token, minlength=n)


def covered_terms(plan, ctx) -> tuple[tuple, str, np.ndarray] | None:
    """(the covered factors, z's name, per datapoint their terms and z's entropy) when the locals
    in ``ctx`` are those of the fused loop just run on it (without weights), else None."""
    pair = plan.__dict__.get("_local_pair")
    p = ctx.overrides.get(pair.z.name) if pair is not None else None
    if p is None:
        return None
    for ref, terms in _TERMS:
        if ref() is p[0]:
            return pair.covered, pair.z.name, terms
    return None


def _segments(counts: np.ndarray) -> sp.csr_matrix:
    """The (datapoints x tokens) matrix summing each datapoint's tokens (grouped, in order); its
    ``data`` is overwritten with the weights of each sweep."""
    index = np.int32 if counts.sum() < 2 ** 31 else np.int64  # scipy's own index type: no conversion
    indptr = np.zeros(counts.size + 1, index)
    np.cumsum(counts, out=indptr[1:])
    n = int(indptr[-1])
    return sp.csr_matrix((np.ones(n), np.arange(n, dtype=index), indptr), shape=(counts.size, n), copy=False)


def _reads(engine, plan, ctx, n: int) -> np.ndarray:
    """Per drawn datapoint, the observed elements a sweep over it reads (the minibatch's data
    factors: its elements on the drawn plates times the full size of any other plate)."""
    total = np.zeros(n, dtype=np.int64)
    for f in engine.factors.values():
        if f.child.observed and plan.on_batch(f):
            drawn = [p for p in f.child.plates if p.name in ctx.owner]
            rest = int(np.prod([p.size for p in f.child.plates if p.name not in ctx.owner]))
            total += rest * np.bincount(ctx.owner[drawn[0].name], minlength=n)
    return total


def find(engine, plan) -> Pair | None:
    """The (y, z) pair of ``plan``'s locals if its structure admits the exp-space loop, else None.

    Needed: exactly two locals, y (the data plate only, no multiplicity, no pinned elements) before
    z (a Categorical over one gathered plate, no pinned elements) in the schedule; z's own factor
    has one term reading y, coef * <E[z], E[u_y][rows]> over one event letter, and no other term
    reading z; every other factor touching z or y reads no other local; each observed node of the
    minibatch lies on one drawn plate."""
    if len(plan.local) != 2:
        return None
    y, z = plan.local
    if (not z.family.selects or not z.family.one_hot or z.family.joint_plates or len(z.plates) != 1 or z.clamp is not None or y.clamp is not None
            or y.weights is not None or tuple(p.name for p in y.plates) != (plan.plate_name,)):
        return None
    f = engine.factors[z.name]
    found = None
    for t in f.terms:
        leaves = [o for o in t.operands if o.leaf is not None and (o.leaf.node is y or o.leaf.node is z)]
        if not leaves:
            continue
        if found is not None or len(t.operands) != 2 or len(leaves) != 2:
            return None
        oz = next((o for o in leaves if isinstance(o.leaf, NodeLeaf) and o.leaf.node is z and o.comp == 0), None)
        oy = next((o for o in leaves if isinstance(o.leaf, GatherLeaf) and o.leaf.node is y), None)
        if oz is None or oy is None or oz.letters != oy.letters or oz.letters[:-1] != f.child_letters:
            return None
        if oy.leaf.gather.plate is not z.plates[0] or y.family.event_ndims[oy.comp] != 1:
            return None
        found = Pair(y, z, f, t.coef, oy.comp, oy.leaf)
    if found is None:
        return None
    for g in engine.factors.values():  # each datum read belongs to one datapoint (the accesses)
        if g.child.observed and plan.on_batch(g) and sum(p.name in plan.names for p in g.child.plates) != 1:
            return None
    for node in (y, z):
        for g in engine.touching[node.name]:
            if g is f:
                continue
            if any(other is not node and any(other is l for l in plan.local) for other in g.nodes()):
                return None
    reads_z = (lambda g: all(any(isinstance(o.leaf, NodeLeaf) and o.leaf.node is z for o in t.operands)
                             for t in g.terms))
    if z.clamp is None and all(reads_z(g) for g in engine.touching[z.name]):
        found.covered = tuple(engine.touching[z.name])
    return found
