"""Comparing the evaluator with the reference evaluator (tests/test_reference.py,
tests/test_reference_rules.py): each factor bound through the reference alone
(``strategies=()``), the default, and every strategy but one; its messages to every hidden node
and its bound along a sweep of coordinate updates (so that the caches see q move, the weights
stay and the data stay), under a minibatch's Context (its rows, the locals overridden, a scale),
a PerNode draw (rows, a scale per row), rows alone, a stable Context (a Dask holder's rows, whose
memos hold), reweighted, for each slice of coupled elements, per element and with new data,
agree to 1e-12 relative."""
from __future__ import annotations

import numpy as np

from vmp.graph.compiled import CompiledFactor
from vmp.graph.leaves import Context
from vmp.graph.strategies import DEFAULT
from vmp.inference.engine import Engine
from vmp.inference.init import initialize

RTOL = 1e-12
#: every strategy, and every strategy but one
VARIANTS = [DEFAULT] + [tuple(n for n in DEFAULT if n != off) for off in DEFAULT]


def close(got, want, what):
    if not isinstance(want, tuple):
        assert (got is None) == (want is None), what
        if want is not None:
            scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=what)
        return
    assert len(got) == len(want), what
    for a, b in zip(got, want):
        scale = max(1.0, float(np.max(np.abs(b)))) if np.size(b) else 1.0
        np.testing.assert_allclose(np.broadcast_to(a, np.shape(b)), b, rtol=RTOL, atol=RTOL * scale, err_msg=what)


