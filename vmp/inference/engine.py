"""The update equation and its ELBO over a compiled model, evaluated at an explicit State.

    lambda_i^temp = ( sum over factors f touching i of  w_f * eta_fi ) / m_i       (Paquet eq. (5))

where f runs over node i's own factor (the prior part eta_i) and its children's factors, w_f is
the factor's weight over its plates (data multiplicity, mask, subsampling, policies), and m_i is
node i's own multiplicity (an LDA token seen c times is c identical copies).

An ``Engine`` holds only structure (the bound factors, the hidden nodes in schedule order, which
factors touch which node, which plates couple a node's elements); every evaluation takes the
``State`` whose q it reads and none writes a node attribute.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConvergenceError
from ..factors.terms import plus
from ..graph.leaves import Context, restricted
from ..graph.partial import Filled
from .executor import Children, Executor, Serial, add
from .executor_chunked import Chunked
from .state import State


def default_executor(model) -> Executor:
    """``Serial``, or ``Chunked`` when some observed data live out of core (a memmap, an HDF5
    dataset, a zarr array) on a plate it can split (not a Markov chain's steps, ``data_plate``):
    a batch pass then streams them in blocks of rows."""
    from ..graph.data import is_lazy

    joint = {p.name for n in model.nodes.values() for p in n.joint_plates}
    lazy = any(n.observed and n.data is not None and is_lazy(n.data) and any(p.name not in joint for p in n.plates)
               for n in model.nodes.values())
    return Chunked() if lazy else Serial()


def at(ctx: Context | None, state: State) -> Context:
    """``ctx`` (omitted: every factor whole) reading q from ``state``."""
    return Context(state=state) if ctx is None else ctx.at(state)


def _plus(prior, children):
    """prior + children, added into the children's sum where it is a fresh array of the full
    shape (a message the executor built for this call, or one its factor keeps as a
    ``ScaledProduct``; kept arrays are read-only)."""
    if not isinstance(prior, tuple) or not isinstance(children, tuple):
        return add(prior, children)
    out = []
    for p, c in zip(prior, children):
        if isinstance(c, np.ndarray) and c.flags.writeable and c.flags.owndata and c.dtype == np.float64 \
                and np.shape(p) == c.shape:
            out.append(plus(p, c, out=c))
        else:
            out.append(add(p, c))
    return tuple(out)


class Engine:
    def __init__(self, model, executor: Executor | None = None):
        self.model = model
        self.executor = default_executor(model) if executor is None else executor
        self.factors, order = model.compile()
        self.nodes = model.nodes
        self.hidden = [self.nodes[n] for n in order if not self.nodes[n].observed]
        self.touching: dict = {n.name: [] for n in self.hidden}
        self.coupled: dict = {n.name: set() for n in self.hidden}
        for f in self.factors.values():
            for node in f.nodes():
                self.touching[node.name].append(f)
            for name, plates in f.coupled.items():
                self.coupled[name] |= plates
        self._summed = None  # the last target that is a sum of kept messages (_summed_messages)

    # ----- the update -------------------------------------------------------------------
    def factor_weight(self, f, weights: dict | None = None) -> np.ndarray | None:
        w = f.child.factor_weights()
        extra = None if weights is None else weights.get(f.child.name)
        if extra is not None:
            w = extra if w is None else w * extra
        return w

    def message(self, state: State, node, f, ctx: Context | None = None):
        """eta_f->node: the message of factor ``f`` to ``node`` (restricted, scaled, weighted and
        sliced by ``ctx``); a partially observed child's factor as data at its complete rows
        plus latent at the others (:meth:`split`)."""
        ctx = at(ctx, state)
        c = ctx.of(f.child.name)
        w = self.factor_weight(f, ctx.weights)
        split = None if node is f.child or ctx.plate is not None else self.split(f, c)
        if split is None:
            return f.messages(node, w, ctx.plate, ctx.index, c)
        a = split.data.messages(node, split.weight(w), ctx=c)
        b = split.latent.messages(node, w, ctx=split.context(state)) if split.rows.size else None
        return split.join(node, a, b)

    def split(self, f, ctx: Context | None = None):
        """``f`` as data at its child's complete rows plus latent at the others
        (``graph/partial.py``) when the child is partially observed with some complete rows and
        the evaluation is unrestricted on this process; else None."""
        latent = self.latent(f.child, ctx or Context())
        return None if latent is None else latent.split(f.child, f.keep)

    def target(self, state: State, node, ctx: Context | None = None) -> tuple[np.ndarray, ...]:
        """lambda^temp of ``node`` given every other q in ``state`` (the coordinate-ascent
        optimum); with ``ctx.plate``/``ctx.index`` only that slice of the node. ``ctx`` restricts,
        scales and weights each factor's messages. The sum over the children's factors runs
        through the executor."""
        self._summed = None
        ctx = at(ctx, state)
        kept = self.executor.local_target(self, state, node, ctx)
        if kept is not None:
            return kept
        latent = self.latent(node, ctx)
        if latent is not None:
            return self._target_rows(state, node, ctx, latent)
        prior = self.message(state, node, self.factors[node.name], ctx)
        children = Children(self, state, node, ctx)
        total = _plus(prior, self.executor.map_sum(children, self.executor.partitions(ctx)))
        total = node.family.summed_symmetric(self.own_multiplicity(node, total, ctx))
        total = node.pinned(total, ctx.of(node.name), ctx.plate, ctx.index)
        self._summed = self._summed_messages(node, total, ctx)
        return total

    def latent(self, node, ctx: Context):
        """The rows of a partially observed node that its batch update forms (``Clamp.latent``,
        ``graph/partial.py``) in an unrestricted update on this process, when some rows are
        complete; else None."""
        if node.clamp is None or ctx.plate is not None or not self.executor.rows_here or not ctx.whole:
            return None
        return node.clamp.latent()

    def _target_rows(self, state: State, node, ctx: Context, latent) -> tuple:
        """``target`` formed at the latent rows only: the node's own factor evaluated in a
        Context of those rows, its children's messages (zero at complete rows, ``Clamp.free``)
        taken there; the complete rows hold the pinned constant (``LatentRows.spread``)."""
        self._summed = None
        rows = latent.rows
        own = Context(subset={node.plates[0].name: rows}, state=state, weights=ctx.weights)
        prior = self.message(state, node, self.factors[node.name], own)
        children = self.executor.map_sum(Children(self, state, node, ctx), self.executor.partitions(ctx))
        if children is not None:
            children = tuple(np.take(np.broadcast_to(c, s), rows, axis=0)
                             for c, s in zip(children, node.component_shapes()))
        total = node.family.summed_symmetric(self.own_multiplicity(node, _plus(prior, children), own))
        return latent.spread(node.pinned(total, own))

    def _summed_messages(self, node, total, ctx: Context):
        """(node, lambda^temp, [(factor, its kept messages to node)]) when ``total`` is the sum
        of the messages its factors keep (full data, this process, no multiplicity, no clamp),
        for the bound at the node's optimum (:meth:`_at_optimum`); else None."""
        if not node.family.closed_optimum or ctx.plate is not None or type(self.executor) is not Serial \
                or node.weights is not None or node.clamp is not None or not ctx.whole:
            return None
        factors = self.touching[node.name]  # its own factor and its children's: what target summed
        if self.factors[node.name] not in factors or any(self.split(f) is not None for f in factors):
            return None
        held = [f.held(node) for f in factors]
        return None if any(h is None for h in held) else (node, total, list(zip(factors, held)))

    def _at_optimum(self, state: State, weights, ctx):
        """(node, {factor: the terms that read it}) if q(node) in ``state`` is the last target,
        whose factors still keep the messages it summed: the bound's terms that read the node
        plus its entropy are then A(lambda) - E[log h] (``Family.optimum``), read from the
        moments without the inner products <message, E[u]>. None otherwise."""
        if self._summed is None:
            return None
        node, total, factors = self._summed
        if state.natural.get(node.name) is not total:
            return None
        skip = {}
        for f, held in factors:
            terms = f.standing(node, self.factor_weight(f, weights), ctx, held)
            if terms is None:
                return None
            skip[f.child.name] = terms
        return node, skip

    def own_multiplicity(self, node, total, ctx: Context):
        """Divide by m_i, node i's own multiplicity (Paquet eq. (5)), at the elements ``ctx``
        reads."""
        if node.weights is None:
            return total
        m = ctx.of(node.name).take(node.weights, node.plates)
        if ctx.plate is not None:
            m = np.take(m, ctx.index, axis=node.plates.index(ctx.plate))
        m = np.where(m > 0, m, 1.0)
        return tuple(t / m.reshape(m.shape + (1,) * (t.ndim - m.ndim)) for t in total)

    def conditional(self, node):
        """The conditional of an observed node compiled as if it were hidden: its messages to the
        node itself are its natural parameters given the parents (for tempered normalizers)."""
        cache = self.__dict__.setdefault("_conditionals", {})
        if node.name not in cache:
            from ..graph.compiled import CompiledFactor

            was, node.observed = node.observed, False  # a partially observed node is not observed
            try:
                cache[node.name] = CompiledFactor(node)
            finally:
                node.observed = was
        return cache[node.name]

    def coupled_plate(self, node):
        coupled = sorted(self.coupled[node.name], key=node.plates.index)
        if len(coupled) > 1:
            raise ConvergenceError(f"node '{node.name}': elements coupled along several plates are not supported")
        return coupled[0] if coupled else None

    def coordinate(self, state: State, node, ctx: Context | None = None, rho: float = 1.0):
        """New natural parameters of q(node): lambda <- (1 - rho) lambda + rho lambda^temp
        (Paquet Alg. 1, option (a)); elements coupled through a factor go one slice at a time,
        each slice reading the slices before it. Pure: returns (natural, moments)."""
        if self.coupled_plate(node) is None:
            new = self.blend(state.natural[node.name], self.target(state, node, ctx), rho)
            return new, self.moments(node, new)
        return self.coordinate_step(state, node, ctx, rho)[:2]

    def coordinate_step(self, state: State, node, ctx: Context | None = None, rho: float = 1.0):
        """(natural, moments, g) of :meth:`coordinate`, g = lambda^temp - lambda the natural
        gradient its step followed (new = lambda + rho g): for coupled elements each slice's
        target as that slice read it, after the slices before it moved (Ranganath et al. 2013's
        g_t without a second read of the children)."""
        plate = self.coupled_plate(node)
        old = state.natural[node.name]
        if plate is None:
            target = self.target(state, node, ctx)
            new = self.blend(old, target, rho)
            return new, self.moments(node, new), tuple(t - a for t, a in zip(target, old))
        axis = node.plates.index(plate)
        current = state
        new = old
        gradient = tuple(np.empty_like(a) for a in old)
        for i in range(plate.size):
            part = self.target(current, node, at(ctx, current).sliced(plate, i))
            parts = []
            sl = (slice(None),) * axis + (i,)
            for arr, t, g in zip(new, part, gradient):
                arr = arr.copy()
                g[sl] = t - arr[sl]
                r = along(rho if np.ndim(rho) <= axis else rho[sl], t)
                arr[sl] = t if np.ndim(r) == 0 and r == 1.0 else (1.0 - r) * arr[sl] + r * t
                parts.append(arr)
            new = tuple(parts)
            current = current.updated({node.name: (new, node.family.moments(new))})
        return new, current.moments[node.name], gradient

    @staticmethod
    def blend(old, new, rho):
        """(1 - rho) old + rho new; rho a number or an array over the node's plates (one rate
        per plate element, broadcast over each natural parameter's event axes)."""
        if np.ndim(rho) == 0 and rho == 1.0:
            return new
        return tuple((1.0 - along(rho, a)) * a + along(rho, a) * b for a, b in zip(old, new))

    @staticmethod
    def moments(node, natural) -> tuple:
        """The moments of q(node) at ``natural`` (computed where its rows are for an executor's
        handle; at the latent rows only for a partially observed node, ``LatentRows.moments``)."""
        if hasattr(natural, "moments"):
            return natural.moments()
        latent = _full_rows(node, natural)
        return node.family.moments(natural) if latent is None else latent.moments(natural)

    @staticmethod
    def check_domain(node, natural) -> None:
        if hasattr(natural, "invalid"):
            bad = natural.invalid()
        else:
            latent = _full_rows(node, natural)
            ok = node.family.valid(natural if latent is None else latent.at(natural))
            bad = int(np.size(ok) - np.count_nonzero(ok))
        if bad:
            raise ConvergenceError(
                f"node '{node.name}': update left the valid {node.family.name} domain at {bad} element(s)"
            )

    # ----- the bound --------------------------------------------------------------------
    def entropy(self, state: State, node) -> float:
        """m_i H[q_i] summed over the node's elements (its latent rows only when the others
        are complete: their weight is 0)."""
        natural, weights = state.natural[node.name], node.weights
        latent = _full_rows(node, natural)
        if latent is not None:
            weights = None if weights is None else np.take(weights, latent.rows, axis=0)
            h = node.family.entropy(latent.at(natural))
        else:
            h = node.family.entropy(natural, state.moments[node.name])
        if weights is not None:
            h = h * weights
        return float(np.sum(h))

    def elbo(self, state: State | None = None, weights: dict | None = None, cached: bool = True) -> float:
        """sum_f w_f E[log p(child_f | parents_f)] + sum_i m_i H[q_i] (every constant included),
        at ``state`` (default: the model's)."""
        state = self.model.state if state is None else state
        if state is None or any(n.name not in state.natural for n in self.hidden):
            from ..errors import GraphError

            missing = [n.name for n in self.hidden if state is None or n.name not in state.natural]
            raise GraphError(f"model '{self.model.name}': no posterior yet for {missing}: call model.fit() "
                             f"before model.elbo() (after a minibatch fit, model.infer_locals() computes "
                             f"the local nodes)")
        ctx = Context(state=state)
        done, total = self.executor.bound(self, state, weights)
        optimum = self._at_optimum(state, weights, ctx) if cached and not done else None
        skip = {} if optimum is None else optimum[1]
        for f in self.factors.values():
            if f.child.name in done:
                continue
            w, split = self.factor_weight(f, weights), self.split(f)
            if split is None:
                total += float(f.elog(w, cached=cached, ctx=ctx, skip=skip.get(f.child.name, frozenset())))
                continue
            total += float(split.data.elog(split.weight(w), cached=cached, ctx=ctx))
            if split.rows.size:
                total += float(split.latent.elog(w, cached=cached, ctx=split.context(state)))
        for node in self.hidden:
            if node.name in done:
                continue
            if optimum is not None and node is optimum[0]:
                total += float(np.sum(node.family.optimum(state.natural[node.name], state.moments[node.name])))
            else:
                total += self.entropy(state, node)
        return total

    def schedule(self) -> list:
        """Parents before children (topological order): the globals first, from the
        initial local responsibilities, then the locals."""
        return list(self.hidden)

    # ----- convenience for scripts: step the model's own state ----------------------------
    def update(self, node, ctx: Context | None = None, rho: float = 1.0) -> None:
        """One coordinate update of ``node`` applied to ``model.state``."""
        state = self.model.state
        new, moments = self.coordinate(state, node, ctx, rho)
        self.check_domain(node, new)
        self.model.state = state.updated({node.name: (new, moments)})


def _full_rows(node, natural):
    """``Clamp.latent`` of a partially observed node whose ``natural`` covers every row (a
    ``Filled`` names its own)."""
    if isinstance(natural, Filled):
        return natural.latent
    if node.clamp is None or type(natural) is not tuple or not node.plates \
            or np.shape(natural[0])[:1] != node.plate_shape[:1]:
        return None
    return node.clamp.latent()


def along(w, a: np.ndarray):
    """``w`` (a number, or an array over a's leading axes: one value per plate element)
    broadcast over ``a``'s remaining axes."""
    return w if np.ndim(w) == 0 else np.reshape(w, np.shape(w) + (1,) * (np.ndim(a) - np.ndim(w)))
