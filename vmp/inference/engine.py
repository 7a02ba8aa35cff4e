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

import numpy as np

from ..errors import ConvergenceError
from ..graph.leaves import Context
from .executor import Executor, Serial, add
from .executor_chunked import Chunked
from .observed import adapter
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


class Engine:
    def __init__(self, model, executor: Executor | None = None):
        self.model = model
        self.executor = default_executor(model) if executor is None else executor
        self.factors, order = model.compile()
        self.nodes = model.nodes
        self.hidden = [self.nodes[n] for n in order if not self.nodes[n].observed]
        #: each node's adapter: how its q is formed and read and its factor evaluated
        self.q = {name: adapter(f.child) for name, f in self.factors.items()}
        self.touching: dict = {n.name: [] for n in self.hidden}
        self.below: dict = {n.name: [] for n in self.hidden}  # the factors of each node's children
        self.coupled: dict = {n.name: set() for n in self.hidden}
        for f in self.factors.values():
            for node in f.nodes():
                self.touching[node.name].append(f)
                if node is not f.child:
                    self.below[node.name].append(f)
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
        sliced by ``ctx``), as the adapter of f's child evaluates its factor."""
        return self.q[f.child.name].message(self, node, f, at(ctx, state))

    def children(self, state: State, node, ctx: Context | None = None) -> tuple | None:
        """sum over the factors f of ``node``'s children of eta_f->node, here (Winn & Bishop
        eq. (5)): what an executor sums over its pieces, each a restricted ``ctx``."""
        total, parts = None, []
        for f in self.below[node.name]:
            message = self.message(state, node, f, ctx)
            if message is not None:
                parts.append(node.family.parts(message))  # before the sum is formed
                total = add(total, message)
        node.family.declare_parts(total, parts)
        return total

    def target(self, state: State, node, ctx: Context | None = None) -> tuple[np.ndarray, ...]:
        """lambda^temp of ``node`` given every other q in ``state`` (the coordinate-ascent
        optimum, as its adapter forms it); with ``ctx.plate``/``ctx.index`` only that slice of
        the node. ``ctx`` restricts, scales and weights each factor's messages. The sum over the
        children's factors runs through the executor, and a local's update may stay where its
        rows are (``Executor.local``)."""
        self._summed = None
        ctx = at(ctx, state)
        kept = self.executor.local(self, state, node, ctx)
        if kept is not None:
            return kept
        total = self.q[node.name].target(self, state, ctx)
        self._summed = self._summed_messages(node, total, ctx)
        return total

    def _summed_messages(self, node, total, ctx: Context):
        """(node, lambda^temp, [(factor, its kept messages to node)]) when ``total`` is the sum
        of the messages its factors keep (full data, this process, no multiplicity, a plain
        q), for the bound at the node's optimum (:meth:`_at_optimum`); else None."""
        if not self.q[node.name].closed or ctx.plate is not None or not self.executor.sums_here or not ctx.whole:
            return None
        factors = self.touching[node.name]  # its own factor and its children's: what target summed
        if self.factors[node.name] not in factors \
                or any(self.q[f.child.name].split(self, f, ctx) is not None for f in factors):
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
            new = self.blend(state.natural[node.name], self.target(state, node, ctx), rho, node)
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
            new = self.blend(old, target, rho, node)
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
    def blend(old, new, rho, node=None):
        """(1 - rho) old + rho new; rho a number or an array over the node's plates (one rate
        per plate element, broadcast over each natural parameter's event axes). With ``node``,
        its family keeps what reads the blend from its parts (``Family.blended``)."""
        if np.ndim(rho) == 0 and rho == 1.0:
            return new
        out = tuple((1.0 - along(rho, a)) * a + along(rho, a) * b for a, b in zip(old, new))
        if node is not None:
            node.family.blended(out, old, new, rho)
        return out

    @staticmethod
    def moments(node, natural) -> tuple:
        """The moments of q(node) at ``natural`` (:mod:`~vmp.inference.observed`: a handle's
        computed where its parts are; a partially observed node's at its latent rows)."""
        return adapter(node).moments(natural)

    @staticmethod
    def check_domain(node, natural) -> None:
        bad = adapter(node).invalid(natural)
        if bad:
            raise ConvergenceError(
                f"node '{node.name}': update left the valid {node.family.name} domain at {bad} element(s)"
            )

    # ----- the bound --------------------------------------------------------------------
    def entropy(self, state: State, node) -> float:
        """m_i H[q_i] summed over the node's elements."""
        return self.q[node.name].entropy(state.natural[node.name], state.moments[node.name])

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
            if f.child.name not in done:
                total += self.q[f.child.name].elog(self, f, self.factor_weight(f, weights), ctx, cached,
                                                   skip.get(f.child.name, frozenset()))
        for node in self.hidden:
            if node.name in done:
                continue
            if optimum is not None and node is optimum[0]:
                total += float(np.sum(node.family.optimum(state.natural[node.name], state.moments[node.name])))
            else:
                total += self.entropy(state, node)
        return total

    def update_order(self) -> list:
        """The hidden nodes in the order of a sweep's coordinate updates: parents before children
        (topological order), the globals first, from the initial local responsibilities, then
        the locals."""
        return list(self.hidden)

    # ----- convenience for scripts: step the model's own state ----------------------------
    def update(self, node, ctx: Context | None = None, rho: float = 1.0) -> None:
        """One coordinate update of ``node`` applied to ``model.state``."""
        state = self.model.state
        new, moments = self.coordinate(state, node, ctx, rho)
        self.check_domain(node, new)
        self.model.state = state.updated({node.name: (new, moments)})


def along(w, a: np.ndarray):
    """``w`` (a number, or an array over a's leading axes: one value per plate element)
    broadcast over ``a``'s remaining axes."""
    return w if np.ndim(w) == 0 else np.reshape(w, np.shape(w) + (1,) * (np.ndim(a) - np.ndim(w)))