class Bound:
    """One model's factors bound once per variant (with the live masks of its compiled factors),
    and once more per variant for the evaluations of a stable Context: its memos serve any
    evaluation of the same rows (a Dask holder's factors see only their own rows)."""

    def __init__(self, model, variants):
        self.engine = Engine(model)
        self.variants, self.holders = {}, {}
        for names in [()] + variants:
            self.variants[names] = self._bind(names)
            self.holders[names] = self._bind(names)
        rng = np.random.default_rng(3)
        self.rows = {name: np.sort(rng.choice(f.child.plates[0].size, max(1, f.child.plates[0].size // 2),
                                              replace=False))
                     for name, f in self.engine.factors.items() if f.child.plates}

    def _bind(self, names) -> dict:
        factors = {}
        for name, f in self.engine.factors.items():
            factors[name] = CompiledFactor(f.child, strategies=names)
            factors[name].live = f.live
        return factors

    def each(self, what, evaluate, holders: bool = False, every: bool = True):
        """``evaluate(factor)`` in every variant (``every``; else the default) equals the
        reference's."""
        bound = self.holders if holders else self.variants
        want = evaluate(bound[()][what[0]])
        for names, factors in bound.items():
            if names and (every or names == DEFAULT):
                close(evaluate(factors[what[0]]), want, f"{what} without {set(DEFAULT) - set(names) or 'none'}")

    def contexts(self, f, state, rng) -> list:
        """A minibatch's Context (rows of the child's first plate, locals overridden, a scale),
        a PerNode draw (rows, a scale per row), rows alone (a partially observed node's latent
        rows), and the stable Context of the holder's rows (twice: its memos serve the second)."""
        if not f.child.plates:
            return []
        plate = f.child.plates[0]
        rows = np.sort(rng.choice(plate.size, max(1, plate.size // 2), replace=False))
        batch = Context(subset={plate.name: rows}, overrides=restricted_moments(f, plate, rows, state),
                        scale=plate.size / rows.size, state=state)
        shape = tuple(len(rows) if p is plate else p.size for p in f.child.plates)
        drawn = Context(subset={plate.name: rows}, scale=rng.uniform(0.5, 2.0, shape), state=state)
        rows_only = Context(subset={plate.name: rows[::2]}, state=state)
        held = self.rows[f.child.name]
        stable = Context(subset={plate.name: held}, overrides=restricted_moments(f, plate, held, state), state=state,
                         stable=True)
        return [("minibatch", batch, False), ("drawn", drawn, False), ("rows", rows_only, False),
                ("stable", stable, True), ("stable again", stable, True)]


#: the Contexts in which the memos serve (the others are compared for the default only)
MEMOIZED = {"full", "reweighted", "full again", "stable", "stable again"}


def restricted_moments(f, plate, rows, state) -> dict:
    """The moments of the hidden nodes on ``plate`` that ``f`` reads, at ``rows``."""
    on_plate = {l.node.name: l.node for l in f.leaves()
                if l.node is not None and not l.node.observed and l.node.plates and l.node.plates[0] is plate}
    return {name: tuple(np.take(m, rows, axis=0) for m in state.moments[name]) for name in on_plate}


def check_state(b: Bound, state, rng, label):
    """Every factor's messages to each of its nodes, then its bound, in each Context; unrestricted
    also with another weight over the child's elements (a policy's) and the factor's own again."""
    engine = b.engine
    for f in engine.factors.values():
        w = engine.factor_weight(f)
        other = rng.uniform(0.5, 2.0, f.child.plate_shape) * (1.0 if w is None else w)
        full = Context(state=state)
        contexts = [("full", full, w, False), ("reweighted", full, other, False), ("full again", full, w, False)]
        contexts += [(name, ctx, w, held) for name, ctx, held in b.contexts(f, state, rng)]
        for node in f.nodes():
            for name, ctx, weight, held in contexts:
                b.each((f.child.name, node.name, name, label), lambda g: g.messages(node, weight, ctx=ctx), held,
                       name in MEMOIZED)
            for plate in sorted(f.coupled.get(node.name, ()), key=node.plates.index):
                for i in range(plate.size):
                    b.each((f.child.name, node.name, f"slice {i}", label),
                           lambda g: g.messages(node, w, plate, i, full))
        for name, ctx, weight, held in contexts:
            b.each((f.child.name, "bound", name, label), lambda g: g.elog(weight, ctx=ctx), held, name in MEMOIZED)
            b.each((f.child.name, "bound per element", name, label),
                   lambda g: g.elog(weight, per_element=True, ctx=ctx), held, name in MEMOIZED)


def new_data(model, rng) -> bool:
    """New data, of the same size, for the fully observed Gaussian and Normal nodes."""
    changes = {n.name: n.data + 0.5 * rng.normal(size=n.data.shape) for n in model.nodes.values()
               if n.observed and n.clamp is None and n.family.name in ("Gaussian", "Normal")}
    if changes:
        model.set_data(changes)
    return bool(changes)


def sweep(b: Bound, state, rng, label):
    """A sweep of coordinate updates in schedule order; after each, every variant's messages to
    the next node and its bound (their memos see the moved q) against the reference's."""
    engine = b.engine
    for node in engine.hidden:
        for f in engine.touching[node.name]:
            w = engine.factor_weight(f)
            b.each((f.child.name, node.name, label), lambda g: g.messages(node, w, ctx=Context(state=state)))
        if engine.coupled_plate(node) is None:
            new, moments = engine.coordinate(state, node)
            state = state.updated({node.name: (new, moments)})
        for f in engine.factors.values():
            b.each((f.child.name, "bound", node.name, label),
                   lambda g: g.elog(engine.factor_weight(f), ctx=Context(state=state)))
    return state


def compare(model, variants) -> None:
    """``model``'s factors through ``variants`` against the reference: at the initial q, along
    two sweeps, after them, and with new data."""
    b = Bound(model, variants)
    state = initialize(b.engine, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    check_state(b, state, rng, "initial q")
    for i in range(2):
        state = sweep(b, state, rng, f"sweep {i}")
    check_state(b, state, rng, "after two sweeps")
    if new_data(b.engine.model, rng):
        check_state(b, state, rng, "new data")
