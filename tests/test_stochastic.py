"""Stochastic VMP: unbiased targets (Paquet: E[lambda^temp] = lambda*), options (a)/(b), schedules,
convergence to the batch fixed point, determinism."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import vmp
from models import matrix_factorization
from tests.helpers import factorized_mixture
from vmp.inference import steps
from vmp.inference.engine import Engine
from vmp.inference.init import initialize


def _mixture(n=60, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    x = centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2))
    return factorized_mixture(x, 3)


def _mf(factorized, seed=0, m=6, n=7, k=2, r=40):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.3 * rng.normal(size=r)
    return matrix_factorization(rows, cols, y, k, factorized=factorized, n_users=m, n_items=n)


def _engine(model, seed=1):
    """An engine and a state three batch sweeps from the initialization."""
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(seed))
    for _ in range(3):
        state, _ = steps.sweep(engine, state, engine.update_order())
    return engine, state


def _check_mean(draws, exact, what):
    draws = np.array(draws)
    mean = draws.mean(0)
    se = draws.std(0) / np.sqrt(len(draws)) + 1e-9 * (1 + np.abs(exact))
    z = np.abs(mean - exact) / se
    assert np.all(z < 5.0), f"{what}: max z = {z.max():.2f}"
    return bool(np.any(draws.std(0) > 0))


@pytest.mark.parametrize("case", ["mixture", "mf-structured", "mf-factorized"])
def test_per_node_target_is_unbiased(case):
    model = _mixture() if case == "mixture" else _mf(case == "mf-factorized")
    engine, state = _engine(model)
    plan = vmp.PerNode(children=2).prepare(engine, None)
    rng = np.random.default_rng(5)
    for node in engine.hidden:
        exact = engine.target(state, node)
        draws = [engine.target(state, node, ctx=plan.node_contexts(engine, node, rng)) for _ in range(1500)]
        if plan.node_contexts(engine, node, rng).whole:
            continue
        varied = [_check_mean([d[comp] for d in draws], exact[comp], f"{case}:{node.name}[{comp}]")
                  for comp in range(len(exact))]
        assert any(varied), f"{case}:{node.name}: the draws do not vary, the test would be vacuous"


@pytest.mark.parametrize("case", ["mixture", "mf-structured"])
def test_minibatch_target_is_unbiased(case):
    model = _mixture() if case == "mixture" else _mf(False)
    plate = "data" if case == "mixture" else "ratings"
    engine, state = _engine(model)
    rng = np.random.default_rng(3)
    plan = vmp.Minibatch(plate, 7).prepare(engine, rng)
    state = steps.optimize_locals(engine, plan, state)
    for node in plan.stepped:
        exact = engine.target(state, node)
        draws = []
        for _ in range(1200):
            draw = plan.draw(engine, rng)
            ctx, _, _ = steps.local_step(engine, plan, state, draw.ctx)
            draws.append(steps.targets(engine, plan, state, replace(draw, ctx=ctx), [node])[node.name])
        varied = [_check_mean([d[comp] for d in draws], exact[comp], f"{case}:{node.name}[{comp}]")
                  for comp in range(len(exact))]
        assert any(varied), f"{case}:{node.name}: the draws do not vary, the test would be vacuous"


def test_all_children_and_unit_step_is_batch_vmp():
    """With C at least every node's number of children and rho = 1, option (a) is batch VMP."""
    a, b = _mf(True), _mf(True)
    ra = a.fit(iterations=5, tol=0.0)
    rb = b.fit(method="stochastic", subsample=vmp.PerNode(children=1000), step=vmp.Constant(1.0),
               iterations=5, evaluate_every=1)
    assert np.array_equal(a["u"].natural[0], b["u"].natural[0])
    assert np.allclose(ra.elbo, rb.elbo, rtol=1e-12)


@pytest.mark.parametrize("update", ["global", "per-node"])
def test_option_b_uses_one_snapshot(update):
    """Option (b): with every child and rho = 1, every node's new q is its target at the
    starting state (a Jacobi step); option (a) reads its predecessors' new q (Gauss-Seidel) and
    must not match that for the nodes after the first."""
    model = _mf(False)
    fit = model.stochastic(subsample=vmp.PerNode(children=1000), update=update, step=vmp.Constant(1.0),
                           iterations=1, seed=1)
    start = fit.state
    engine = fit.engine
    fit.step()
    jacobi = {n.name: engine.target(start, n) for n in engine.hidden}
    same = [all(np.allclose(x, y) for x, y in zip(fit.state.natural[name], jacobi[name])) for name in jacobi]
    if update == "global":
        assert all(same)
    else:
        assert same[0] and not all(same[1:])


