"""The evaluator with its strategies gives the reference evaluator's messages and bounds.

Every model of the rule-case table and every ``vmp.models`` builder is bound three ways: the
reference alone (``strategies=()``), every strategy (the default), and every strategy but one.
Along a sweep of coordinate updates (so that the caches see q move, the weights stay and the
data stay), each factor's messages to every hidden node and its bound agree with the
reference's to 1e-12 relative: unrestricted, under a minibatch's Context (its rows, the locals
overridden, a scale), a PerNode draw (rows, a scale per row), a stable Context (a Dask holder's
rows, whose memos hold), for each slice of coupled elements, and per element. Models with a
partially observed node run the Clamp's path here and the data/latent split of the engine in
tests/test_reference_fits.py."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.reference_models import BUILDERS, OTHERS
from tests.rule_cases import CASES
from vmp.graph.compiled import CompiledFactor
from vmp.graph.leaves import Context
from vmp.graph.strategies import DEFAULT
from vmp.inference.engine import Engine
from vmp.inference.init import initialize

RTOL = 1e-12
#: every strategy, and every strategy but one
VARIANTS = [DEFAULT] + [tuple(n for n in DEFAULT if n != off) for off in DEFAULT]


#: the rule cases (small: the strategies with a size threshold do not act) against the default,
#: the builders (and a model of a fold beside terms that do not fold) against the default and
#: each strategy switched off
MODELS = {**{f"case:{k}": ((lambda f=f: f()[0]), [DEFAULT]) for k, f in CASES.items()},
          **{f"model:{k}": (f, VARIANTS) for k, f in {**BUILDERS, **OTHERS}.items()}}


def _close(got, want, what):
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
    """One model's factors bound once per variant (with the keep masks of its compiled factors),
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
            factors[name].keep = f.keep
        return factors

    def each(self, what, evaluate, holders: bool = False):
        """``evaluate(factor)`` in every variant equals the reference's."""
        bound = self.holders if holders else self.variants
        want = evaluate(bound[()][what[0]])
        for names, factors in bound.items():
            if names:
                _close(evaluate(factors[what[0]]), want, f"{what} without {set(DEFAULT) - set(names) or 'none'}")

    def contexts(self, f, state, rng) -> list:
        """A minibatch's Context (rows of the child's first plate, locals overridden, a scale),
        a PerNode draw (rows, a scale per row), rows alone (a partially observed node's latent
        rows), and the stable Context of the holder's rows (twice: its memos serve the second)."""
        if not f.child.plates:
            return []
        plate = f.child.plates[0]
        rows = np.sort(rng.choice(plate.size, max(1, plate.size // 2), replace=False))
        batch = Context(subset={plate.name: rows}, overrides=_locals(f, plate, rows, state),
                        scale=plate.size / rows.size, state=state)
        shape = tuple(len(rows) if p is plate else p.size for p in f.child.plates)
        drawn = Context(subset={plate.name: rows}, scale=rng.uniform(0.5, 2.0, shape), state=state)
        rows_only = Context(subset={plate.name: rows[::2]}, state=state)
        held = self.rows[f.child.name]
        stable = Context(subset={plate.name: held}, overrides=_locals(f, plate, held, state), state=state, stable=True)
        return [("minibatch", batch, False), ("drawn", drawn, False), ("rows", rows_only, False),
                ("stable", stable, True), ("stable again", stable, True)]


def _locals(f, plate, rows, state) -> dict:
    """The moments of the hidden nodes on ``plate`` that ``f`` reads, at ``rows``."""
    on_plate = {l.node.name: l.node for l in f.leaves()
                if l.node is not None and not l.node.observed and l.node.plates and l.node.plates[0] is plate}
    return {name: tuple(np.take(m, rows, axis=0) for m in state.moments[name]) for name in on_plate}


def _check_state(b: Bound, state, rng, label):
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
                b.each((f.child.name, node.name, name, label), lambda g: g.messages(node, weight, ctx=ctx), held)
            for plate in sorted(f.coupled.get(node.name, ()), key=node.plates.index):
                for i in range(plate.size):
                    b.each((f.child.name, node.name, f"slice {i}", label),
                           lambda g: g.messages(node, w, plate, i, full))
        for name, ctx, weight, held in contexts:
            b.each((f.child.name, "bound", name, label), lambda g: g.elog(weight, ctx=ctx), held)
            b.each((f.child.name, "bound per element", name, label),
                   lambda g: g.elog(weight, per_element=True, ctx=ctx), held)


def _new_data(model, rng) -> bool:
    """New data, of the same size, for the fully observed Gaussian and Normal nodes."""
    changes = {n.name: n.data + 0.5 * rng.normal(size=n.data.shape) for n in model.nodes.values()
               if n.observed and n.clamp is None and n.family.name in ("Gaussian", "Normal")}
    if changes:
        model.set_data(changes)
    return bool(changes)


def _sweep(b: Bound, state, rng, label):
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


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_strategy_gives_the_reference_numbers(name):
    build, variants = MODELS[name]
    b = Bound(build(), variants)
    state = initialize(b.engine, np.random.default_rng(1))
    rng = np.random.default_rng(2)
    _check_state(b, state, rng, "initial q")
    for sweep in range(2):
        state = _sweep(b, state, rng, f"sweep {sweep}")
    _check_state(b, state, rng, "after two sweeps")
    if _new_data(b.engine.model, rng):
        _check_state(b, state, rng, "new data")


def test_the_reference_alone_is_a_model_option():
    """``model.compile(strategies=())`` binds every factor to the reference evaluator (no
    strategy), keeps that choice when the factors are bound again, and refuses an unknown name."""
    model = BUILDERS["gaussian_mixture"]()
    factors, _ = model.compile(strategies=())
    assert all(f.strategies == {} for f in factors.values())
    model._compiled = None
    assert all(f.strategies == {} for f in model.compile()[0].values())
    assert set(model.compile(strategies=DEFAULT)[0]["x"].strategies) == set(DEFAULT)
    with pytest.raises(vmp.OptionError, match="folded"):
        model.compile(strategies=("folded",))
