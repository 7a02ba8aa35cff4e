"""A minibatch's local step on a partially observed node iterates only what moves: a drawn row
with every coordinate observed holds x at the data, so its q(z) is exact after one pass and
leaves the loop (``steps._settled``), and x, a leaf that reads only its own factor, starts at
its first update instead of computing it twice (``steps._lead``). Checked by counting the rows
each update sees, and against the loop without either (the same bits: the skipped work
recomputes the same numbers)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.helpers import factorized_mixture
from vmp.inference import steps
from vmp.inference.engine import Engine


def _data(n=400, d=4, k=3, partial=12, seed=0):
    rng = np.random.default_rng(seed)
    truth = 4.0 * rng.normal(size=(k, d))
    x = truth[rng.integers(k, size=n)] + rng.normal(size=(n, d))
    rows = np.sort(rng.choice(n, size=partial, replace=False))
    for r in rows:
        x[r, rng.choice(d, size=rng.integers(1, d), replace=False)] = np.nan
    return x, rows


OPTS = dict(method="stochastic", subsample=vmp.Minibatch("data", 100), seed=0, progress=False)


def _fit(model, without: str | None = None, iterations=12):
    """The fit, with ``steps.<without>`` switched off (the loop as it was)."""
    with pytest.MonkeyPatch.context() as mp:
        if without is not None:
            mp.setattr(steps, without, lambda *a: None)
        return model.fit(iterations=iterations, **OPTS)


def _assert_same_bits(ra, rb, reads_fewer: bool):
    for name, natural in ra.state.natural.items():
        for u, v in zip(natural, rb.state.natural[name]):
            np.testing.assert_array_equal(u, v)
    h, g = ra.to_dict()["history"], rb.to_dict()["history"]
    assert h["bound_estimate"] == g["bound_estimate"] and h["evaluations"]["elbo"] == g["evaluations"]["elbo"]
    assert (h["accesses"][-1] < g["accesses"][-1]) if reads_fewer else h["accesses"] == g["accesses"]


def _per_local_step(monkeypatch, owner, name, record):
    """Calls of ``owner.name`` grouped by local step: ``record(args, kwargs)`` -> value or None."""
    calls = []
    original, local_step = getattr(owner, name), steps.local_step

    def spy(*args, **kwargs):
        value = record(args, kwargs) if calls else None
        if value is not None:
            calls[-1].append(value)
        return original(*args, **kwargs)

    def spy_step(*args, **kwargs):
        calls.append([])
        return local_step(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    monkeypatch.setattr(steps, "local_step", spy_step)
    return calls


def test_complete_rows_leave_the_local_loop_after_one_pass(monkeypatch):
    """After the first pass of each local step only rows with a masked coordinate are updated."""
    data, rows = _data()
    calls = _per_local_step(monkeypatch, Engine, "target",
                            lambda a, k: k["ctx"].subset["data"] if a[2].name == "z" else None)
    factorized_mixture(data, 3).fit(iterations=6, **OPTS)
    assert len(calls) >= 6 and sum(len(c) > 1 for c in calls) >= 3
    for call in calls:
        assert all(np.isin(later, rows).all() for later in call[1:])
        assert len(call) == 1 or call[1].size == np.isin(call[0], rows).sum()


def test_same_bits_as_iterating_every_row():
    """q and the bounds after 12 steps equal those of the loop without settled rows."""
    data, _ = _data()
    _assert_same_bits(_fit(factorized_mixture(data, 3)), _fit(factorized_mixture(data, 3), "_settled"), True)


def _factorial_with_child(seed=1, n=120, d=3, k=2):
    """A factorial mixture whose x has an observed child y ~ N(x, 1): x's masked entries are
    latent (a Clamp over the plates), z_n1..z_nK meet in the term dot(z, mu)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) + 3.0 * (rng.random((n, k)) < 0.5) @ rng.normal(size=(k, d))
    seen = rng.random(x.shape) > 0.03
    with vmp.Model() as model:
        with vmp.Plate("pixels", d), vmp.Plate("components", k):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("data", n), vmp.Plate("components", k):
            z = vmp.Bernoulli("z", 0.5)
        with vmp.Plate("data", n), vmp.Plate("pixels", d):
            h = vmp.Normal("x", vmp.dot(z, mu), 4.0, observed=np.where(seen, x, 0.0), mask=seen)
            vmp.Normal("y", h, 1.0, observed=x + rng.normal(size=x.shape))
    return model


def test_coupled_locals_keep_iterating():
    """z_n1..z_nK meet in one term: a row whose x is all observed is not settled after one pass
    (the same bits and reads as the loop without settled rows, which iterates it)."""
    _assert_same_bits(_fit(_factorial_with_child(), iterations=4),
                      _fit(_factorial_with_child(), "_settled", iterations=4), False)


