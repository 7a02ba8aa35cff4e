"""The strategies' memos (vmp/graph/strategies/) never serve a stale value: every message read
through them equals the same message from the reference evaluator, after the moments it reads,
the weights or the orientation of the sparse product change; each cache keeps what its
docstring says, within its bound."""
from __future__ import annotations

import numpy as np

from vmp.factors.terms import DIRECT
from vmp.graph.compiled import CompiledFactor
from vmp.graph.leaves import Context
from vmp.graph.strategies.fused import PAIRS_KEPT
from vmp.inference.engine import Engine
from vmp.models import matrix_factorization


def _model(seed=0, m=30, n=40, r=300, k=3):
    rng = np.random.default_rng(seed)
    users, items = rng.integers(0, m, r), rng.integers(0, n, r)
    model = matrix_factorization(users, items, rng.normal(size=r), n_factors=k, n_users=m, n_items=n)
    model.fit(iterations=2, tol=0, seed=seed, progress=False)
    return model


def _fresh(model, child, node, state, weight=None):
    """The message through the reference evaluator alone."""
    return CompiledFactor(model[child], strategies=()).messages(model[node], weight, ctx=Context(state=state))


def _reference_bound(model, child, weight=None, ctx=None):
    return CompiledFactor(model[child], strategies=()).elog(weight, ctx=ctx)


def _moved(state, model, name, seed):
    """``state`` with q(name) moved to a perturbed q (new moments objects)."""
    node = model[name]
    new = node.family.perturb(state.natural[name], np.random.default_rng(seed))
    return state.updated({name: (new, node.family.moments(new))})


def _same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


def test_sparse_products_follow_the_moments_they_read():
    """The noise precision's message reuses the product S^T E[uu^T] that the item factors'
    message computed; after q(u) or q(v) move it is computed again."""
    model = _model()
    engine = Engine(model)
    f = engine.factors["r"]
    state = model.state
    for step in range(4):
        ctx = Context(state=state)
        _same(f.messages(model["v"], ctx=ctx), _fresh(model, "r", "v", state))
        _same(f.messages(model["tau"], ctx=ctx), _fresh(model, "r", "tau", state))
        _same(f.messages(model["u"], ctx=ctx), _fresh(model, "r", "u", state))
        _same(f.messages(model["tau"], ctx=ctx), _fresh(model, "r", "tau", state))
        np.testing.assert_allclose(f.elog(ctx=ctx), _reference_bound(model, "r", ctx=ctx), rtol=1e-12)
        state = _moved(state, model, "uv"[step % 2], step)
        # the same message again right after its inputs moved: no derivative may be stale
        _same(f.messages(model["tau"], ctx=Context(state=state)), _fresh(model, "r", "tau", state))


def test_sparse_products_follow_the_weights():
    model = _model(1)
    f = Engine(model).factors["r"]
    ctx = Context(state=model.state)
    for w in (None, np.linspace(0.5, 2.0, 300), np.linspace(2.0, 0.5, 300), None):
        for name in ("v", "tau", "u"):
            _same(f.messages(model[name], w, ctx=ctx), _fresh(model, "r", name, model.state, w))


def test_a_constant_message_is_kept_read_only():
    """A prior with fixed hyperparameters sends the same message every sweep: it is computed
    once per weight, read-only (a caller cannot change it in place), and equals the reference's;
    the noise precision's likelihood message reads q(u), q(v) and follows them."""
    model = _model(2)
    f = Engine(model).factors["v"]
    first = f.messages(model["v"], ctx=Context(state=model.state))
    moved = _moved(model.state, model, "v", 5)
    again = f.messages(model["v"], ctx=Context(state=moved))
    assert all(a is b for a, b in zip(first, again))
    assert not any(a.flags.writeable for a in first)
    _same(again, _fresh(model, "v", "v", moved))
    w = np.linspace(0.5, 2.0, 40)
    _same(f.messages(model["v"], w, ctx=Context(state=moved)), _fresh(model, "v", "v", moved, w))
    r = Engine(model).factors["r"]
    before = r.messages(model["tau"], ctx=Context(state=model.state))
    moved = _moved(model.state, model, "u", 6)
    after = r.messages(model["tau"], ctx=Context(state=moved))
    assert not np.allclose(before[0], after[0])
    _same(after, _fresh(model, "r", "tau", moved))


def test_the_noise_precision_reads_the_product_of_the_last_message():
    """tau's message reads S^T E[uu^T] (and R^T E[u]) that v's message formed, in the other
    orientation: the same numbers as the reference's, and again after q(u) moves."""
    model = _model(3)
    f = Engine(model).factors["r"]
    state = model.state
    for step in range(3):
        f.messages(model["v"], ctx=Context(state=state))
        _same(f.messages(model["tau"], ctx=Context(state=state)), _fresh(model, "r", "tau", state))
        _same(f.messages(model["u"], ctx=Context(state=state)), _fresh(model, "r", "u", state))
        state = _moved(state, model, "u", step)
        _same(f.messages(model["tau"], ctx=Context(state=state)), _fresh(model, "r", "tau", state))


