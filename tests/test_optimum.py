"""The bound right after a node's coordinate update (``Engine._at_optimum``): the terms of its
factors that read it plus its entropy are A(lambda) - E[log h] (``Family.optimum``, Winn &
Bishop eq. (5): lambda is the sum of those factors' messages), read without the inner products
<message, E[u]>. The bound read that way equals the bound summed term by term, and the shortcut
is taken only while the messages q(node) was summed from still stand."""
from __future__ import annotations

import numpy as np

from vmp.graph.leaves import Context
from vmp.inference.engine import Engine
from vmp.models import gaussian_mixture, matrix_factorization


def _swept(model):
    """A model's state after one more sweep of its engine, and the engine."""
    engine = Engine(model)
    state = model.state
    for node in engine.update_order():
        state = state.updated({node.name: engine.coordinate(state, node)})
    return engine, state


def _term_by_term(engine, state):
    return engine.elbo(state, cached=False)


def test_the_bound_after_a_sweep_reads_the_last_node_at_its_optimum():
    rng = np.random.default_rng(0)
    users, items = np.arange(3000) % 300, rng.permutation(np.arange(3000) % 400)  # every one rated
    model = matrix_factorization(users, items, rng.normal(3.0, 1.0, 3000), n_factors=3)
    model.fit(iterations=3, tol=0, seed=0, progress=False)
    engine, state = _swept(model)
    found = engine._at_optimum(state, None, Context(state=state))
    assert found is not None and found[0] is model["v"] and found[1]["r"] and found[1]["v"]
    np.testing.assert_allclose(engine.elbo(state), _term_by_term(engine, state), rtol=1e-12)
    # kept messages that cover only some of the terms reading v (one component's left out)
    node, total, factors = engine._summed
    engine._summed = (node, total, [(f, held[1:] if f.child.name == "r" else held) for f, held in factors])
    assert engine._at_optimum(state, None, Context(state=state)) is None
    engine._summed = (node, total, factors)
    # q(u) moved since q(v)'s messages were formed: they no longer stand
    u = model["u"]
    new = u.family.perturb(state.natural["u"], np.random.default_rng(1))
    moved = state.updated({"u": (new, u.family.moments(new))})
    assert engine._at_optimum(moved, None, Context(state=moved)) is None
    np.testing.assert_allclose(engine.elbo(moved), _term_by_term(engine, moved), rtol=1e-12)
    # q(v) is not the sum of the kept messages (another value): no shortcut
    v = model["v"]
    other = v.family.perturb(state.natural["v"], np.random.default_rng(2))
    elsewhere = state.updated({"v": (other, v.family.moments(other))})
    assert engine._at_optimum(elsewhere, None, Context(state=elsewhere)) is None
    np.testing.assert_allclose(engine.elbo(elsewhere), _term_by_term(engine, elsewhere), rtol=1e-12)
    # the messages to v formed again (a target not applied): the recorded sum no longer is theirs
    engine.factors["r"].messages(v, ctx=Context(state=moved))
    assert engine._at_optimum(state, None, Context(state=state)) is None


def test_a_mixture_bound_is_summed_term_by_term():
    """The last node of a Gaussian mixture's sweep is z, a Categorical: its optimum (entropy
    plus <eta, E[u]>, an N x K pass) saves nothing over the kept messages' inner products, so
    the bound does not take it (``Family.closed_optimum``), and is the same bound."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(-2.0, 1.0, (150, 2)), rng.normal(2.0, 1.0, (150, 2))])
    model = gaussian_mixture(x, 3)
    model.fit(iterations=3, tol=0, seed=0, progress=False)
    engine, state = _swept(model)
    assert engine._at_optimum(state, None, Context(state=state)) is None
    np.testing.assert_allclose(engine.elbo(state), _term_by_term(engine, state), rtol=1e-12)
