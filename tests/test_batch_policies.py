"""Policies in batch VMP (fit(method="batch", policies=...)): deterministic annealing and global
tempering weight the data plate's factors (Mandt et al., Variational Tempering, section 2.2 and
eq. (5), (9)); SVI+ needs a stochastic fit."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import digamma, logsumexp

import vmp

TAU, LAM0, ALPHA = 4.0, 0.5, 2.0


def _mixture(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(n) < 0.4, -1.5, 1.5) + rng.normal(size=n) / np.sqrt(TAU)
    with vmp.Model("tempered") as model:
        pi = vmp.Dirichlet("pi", np.full(2, ALPHA))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, LAM0)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], TAU, observed=x)
    return model, x


def _tempered_update(x, alpha, m, prec, temp):
    """One sweep by hand on the model with every data-plate factor (p(z_n | pi) and
    p(x_n | mu, z_n)) raised to 1/T: q(pi), q(mu), then q(z)."""
    s = 1.0 / temp
    elog_pi = digamma(alpha) - digamma(alpha.sum())
    elog_lik = 0.5 * np.log(TAU / (2 * np.pi)) - 0.5 * TAU * ((x[:, None] - m) ** 2 + 1.0 / prec)
    logits = s * (elog_pi + elog_lik)
    r = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    alpha = ALPHA + s * r.sum(0)
    prec = LAM0 + s * TAU * r.sum(0)
    m = s * TAU * (r * x[:, None]).sum(0) / prec
    return alpha, m, prec, r


@pytest.mark.parametrize("temp", [1.0, 3.0])
def test_fixed_temperature_converges_to_the_tempered_models_fixed_point(temp):
    model, x = _mixture()
    res = model.fit(policies=[vmp.Annealing([temp])], iterations=2000, tol=1e-15)
    assert res.converged and res.decrease is None
    alpha = model["pi"].natural[0] + 1.0
    prec = -2.0 * model["mu"].natural[1]
    m = model["mu"].natural[0] / prec
    r = model["z"].mean
    new_alpha, new_m, new_prec, new_r = _tempered_update(x, alpha, m, prec, temp)
    np.testing.assert_allclose(new_alpha, alpha, rtol=1e-7)
    np.testing.assert_allclose(new_m, m, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(new_prec, prec, rtol=1e-7)
    np.testing.assert_allclose(new_r, r, rtol=1e-6, atol=1e-9)
    if temp > 1:  # and it is not the untempered fixed point: q(z) is flatter
        cold, _ = _mixture()
        cold.fit(iterations=500, tol=1e-12)
        assert _entropy(r) > 10 * _entropy(cold["z"].mean)


def _entropy(r):
    r = np.clip(r, 1e-300, 1.0)
    return float(-np.mean(np.sum(r * np.log(r), axis=1)))


def test_annealing_at_one_changes_no_bit_of_a_batch_fit():
    a, _ = _mixture()
    b, _ = _mixture()
    ra, rb = a.fit(iterations=30), b.fit(iterations=30, policies=[vmp.Annealing([1.0])])
    for name in ("pi", "mu", "z"):
        for u, v in zip(a[name].natural, b[name].natural):
            assert np.array_equal(u, v)
    assert np.array_equal(ra.elbo, rb.elbo) and ra.iterations == rb.iterations


def test_annealing_to_one_ends_at_the_untempered_optimum_without_false_decreases():
    """While T falls the bound at T = 1 may fall: no ElboDecreaseWarning, no convergence before
    T = 1; afterwards plain batch VMP, which converges."""
    model, _ = _mixture()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = model.fit(policies=[vmp.Annealing.geometric(30.0, 25)], iterations=400, on_decrease="raise")
    assert res.converged and res.iterations > 25
    assert res.history["temperature"][-1] == 1.0 and res.history["temperature"][0] == pytest.approx(30.0)
    alpha = model["pi"].natural[0] + 1.0
    prec = -2.0 * model["mu"].natural[1]
    m = model["mu"].natural[0] / prec
    np.testing.assert_allclose(_tempered_update(_mixture()[1], alpha, m, prec, 1.0)[1], m, rtol=1e-4)


def test_global_tempering_in_batch_ascends_its_bound_and_follows_eq_9():
    """Batch VT is coordinate ascent on Mandt eq. (5): q(T) after the last sweep is eq. (9) from
    the full-data expected log joint, and the tempered objective never falls."""
    model, x = _mixture(n=10)
    temps = np.array([1.0, 1.05, 1.1])  # close temperatures: q(T) stays spread, its terms count
    log_c = np.array([0.0, 1.0, 2.0])  # any log C(T) defines an objective
    policy = vmp.Tempering(temps, log_partition=log_c)
    fit = model.batch(policies=[policy], iterations=60, on_decrease="raise", tol=1e-12)
    fit.run()
    st = fit.state.loop.policies[0]
    engine = fit.engine
    from vmp.graph.leaves import Context
    data = sum(float(f.elog(engine.factor_weight(f), cached=False, ctx=Context(state=fit.state)))
               for f in engine.factors.values() if f.child.name in ("x", "z"))
    logits = data / temps + np.log(1 / 3) - log_c
    np.testing.assert_allclose(st["r"], np.exp(logits - logsumexp(logits)), rtol=1e-9, atol=1e-300)
    values = fit.state.loop.objective.values
    assert len(values) == fit.t + 1 and np.all(np.diff(values) >= -1e-13 * np.abs(values[1:]))
    assert 0.01 < st["r"][0] < 0.99


def test_svi_plus_needs_a_stochastic_fit():
    model, _ = _mixture()
    with pytest.raises(vmp.VMPError, match="SVIPlus .*stochastic"):
        model.fit(policies=[vmp.SVIPlus(effective=5)])


def test_the_data_plate_is_named_when_the_observed_nodes_do_not_share_one():
    with vmp.Model("two") as model:
        m = vmp.Normal("m", 0.0, 1.0)
        with vmp.Plate("a", 3):
            vmp.Normal("x", m, 1.0, observed=np.zeros(3))
        with vmp.Plate("b", 4):
            vmp.Normal("y", m, 1.0, observed=np.ones(4))
    with pytest.raises(vmp.VMPError, match=r"plate=.*\['a', 'b'\]"):
        model.fit(policies=[vmp.Annealing([2.0])])
    res = model.fit(policies=[vmp.Annealing([2.0])], plate="b", iterations=50)
    prec = 1.0 + 3.0 + 4.0 / 2.0
    assert -2.0 * model["m"].natural[1] == pytest.approx(prec)
    assert model["m"].mean == pytest.approx(4.0 / 2.0 / prec)
    assert res.converged


def test_local_tempering_in_batch_heats_the_outlier():
    """Batch LVT updates every row's q(T_n) after each sweep (Mandt eq. (10)): the point far from
    both components gets the highest expected temperature."""
    model, x = _mixture(n=30)
    x = x.copy()
    x[7] = 9.0
    model.set_data("x", x)
    policy = vmp.LocalTempering([1.0, 2.0, 4.0, 8.0])
    fit = model.batch(policies=[policy], iterations=40)
    fit.run()
    r = fit.state.loop.policies[0]["r"]
    np.testing.assert_allclose(r.sum(axis=1), 1.0)
    expected_t = r @ policy.temperatures
    assert np.argmax(expected_t) == 7 and expected_t[7] > 2 * np.median(expected_t)
    assert len(fit.recorder.history()["temperature"]) == fit.t