def test_option_b_steps_a_coupled_node_slice_by_slice_from_the_snapshot():
    """Option (b) on Paquet's factorized q(u_mk): with every child and rho = 1 the coupled u and
    v each take a Gauss-Seidel sweep over k, each slice reading the slices before it and every
    other node at the starting state; the all-k-at-once target (a Jacobi step within the node)
    must not match."""
    model = _mf(True, m=8, n=9, k=3, r=60)
    fit = model.stochastic(subsample=vmp.PerNode(children=1000), update="global", step=vmp.Constant(1.0),
                           iterations=1, seed=1)
    start, engine = fit.state, fit.engine
    fit.step()
    for node in engine.hidden:
        coupled = engine.coupled_plate(node) is not None
        sliced = engine.coordinate(start, node)[0]
        assert all(np.allclose(x, y) for x, y in zip(fit.state.natural[node.name], sliced)), node.name
        jacobi = engine.target(start, node)
        assert coupled != all(np.allclose(x, y) for x, y in zip(fit.state.natural[node.name], jacobi)), node.name
    assert {n.name for n in engine.hidden if engine.coupled_plate(n) is not None} == {"u", "v"}


def _uncentered_mf(k=8, m=15, n=20, r=200, seed=0):
    """Ratings 3.5 + noise, not centred: every factor k of a user wants the same mean, so the
    u_mk of one user are strongly coupled (MovieLens's uncentred stars in small)."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = 3.5 + 0.3 * rng.normal(size=r)
    return matrix_factorization(rows, cols, y, k, factorized=True, n_users=m, n_items=n, noise_precision=1.0)


def test_option_b_with_coupled_factors_does_not_blow_up():
    """Option (b), PerNode(C = 1), rho_t = t^-0.6: all u_mk of a user stepped at once from one
    snapshot overshoot by about K (a Jacobi step) and the bound ran to -2e76 in 100 steps; slice
    by slice the run stays within 5% of batch VMP's bound."""
    batch = _uncentered_mf().fit(iterations=200).elbo[-1]
    model = _uncentered_mf()
    res = model.fit(method="stochastic", subsample=vmp.PerNode(children=1), update="global",
                    step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=100, evaluate_every=50,
                    seed=0)
    assert np.all(np.isfinite(model["u"].mean))
    assert res.elbo[-1] > batch - 0.05 * abs(batch), (res.elbo[-1], batch)


def test_option_a_and_b_differ_and_both_step_from_the_same_start():
    ra = _mf(False).fit(method="stochastic", subsample=vmp.PerNode(children=1000), update="per-node",
                        step=vmp.Constant(1.0), iterations=1)
    rb = _mf(False).fit(method="stochastic", subsample=vmp.PerNode(children=1000), update="global",
                        step=vmp.Constant(1.0), iterations=1)
    assert rb.elbo[0] > ra.elbo[0], "option (b) starts one batch sweep further, its globals agreeing"
    assert ra.elbo[-1] != rb.elbo[-1]


def test_schedules():
    rm = vmp.RobbinsMonro(tau=10.0, kappa=0.7, rho1=0.5)
    assert rm(1) == 0.5
    assert rm(11) == pytest.approx(0.5 * (21 / 11) ** -0.7)
    assert vmp.Constant(0.25)(99) == 0.25
    w = vmp.Warmup(3, then=vmp.Constant(0.1))
    assert [w(t) for t in (1, 2, 3, 4, 5)] == [1.0, 1.0, 1.0, 0.1, 0.1]
    with pytest.raises(ValueError):
        vmp.RobbinsMonro(kappa=1.5)
    with pytest.raises(ValueError):
        vmp.Constant(0.0)


def test_per_node_step_dict_and_history():
    model = _mf(False)
    res = model.fit(method="stochastic", subsample=vmp.PerNode(children=2),
                    step={"u": vmp.Constant(0.5), "default": vmp.RobbinsMonro(kappa=0.6)},
                    iterations=6, evaluate_every=3)
    h = res.history
    assert np.all(h["rho"]["u"] == 0.5)
    assert h["rho"]["v"][0] == 1.0 and h["rho"]["v"][1] < 1.0
    assert list(h["evaluations"]["iteration"]) == [0, 3, 6]
    assert np.all(np.diff(h["accesses"]) > 0)
    assert len(h["change"]["tau"]) == 6
    with pytest.raises(ValueError, match="no hidden node"):
        _mf(False).fit(method="stochastic", subsample=vmp.PerNode(2), step={"nope": vmp.Constant(1.0)})


