"""Folded messages (vmp/graph/folded.py): an observed child's partial derivatives to a
per-element target as one product of its statistics table [x_i x_j (i <= j), x, 1] by the
stacked coefficients, and the sums over the data of the parents' messages as one stacked
reduction [x_i x_j; x; 1] @ E[z], give the term-by-term messages and bound."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.graph import folded
from vmp.graph.leaves import Context
from vmp.inference.engine import Engine
from tests.helpers import factorized_mixture


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


def _messages(model, ctx_rows=None):
    engine = Engine(model)
    state = model.state
    out = []
    for node in engine.schedule():
        for f in engine.touching[node.name]:
            ctx = Context(state=state)
            if ctx_rows is not None and f.child.plates and f.child.plates[0].name == "data":
                ctx = Context(subset={"data": ctx_rows}, state=state)
            out.extend(f.messages(node, engine.factor_weight(f), ctx=ctx))
    return out, engine.elbo(state)


@pytest.mark.parametrize("build", [_mixture, _multinomial, _weighted])
@pytest.mark.parametrize("minibatch", [False, True])
def test_folded_messages_equal_the_term_by_term_ones(monkeypatch, build, minibatch):
    model = build()
    model.fit(iterations=3, seed=0, progress=False, tol=0)
    rows = np.sort(np.random.default_rng(4).choice(model["z"].plate_shape[0], 200, replace=False)) if minibatch else None
    monkeypatch.setattr(folded, "MIN_SIZE", -1)
    calls, stacks = [], []
    real, real_stack = folded.product, folded._stack
    monkeypatch.setattr(folded, "product", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(folded, "_stack", lambda *a, **k: stacks.append(1) or real_stack(*a, **k))
    fast, bound = _messages(model, rows)
    assert bool(calls) == (build is not _multinomial), "the fold runs where two terms read x (not a lone <x, E[log p]>)"
    assert bool(stacks) == (not minibatch), "the parents' sums come from one stacked reduction on full data"
    monkeypatch.setattr(folded, "ENABLED", False)
    plain, plain_bound = _messages(model, rows)
    assert len(fast) == len(plain)
    for a, b in zip(fast, plain):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-9)
    assert bound == pytest.approx(plain_bound, rel=1e-12)


def test_a_large_mixture_folds_by_default_and_fits_the_same(monkeypatch):
    """N x K above MIN_SIZE: the fit runs the fold; switched off, the same bound and q."""
    model = _mixture(n=12_000, d=3, k=4)
    assert 12_000 * 4 > folded.MIN_SIZE
    calls = []
    real = folded.product
    monkeypatch.setattr(folded, "product", lambda *a, **k: calls.append(1) or real(*a, **k))
    fast = model.fit(iterations=4, seed=0, progress=False, tol=0).final_elbo
    mu = model["mu"].mean.copy()
    assert calls
    monkeypatch.setattr(folded, "ENABLED", False)
    plain = model.fit(iterations=4, seed=0, progress=False, tol=0).final_elbo
    assert fast == pytest.approx(plain, rel=1e-12)
    np.testing.assert_allclose(model["mu"].mean, mu, rtol=1e-9, atol=1e-9)
