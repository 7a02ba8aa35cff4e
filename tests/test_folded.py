"""Folded messages (vmp/graph/folded.py): an observed child's partial derivatives to a
per-element target as one product of its statistics table [x_i x_j (i <= j), x, 1] by the
stacked coefficients, and the sums over the data of the parents' messages as one stacked
reduction [x_i x_j; x; 1] @ E[z], give the term-by-term messages and bound."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.graph import folded
from vmp.graph.compiled import CompiledFactor
from vmp.graph.leaves import Context
from vmp.graph.strategies import DEFAULT
from vmp.inference.engine import Engine
from tests.helpers import factorized_mixture

#: every strategy but folding
UNFOLDED = tuple(n for n in DEFAULT if n != "folding")


def test_pack_folds_the_off_diagonal_pairs():
    """sum_ab x_a x_b G_ab = sum_{i<=j} x_i x_j pack(G)_ij for a G that is not symmetric."""
    rng = np.random.default_rng(0)
    x, g = rng.normal(size=(7, 4)), rng.normal(size=(3, 4, 4))
    iu, ju = np.triu_indices(4)
    pairs = x[:, iu] * x[:, ju]
    np.testing.assert_allclose(pairs @ folded.pack(g).T, np.einsum("na,nb,kab->nk", x, x, g), rtol=1e-12)


def _mixture(n=9000, d=3, k=4, seed=1):

    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(loc=c, size=(n // 3, d)) for c in (-3.0, 0.0, 3.0)])
    return factorized_mixture(x, k)


def _multinomial(n=9000, seed=2):
    from models import multinomial_mixture

    rng = np.random.default_rng(seed)
    return multinomial_mixture(rng.poisson(3.0, size=(n, 5)), 3)


def _weighted(n=12_000, seed=3):
    """A mixture whose data carry weights (a count per point): weight rows of the product."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)) + rng.choice([-3.0, 3.0], size=(n, 1))
    with vmp.Model("weighted") as model:
        pi = vmp.Dirichlet("pi", alpha=np.ones(3))
        with vmp.Plate("components", 3):
            mu = vmp.Gaussian("mu", mean=np.zeros(2), precision=0.1 * np.eye(2))
            lam = vmp.Wishart("Lambda", dof=2.0, scale=np.eye(2))
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=mu[z], precision=lam[z], observed=x, weights=rng.integers(1, 4, size=n))
    return model


def _messages(model, strategies, ctx_rows=None):
    """Every factor's messages to each node it touches and its bound, at the model's state,
    through factors bound with ``strategies``; the data plate restricted to ``ctx_rows``."""
    engine = Engine(model)
    state = model.state
    out = []
    for name, f in engine.factors.items():
        g = CompiledFactor(f.child, strategies=strategies)
        g.live = f.live
        ctx = Context(state=state)
        if ctx_rows is not None and f.child.plates and f.child.plates[0].name == "data":
            ctx = Context(subset={"data": ctx_rows}, state=state)
        for node in g.nodes():
            out.extend(g.messages(node, engine.factor_weight(f), ctx=ctx))
        for _ in range(2):  # the second reads the plate sums the messages kept
            out.append(np.asarray(g.elog(engine.factor_weight(f), ctx=ctx)))
    return out


@pytest.mark.parametrize("build", [_mixture, _multinomial, _weighted])
@pytest.mark.parametrize("minibatch", [False, True])
def test_folded_messages_equal_the_reference_ones(build, minibatch):
    """Folded (the default), every strategy but folding, and the reference alone."""
    model = build()
    model.fit(iterations=3, seed=0, progress=False, tol=0)
    rows = np.sort(np.random.default_rng(4).choice(model["z"].plate_shape[0], 200, replace=False)) if minibatch else None
    fast = _messages(model, DEFAULT, rows)
    for strategies in (UNFOLDED, ()):
        plain = _messages(model, strategies, rows)
        assert len(fast) == len(plain)
        for a, b in zip(fast, plain):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))


def test_a_large_mixture_fits_as_without_folding():
    """N x K above MIN_SIZE: a fit with every strategy, and one without folding, give the same
    bound and q."""
    assert 12_000 * 4 > folded.MIN_SIZE
    fits = []
    for strategies in (DEFAULT, UNFOLDED):
        model = _mixture(n=12_000, d=3, k=4)
        model.compile(strategies=strategies)
        result = model.fit(iterations=4, seed=0, progress=False, tol=0)
        fits.append((result.final_elbo, model["mu"].mean.copy()))
    assert fits[0][0] == pytest.approx(fits[1][0], rel=1e-12)
    np.testing.assert_allclose(fits[0][1], fits[1][1], rtol=1e-11, atol=1e-11)


def test_the_table_chunks_are_written_in_one_buffer():
    """Columns.table: a writeable width x rows array for every chunk; every chunk of at most
    CHUNK elements is written in one kept buffer (grown to the largest asked for), a wider one
    is an array of its own."""
    columns = folded.Columns()
    first = columns.table(3, 5)
    for width, rows in [(3, 5), (10, folded.CHUNK // 10), (6, 100), (folded.CHUNK + 1, 1)]:
        t = columns.table(width, rows)
        assert t.shape == (width, rows) and t.flags.writeable
        t[...] = 1.0
    assert np.shares_memory(columns.table(10, 7), columns.table(6, 100))
    assert not np.shares_memory(columns.table(folded.CHUNK + 1, 1), columns.table(6, 100))
    assert columns.table(2, 2).base.size <= folded.CHUNK and first.shape == (3, 5)