def test_stochastic_reaches_the_batch_fixed_point():
    """A unique optimum (normal-gamma): SVI with kappa in (0.5, 1] converges to batch VMP's."""
    rng = np.random.default_rng(2)
    x = rng.normal(1.0, 0.5, size=400)

    def build():
        with vmp.Model("ng") as model:
            tau = vmp.Gamma("tau", 1.0, 1.0)
            mu = vmp.Normal("mu", 0.0, 0.1)
            with vmp.Plate("N", x.size):
                vmp.Normal("x", mu, tau, observed=x)
        return model

    batch = build()
    batch.fit(tol=1e-12, iterations=1000)
    for sub in (vmp.Minibatch("N", 40), vmp.PerNode(children=40)):
        model = build()
        model.fit(method="stochastic", subsample=sub, step=vmp.RobbinsMonro(tau=1.0, kappa=0.9),
                  iterations=1500, evaluate_every=0, seed=4)
        assert model["mu"].mean == pytest.approx(batch["mu"].mean, abs=0.01)
        assert model["tau"].mean == pytest.approx(batch["tau"].mean, rel=0.05)


def test_same_seed_same_bits():
    def run(seed):
        model = _mixture(n=200)
        model.fit(method="stochastic", subsample=vmp.Minibatch("data", 20), iterations=15, seed=seed)
        return model["mu"].natural[0]
    assert np.array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def test_bad_stochastic_options():
    with pytest.raises(ValueError, match="option"):
        _mf(False).fit(method="stochastic", subsample=vmp.PerNode(2), update="sideways")
    with pytest.raises(ValueError, match="subsample"):
        _mf(False).fit(method="stochastic", subsample=3)
    with pytest.raises(vmp.GraphError, match="no plate named 'nope'"):
        _mf(False).fit(method="stochastic", subsample=vmp.Minibatch("nope", 3))
    with pytest.raises(vmp.GraphError, match="holds no observed node"):
        _mixture().fit(method="stochastic", subsample=vmp.Minibatch("components", 2))
    with pytest.raises(ValueError):
        vmp.PerNode(children=0)


def test_lda_minibatch_recovers_topics():
    from models import lda

    rng = np.random.default_rng(0)
    k, v, docs = 3, 30, 300
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    d, w, c = [], [], []
    for doc in range(docs):
        theta = rng.dirichlet(np.full(k, 0.2))
        counts = rng.multinomial(80, theta @ beta)
        nz = np.flatnonzero(counts)
        d += [doc] * nz.size
        w += nz.tolist()
        c += counts[nz].tolist()
    model = lda(np.array(d), np.array(w), np.array(c), k, n_words=v)
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("documents", 20),
                    step=vmp.RobbinsMonro(tau=1.0, kappa=0.7), iterations=200, evaluate_every=100, seed=0)
    assert not res.diverged
    est = model["beta"].mean
    corr = np.corrcoef(np.vstack([beta, est]))[:k, k:]
    assert np.all(corr.max(axis=1) > 0.95), corr
    assert res.elbo[-1] > res.elbo[0]


def test_a_subsample_without_method_means_a_stochastic_fit():
    """``fit(subsample=...)`` with no ``method`` is the stochastic fit, bit for bit; without a
    subsample it is batch VMP; ``method='batch'`` with a subsample is still refused."""
    model = _mixture()
    implicit = model.fit(subsample=vmp.Minibatch("data", 20), iterations=15, seed=3)
    explicit = _mixture().fit(method="stochastic", subsample=vmp.Minibatch("data", 20), iterations=15, seed=3)
    assert implicit.extra["method"] == "stochastic" and implicit.iterations == 15
    np.testing.assert_array_equal(implicit.history["evaluations"]["elbo"], explicit.history["evaluations"]["elbo"])
    assert model.fit(iterations=5, tol=0, seed=0).extra["method"] == "batch"
    with pytest.raises(vmp.VMPError, match="applies to method='stochastic'"):
        model.fit(method="batch", subsample=vmp.Minibatch("data", 20))


def test_the_result_says_when_its_bound_is_an_estimate():
    """A minibatch fit's final bound is evaluated on a subsample: its repr says so (a batch fit's,
    and a minibatch fit with evaluate="full", do not)."""
    from tests.helpers import factorized_mixture
    model = factorized_mixture(np.random.default_rng(0).normal(size=(300, 2)), 2)
    sub = model.fit(subsample=vmp.Minibatch("data", 20), iterations=3, seed=0, progress=False)
    assert "(estimate from 256 of 300 elements of 'data')" in repr(sub)
    full = model.fit(subsample=vmp.Minibatch("data", 20), iterations=3, seed=0, progress=False, evaluate="full")
    assert "estimate" not in repr(full) and "estimate" not in repr(model.fit(iterations=3, seed=0))