def test_constant_terms_of_the_bound_follow_the_weights():
    """A prior's terms that read no q (its log-normalizer) are kept per weight."""
    model = _model(4)
    engine = Engine(model)
    for w in (None, np.linspace(0.5, 2.0, 40), np.linspace(2.0, 0.5, 40), None):
        for state in (model.state, _moved(model.state, model, "v", 7)):
            ctx = Context(state=state)
            got = engine.factors["v"].elog(w, ctx=ctx)
            np.testing.assert_allclose(got, _reference_bound(model, "v", w, ctx), rtol=1e-13)
    assert engine.factors["v"].strategies["constant_terms"].kept


def test_relative_change_is_the_norm_ratio():
    """steps.relative_change sums squares in one pass; it is ||new - old|| / ||old||."""
    from vmp.inference.steps import relative_change

    rng = np.random.default_rng(0)
    old = (rng.normal(size=(50, 3)), rng.normal(size=(50, 3, 3))[:, ::-1], np.float64(2.0))
    new = tuple(x * 1.1 + 0.01 for x in old)
    flat = lambda t: np.concatenate([np.ravel(x) for x in t])  # noqa: E731
    expect = np.linalg.norm(flat(new) - flat(old)) / np.linalg.norm(flat(old))
    np.testing.assert_allclose(relative_change(old, new), expect, rtol=1e-13)


def test_relative_change_of_large_arrays_is_summed_in_pieces():
    """Above DIRECT elements (z's N x K) the squares are summed a piece at a time: the same ratio,
    a broadcast new side included."""
    from vmp.inference.steps import relative_change

    rng = np.random.default_rng(1)
    old = (rng.normal(size=(9_001, 7)), rng.normal(size=(5,)))
    for new in ((old[0] + 0.01 * rng.normal(size=old[0].shape), old[1] * 2.0),
                (np.asfortranarray(old[0] - 0.5), old[1]),
                (np.broadcast_to(rng.normal(size=(1, 7)), old[0].shape), old[1])):
        flat = lambda t: np.concatenate([np.ravel(x) for x in t])  # noqa: E731
        expect = np.linalg.norm(flat(new) - flat(old)) / np.linalg.norm(flat(old))
        np.testing.assert_allclose(relative_change(old, new), expect, rtol=1e-12)


def test_squares_in_blocks_are_the_piecewise_sums():
    """change.squares adds one BLAS dot per piece of SQUARES_PIECE elements, in order, whether the
    pieces go one at a time or a block at a time: the same bits (the history's relative change
    did not move when the blocks came)."""
    from vmp.graph import change as steps

    def piecewise(a, b):
        fa, fb = a.reshape(-1), b.reshape(-1)
        num = den = 0.0
        for start in range(0, fa.size, steps.SQUARES_PIECE):
            x = fa[start:start + steps.SQUARES_PIECE]
            d = x - fb[start:start + steps.SQUARES_PIECE]
            num, den = num + float(d @ d), den + float(x @ x)
        return num, den

    rng = np.random.default_rng(2)
    block = steps.SQUARES_PIECE * steps.SQUARES_BLOCK
    for n in (1000, steps.SQUARES_PIECE, steps.SQUARES_PIECE + 1, block, block + 1, 2 * block + 3 * steps.SQUARES_PIECE + 17):
        a, b = 3.0 * rng.normal(size=n), rng.normal(size=n)
        assert steps.squares(a, b) == piecewise(a, b), n


def test_sparse_matrices_are_kept_per_weight():
    """The ones (S) and the ratings (R) over one pair of gathers alternate every sweep: both
    matrices are kept, each while its weight array is the same object, the last PAIRS_KEPT."""
    model = _model(5)
    f = Engine(model).factors["r"]
    fused = f.strategies["fused_gathers"]
    lu, lv = (next(leaf for leaf in f.targets if leaf.node is model[n]) for n in ("u", "v"))
    data = np.linspace(1.0, 2.0, 300)
    s, r = fused.pair(lu, lv, None, None), fused.pair(lu, lv, data, None)
    assert fused.pair(lu, lv, None, None) is s and fused.pair(lu, lv, data, None) is r
    assert fused.pair(lu, lv, data.copy(), None) is not r
    np.testing.assert_array_equal(r.toarray(), fused.pair(lu, lv, data.copy(), None).toarray())
    for _ in range(PAIRS_KEPT + 2):
        fused.pair(lu, lv, data.copy(), None)
    assert all(len(p.matrices) <= PAIRS_KEPT for p in fused.patterns.values())