def test_a_leaf_local_is_updated_once_on_the_first_pass(monkeypatch):
    """x (a partially observed leaf: only its own factor) starts at its first update and the
    first pass skips it: its own factor's message to it is formed once on the drawn rows."""
    from vmp.graph.compiled import CompiledFactor

    def size(args, kwargs):
        ctx = kwargs.get("ctx", args[-1] if len(args) > 2 else None)
        return ctx.subset["data"].size if args[1].name == "x" and ctx is not None and ctx.subset else None

    data, _ = _data()
    calls = _per_local_step(monkeypatch, CompiledFactor, "messages", size)
    factorized_mixture(data, 3).fit(iterations=4, **OPTS)
    assert len(calls) >= 4
    for call in calls:
        assert call[0] >= 100 and all(later < call[0] for later in call[1:])  # the drawn rows once


def test_leaf_local_start_gives_the_same_bits():
    """q and the bounds equal those of the loop that starts x from its prior message and
    updates it again on the first pass."""
    data, _ = _data(partial=40)
    _assert_same_bits(_fit(factorized_mixture(data, 3)), _fit(factorized_mixture(data, 3), "_lead"), False)


def test_the_rows_context_is_kept_while_the_same_rows_iterate(monkeypatch):
    """A pass over the same rows as the pass before reuses their Context (its overrides hold
    their q): no two consecutive restrictions of one local step are to the same rows."""
    calls = _per_local_step(monkeypatch, steps, "_active", lambda a, k: a[1].copy())
    data, _ = _data(partial=60, seed=2)
    factorized_mixture(data, 3).fit(iterations=8, **OPTS)
    assert sum(len(c) for c in calls) >= 8
    for call in calls:
        assert all(a.size != b.size for a, b in zip(call, call[1:]))


def test_local_step_reaches_the_per_row_coordinate_ascent_fixed_point():
    """Given the globals' q, the drawn rows' q(z_n) and q(x_n,m | x_n,o) equal a per-row
    coordinate ascent written in numpy (x then z, from q(z) at its prior message, to 1e-15):
    q(x_n,m) = N(P_mm^-1 (h_m - P_mo x_o), P_mm^-1), P = sum_k r_nk E[Lambda_k],
    h = sum_k r_nk E[Lambda_k] E[mu_k]; log r_nk = E[log pi_k] + E[log|Lambda_k|] / 2
    - tr(E[Lambda_k] E[(x_n - mu_k)(x_n - mu_k)^T]) / 2 (Winn & Bishop eq. (5))."""
    from scipy import special

    from vmp.inference.subsample import Minibatch

    rng = np.random.default_rng(0)
    x = 1.5 * rng.normal(size=(3, 3))[rng.integers(3, size=60)] + rng.normal(size=(60, 3))
    for row in rng.choice(60, 25, replace=False):
        x[row, rng.choice(3, size=rng.integers(1, 3), replace=False)] = np.nan
    model = factorized_mixture(x, 3)
    state = model.fit(iterations=5, method="stochastic", subsample=vmp.Minibatch("data", 20), seed=0,
                      progress=False).state
    engine = Engine(model)
    plan = Minibatch("data", 40, local_tol=1e-14, local_iterations=5000).prepare(engine, rng)
    draw = plan.draw(engine, rng)
    ctx, _, _ = steps.local_step(engine, plan, state, draw.ctx)
    (elog_pi,), (e_mu, e_mumu), (e_lam, elogdet) = (engine.nodes[k].family.moments(state.natural[k])
                                                     for k in ("pi", "mu", "Lambda"))
    obs = x[draw.rows]
    seen = ~np.isnan(obs)
    r = np.tile(special.softmax(elog_pi), (len(obs), 1))
    mean, cov = np.where(seen, obs, 0.0), np.zeros(obs.shape + obs.shape[-1:])
    for _ in range(5000):
        before = r.copy()
        for i, m in enumerate(~seen):
            if m.any():
                p, h = np.einsum("k,kab->ab", r[i], e_lam), np.einsum("k,kab,kb->a", r[i], e_lam, e_mu)
                cov[i][np.ix_(m, m)] = np.linalg.inv(p[np.ix_(m, m)])
                mean[i, m] = cov[i][np.ix_(m, m)] @ (h[m] - p[np.ix_(m, ~m)] @ obs[i, ~m])
        second = cov + np.einsum("na,nb->nab", mean, mean)
        quad = (np.einsum("kab,nab->nk", e_lam, second) - 2 * np.einsum("kab,na,kb->nk", e_lam, mean, e_mu)
                + np.einsum("kab,kab->k", e_lam, e_mumu))
        r = special.softmax(elog_pi + 0.5 * elogdet - 0.5 * quad, axis=1)
        if np.abs(r - before).max() < 1e-15:
            break
    assert (~seen).any(1).sum() >= 10 and ((r > 0.05) & (r < 0.95)).any(1).sum() >= 10
    np.testing.assert_allclose(ctx.overrides["z"][0], r, atol=1e-13)
    np.testing.assert_allclose(ctx.overrides["x"][0], mean, atol=1e-12)
