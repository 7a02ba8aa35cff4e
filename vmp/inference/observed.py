"""How the engine forms, reads and scores a node's q and evaluates its factor: one adapter per node.

``Plain`` serves every node whose rows are all alike: the update is Winn & Bishop eq. (5), the
prior's message plus the children's (through the executor), divided by the node's own
multiplicity and pinned; its factor is one evaluation; its moments, domain check and entropy are
the family's. ``PartlyObserved`` serves a node with a ``Clamp`` (masked entries inferred,
``graph/missing.py``): where some rows have every coordinate observed and the evaluation is
unrestricted on this process (``PartlyObserved.latent``), it forms q at the other rows only and
holds it over every row as a ``Filled``, splits its factor into data at the complete rows and
latent at the others, and reads moments, validity and entropy at the latent rows
(``graph/partial.py``); otherwise it is ``Plain``. :func:`adapter` picks one per node, once, so
the engine never asks which it has.
"""
from __future__ import annotations

import numpy as np

from ..factors.terms import plus
from ..graph import held
from ..graph.leaves import Context
from .executor import add


def adapter(node) -> "Plain":
    """The adapter of ``node``: ``PartlyObserved`` for a node with a Clamp, else ``Plain``."""
    return Plain(node) if node.clamp is None else PartlyObserved(node)


def summed(prior, children):
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


class Plain:
    """A node all of whose rows are read and formed alike."""

    def __init__(self, node):
        self.node = node

    @property
    def closed(self) -> bool:
        """Whether the bound's terms that read q at its optimum are A(lambda) - E[log h]
        (``Family.optimum``): its family has that form and q is the plain sum of messages."""
        return self.node.family.closed_optimum and self.node.weights is None

    def split(self, engine, f, ctx: Context):
        """The node's factor ``f`` in two parts (``partial.Split``), or None: one evaluation."""
        return None

    def message(self, engine, node, f, ctx: Context):
        """eta_f->node of the node's factor ``f`` in ``ctx``."""
        return f.messages(node, engine.factor_weight(f, ctx.weights), ctx.plate, ctx.index, ctx.of(f.child.name))

    def elog(self, engine, f, weight, ctx: Context, cached: bool, skip: frozenset) -> float:
        """w_f E[log p(x | pa)] of the node's factor ``f``."""
        return float(f.elog(weight, cached=cached, ctx=ctx, skip=skip))

    def target(self, engine, state, ctx: Context) -> tuple:
        """lambda^temp = (eta_prior + sum over children of eta_child) / m, pinned (Winn & Bishop
        eq. (5); Paquet eq. (5))."""
        node = self.node
        prior = engine.message(state, node, engine.factors[node.name], ctx)
        children = engine.executor.children(engine, state, node, ctx)
        parts = node.family.parts(children)  # before the sum may be formed in place into them
        total = summed(prior, children)
        total = node.family.summed_symmetric(engine.own_multiplicity(node, total, ctx))
        if parts is not None and node.weights is None and node.clamp is None:
            node.family.factor_from_parts(total, prior, parts)
        return node.pinned(total, ctx.of(node.name), ctx.plate, ctx.index)

    def moments(self, natural) -> tuple:
        return held.moments(natural, self.node.family.moments)

    def invalid(self, natural) -> int:
        return held.invalid(natural, self._invalid)

    def _invalid(self, natural) -> int:
        ok = self.node.family.valid(natural)
        return int(np.size(ok) - np.count_nonzero(ok))

    def entropy(self, natural, moments) -> float:
        """m_i H[q_i] summed over the node's elements."""
        h = self.node.family.entropy(natural, moments)
        if self.node.weights is not None:
            h = h * self.node.weights
        return float(np.sum(h))


class PartlyObserved(Plain):
    """A node with a Clamp: the complete rows cost what data cost (module docstring)."""

    closed = False

    def latent(self, engine, ctx: Context):
        """The rows that an update in ``ctx`` forms (``Clamp.latent``): an unrestricted update on
        this process (every row here, no slice) of a node with some complete rows; else None."""
        if ctx.plate is not None or not engine.executor.rows_here or not ctx.whole:
            return None
        return self.node.clamp.latent()

    def split(self, engine, f, ctx: Context):
        latent = self.latent(engine, ctx)
        return None if latent is None else latent.split(self.node, f.live)

    def message(self, engine, node, f, ctx: Context):
        """The data part's message plus the latent part's, joined (``Split.join``)."""
        split = None if node is f.child or ctx.plate is not None else self.split(engine, f, ctx.of(f.child.name))
        if split is None:
            return super().message(engine, node, f, ctx)
        w = engine.factor_weight(f, ctx.weights)
        a = split.data.messages(node, split.weight(w), ctx=ctx.of(f.child.name))
        b = split.latent.messages(node, w, ctx=split.context(ctx.state)) if split.rows.size else None
        return split.join(node, a, b)

    def elog(self, engine, f, weight, ctx: Context, cached: bool, skip: frozenset) -> float:
        split = self.split(engine, f, ctx)
        if split is None:
            return super().elog(engine, f, weight, ctx, cached, skip)
        total = float(split.data.elog(split.weight(weight), cached=cached, ctx=ctx))
        if split.rows.size:
            total += float(split.latent.elog(weight, cached=cached, ctx=split.context(ctx.state)))
        return total

    def target(self, engine, state, ctx: Context) -> tuple:
        """At the latent rows only when it can (:meth:`latent`): the node's own factor evaluated
        in a Context of those rows, its children's messages (zero at complete rows,
        ``Clamp.free``) taken there; the complete rows hold the pinned constant
        (``LatentRows.spread``)."""
        latent = self.latent(engine, ctx)
        if latent is None:
            return super().target(engine, state, ctx)
        node, rows = self.node, latent.rows
        own = Context(subset={node.plates[0].name: rows}, state=state, weights=ctx.weights)
        prior = engine.message(state, node, engine.factors[node.name], own)
        children = engine.executor.children(engine, state, node, ctx)
        if children is not None:
            children = tuple(np.take(np.broadcast_to(c, s), rows, axis=0)
                             for c, s in zip(children, node.component_shapes()))
        total = node.family.summed_symmetric(engine.own_multiplicity(node, summed(prior, children), own))
        return latent.spread(node.pinned(total, own))

    def _rows(self, natural):
        """(the latent rows, ``natural`` there) when ``natural`` covers every row of a node with
        some complete rows; else (None, ``natural``)."""
        latent = self.node.clamp.latent()
        if latent is None:
            return None, natural
        parts = held.pieces(natural, latent)
        if parts is not None:
            return latent, parts[1]
        if np.shape(natural[0])[:1] != self.node.plate_shape[:1]:
            return None, natural
        return latent, latent.at(natural)

    def moments(self, natural) -> tuple:
        return held.moments(natural, self._moments)

    def _moments(self, natural) -> tuple:
        latent, _ = self._rows(natural)
        return self.node.family.moments(natural) if latent is None else latent.moments(natural)

    def _invalid(self, natural) -> int:
        return super()._invalid(self._rows(natural)[1])

    def entropy(self, natural, moments) -> float:
        """m_i H[q_i] at the latent rows only when the others are complete (their weight is 0)."""
        latent, at = self._rows(natural)
        if latent is None:
            return super().entropy(natural, moments)
        h = self.node.family.entropy(at)
        if self.node.weights is not None:
            h = h * np.take(self.node.weights, latent.rows, axis=0)
        return float(np.sum(h))