def test_symmetric_moments_travel_packed():
    """S E[vv^T] runs over the K(K+1)/2 unique entries of E[vv^T] (``pack_symmetric``): the
    message equals the brute-force sum over the ratings and the reference's, and packing is
    undone exactly."""
    from vmp.families import _linalg

    m, n, r, k = 30, 40, 300, 4
    rng = np.random.default_rng(5)
    users, items = rng.integers(0, m, r), rng.integers(0, n, r)
    model = matrix_factorization(users, items, rng.normal(size=r), n_factors=k, n_users=m, n_items=n)
    model.fit(iterations=2, tol=0, seed=5, progress=False)
    state = model.state
    engine = Engine(model)
    tau = model["tau"].mean
    for name, rows, other, cols in (("u", users, "v", items), ("v", items, "u", users)):
        msg = engine.factors["r"].messages(model[name], ctx=Context(state=state))
        _same(msg, _fresh(model, "r", name, state))
        brute = np.zeros((model[name].plate_shape[0], k, k))
        np.add.at(brute, rows, state.moments[other][1][cols])
        np.testing.assert_allclose(msg[1], -0.5 * tau * brute, rtol=1e-12, atol=1e-12)
    p = _linalg.pack_symmetric(state.moments["v"][1])
    assert p.shape == (n, k * (k + 1) // 2)
    np.testing.assert_array_equal(_linalg.unpack_symmetric(p, k), state.moments["v"][1])


def test_a_message_known_symmetric_is_exactly_symmetric():
    """S^T E[uu^T] unpacked from its unique entries and times E[tau] is exactly symmetric as
    formed, so ``Family.symmetrize`` is told not to check it (``exact``): it is exactly
    symmetric and the reference's message (which the family symmetrizes)."""
    model = _model(6, m=300, n=400, r=3000, k=3)
    msg = Engine(model).factors["r"].messages(model["v"], ctx=Context(state=model.state))
    np.testing.assert_array_equal(msg[1], np.swapaxes(msg[1], -1, -2))
    _same(msg, _fresh(model, "r", "v", model.state))


def test_a_batch_target_is_marked_exactly_symmetric():
    """lambda^temp of a Gaussian is the prior's message plus the children's, each exactly
    symmetric: the engine marks it (``Family.summed_symmetric``), so that its factorization
    reads one triangle, and the fit's numbers are those of the symmetric part."""
    from vmp.families import _linalg

    model = _model(7, m=300, n=400, r=3000, k=3)
    engine = Engine(model)
    lam = engine.target(model.state, model["v"])
    assert _linalg._marked(lam[1]) and not _linalg._marked(lam[0])
    np.testing.assert_array_equal(lam[1], np.swapaxes(lam[1], -1, -2))
    np.testing.assert_array_equal(_linalg.factor(lam[1], scale=-2.0).logdet(),
                                  _linalg.Cholesky(lam[1], scale=-2.0).logdet())


def test_a_message_kept_as_a_scaled_product_reads_as_formed():
    """Above DIRECT elements the item factors' message E[tau] c S^T E[uu^T] is kept as its
    factors, not as the array sent out: the engine may add the prior's message into that array
    in place, and the bound still reads the message as it was formed (the reference's bound)."""
    model = _model(5, m=40, n=1400, r=6000, k=5)
    f = Engine(model).factors["r"]
    ctx = Context(state=model.state)
    sent = f.messages(model["v"], ctx=ctx)
    assert sent[1].size > DIRECT and sent[1].flags.writeable
    np.add(sent[1], 1.0, out=sent[1])  # as Engine.target adds the prior's message
    np.testing.assert_allclose(f.elog(ctx=ctx), _reference_bound(model, "r", ctx=ctx), rtol=1e-12)


def test_the_count_of_a_term_reading_no_plate_letter_follows_the_moments():
    """The noise precision's N/2 (its E[log tau] term reads no rating) sums ones over the data
    plate (kept, with their sum): the message equals the reference's as the moments move, and on
    minibatches of two sizes."""
    model = _model(6)
    f = Engine(model).factors["r"]
    state = model.state
    for step in range(3):
        state = _moved(state, model, "uv"[step % 2], step)
        _same(f.messages(model["tau"], ctx=Context(state=state)), _fresh(model, "r", "tau", state))
    reference = CompiledFactor(model["r"], strategies=())
    for rows in (np.arange(0, 300, 2), np.arange(0, 300, 3), np.arange(0, 300, 2)):
        ctx = Context(subset={"ratings": rows}, state=state)
        _same(f.messages(model["tau"], ctx=ctx), reference.messages(model["tau"], ctx=ctx))
