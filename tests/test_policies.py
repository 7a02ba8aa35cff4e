"""Message-weighting policies (SVI+, annealing) and divergence monitors."""
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


def _mixture(n=200, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    return factorized_mixture(centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2)), 3)


def test_svi_plus_weights_have_mean_one_and_the_right_spread():
    rng = np.random.default_rng(0)
    policy = vmp.SVIPlus(effective=10)
    rows = np.arange(50)
    draws = np.array([policy.weights(1, rows, rng, {})[1] for _ in range(4000)])
    assert np.allclose(draws.mean(axis=1), 1.0, atol=1e-12)
    expected = (50 / 10 - 1) * (1 - 1 / 50)
    assert draws.var() == pytest.approx(expected, rel=0.05)
    assert policy.weights(1, np.arange(8), rng, {}) == (None, None)  # M >= |S|: plain SVI
    assert np.mean(vmp.SVIPlus(effective=10).weights(1, rows, rng, {})[1] < 0) > 0.05


def _global_draws(engine, state, plan, node, policies, draws, rng):
    out = []
    for _ in range(draws):
        draw = plan.draw(engine, rng)
        ctx, _, _ = steps.local_step(engine, plan, state, draw.ctx)
        glob = None
        for p in policies:
            w = p.weights(1, draw.rows, rng, {})[1]
            glob = w if glob is None else glob * w
        out.append(steps.targets(engine, plan, state, replace(draw, ctx=ctx), [node], glob)[node.name][0].ravel())
    return np.array(out)


def test_svi_plus_gradient_is_as_noisy_as_a_minibatch_of_size_m():
    """Paisley Definition 1: |S| points weighted by SVI+ with effective size M give a natural
    gradient with the covariance of a plain minibatch of M points (same mean)."""
    model = _mixture()
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(1))
    for _ in range(5):
        state, _ = steps.sweep(engine, state, engine.update_order())
    mu = model["mu"]
    rng = np.random.default_rng(2)
    small, big = vmp.Minibatch("data", 10).prepare(engine, rng), vmp.Minibatch("data", 40).prepare(engine, rng)
    state = steps.optimize_locals(engine, big, state)
    plain = _global_draws(engine, state, small, mu, [], 1500, rng)
    plus = _global_draws(engine, state, big, mu, [vmp.SVIPlus(effective=10)], 1500, rng)
    ratio = plus.var(axis=0) / plain.var(axis=0)
    assert np.all((ratio > 0.75) & (ratio < 1.33)), ratio
    se = np.sqrt(plain.var(axis=0) / 1500)
    assert np.all(np.abs(plus.mean(axis=0) - plain.mean(axis=0)) < 6 * se)


def test_svi_plus_negative_weights_are_redrawn_not_applied():
    """With a tiny M most draws put negative weights on some points; a target that leaves the
    domain (negative Dirichlet counts, indefinite Wishart scale) is drawn again or skipped."""
    model = _mixture()
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 40),
                    policies=[vmp.SVIPlus(effective=1.5, redraws=2)], iterations=60, evaluate_every=20, seed=3)
    assert not res.diverged
    for name in ("pi", "mu", "Lambda"):
        assert np.all(model[name].family.valid(model[name].natural))
    assert any(e["action"] == "skip" for e in res.history["events"])
    assert len(res.history["effective_batch"]) == 60


def test_annealing_at_temperature_one_changes_no_bit():
    a, b = _mixture(), _mixture()
    ra = a.fit(method="stochastic", subsample=vmp.Minibatch("data", 20), iterations=20, seed=5)
    rb = b.fit(method="stochastic", subsample=vmp.Minibatch("data", 20), iterations=20, seed=5,
               policies=[vmp.Annealing([1.0])])
    for name in ("pi", "mu", "Lambda"):
        for x, y in zip(a[name].natural, b[name].natural):
            assert np.array_equal(x, y)
    assert np.array_equal(ra.elbo, rb.elbo)
    assert np.all(rb.history["temperature"] == 1.0)


def test_annealing_above_one_makes_every_q_more_entropic():
    """At T > 1 the data plate counts 1/T: every global q is broader and the local q(z) flatter
    than at T = 1 (components pinned by their priors, so both runs reach the same optimum)."""
    rng = np.random.default_rng(7)
    n = 300
    labels = rng.integers(2, size=n)
    y = np.where(labels == 0, -2.0, 2.0) + rng.normal(size=n)
    x = rng.normal(1.0, 0.7, size=n)

    def run(policies):
        with vmp.Model("annealed") as model:
            pi = vmp.Dirichlet("pi", np.ones(2))
            with vmp.Plate("K", 2):
                mu = vmp.Normal("mu", np.array([-2.0, 2.0]), 50.0)
            tau = vmp.Gamma("tau", 2.0, 1.0)
            m = vmp.Normal("m", 0.0, 0.5)
            with vmp.Plate("N", n):
                z = vmp.Categorical("z", pi)
                vmp.Normal("y", mu[z], 1.0, observed=y)
                vmp.Normal("x", m, tau, observed=x)
        model.fit(method="stochastic", subsample=vmp.Minibatch("N", 100), iterations=40, seed=6,
                  step=vmp.Constant(0.5), policies=policies, evaluate_every=0)
        return model
    cold, hot = run([]), run([vmp.Annealing(lambda t: 3.0)])
    for name in ("pi", "mu", "tau", "m"):
        assert np.sum(hot[name].entropy()) > np.sum(cold[name].entropy()), name
    h = {}
    for label, model, temp in (("cold", cold, 1.0), ("hot", hot, 3.0)):
        engine = Engine(model)
        plan = vmp.Minibatch("N", n).prepare(engine, np.random.default_rng(0))
        _, natural, _ = steps.local_step(engine, plan, model.state, plan.context(np.arange(n)),
                                         weight=None if temp == 1.0 else 1.0 / temp)
        h[label] = np.sum(model["z"].family.entropy(natural["z"]))
    assert h["hot"] > h["cold"]


def test_annealing_schedules_end_at_one():
    lin, geo = vmp.Annealing.linear(10.0, 5), vmp.Annealing.geometric(10.0, 5)
    assert [lin.temperature(t) for t in (1, 5, 9)] == [10.0, 1.0, 1.0]
    assert geo.temperature(1) == pytest.approx(10.0) and geo.temperature(5) == pytest.approx(1.0)
    assert vmp.Annealing([4.0, 2.0, 1.0]).temperature(7) == 1.0
    with pytest.raises(ValueError, match=">= 1"):
        vmp.Annealing([0.5]).temperature(1)


def _jacobi_small(k=40, n=500):
    """Option (b)'s own pitfall: y_n ~ N(a_1 + ... + a_K, 1) with K separate nodes stepped from one
    snapshot from their prior, so each absorbs the whole residual (a Jacobi step, amplification
    about rho_t K - 1: unstable while rho_t > 2/K, past step 120 for K = 40). Paquet's factorized
    u_mk no longer show it: option (b) sweeps a coupled node's slices (tests/test_stochastic.py)."""
    y = 3.5 + 0.5 * np.random.default_rng(0).normal(size=n)
    with vmp.Model("jacobi") as model:
        a = [vmp.Normal(f"a{i}", mean=0.0, precision=1.0) for i in range(k)]
        mean = a[0]
        for x in a[1:]:
            mean = mean + x
        with vmp.Plate("data", n):
            vmp.Normal("y", mean=mean, precision=1.0, observed=y)
    return model


def _jacobi_fit(model, monitors, iterations=60):
    return model.fit(method="stochastic", subsample=vmp.PerNode(children=1), update="global", init="prior",
                     step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=iterations, evaluate_every=1,
                     monitors=monitors, progress=False)


def test_monitor_stops_option_b_divergence_before_overflow():
    plain = _jacobi_fit(_jacobi_small(), [], iterations=5)
    assert plain.elbo[-1] < 1e3 * plain.elbo[0], "the unmonitored run should fall far below its start"
    model = _jacobi_small()
    res = _jacobi_fit(model, [vmp.ElboMonitor(patience=1, action="stop")])
    assert res.diverged and "stopped by a monitor" in res.message
    assert res.iterations < 5
    for name in ("a0", "a39"):
        for a in model[name].natural:
            assert np.all(np.isfinite(a)) and np.max(np.abs(a)) < 1e6


def test_backoff_turns_option_b_divergence_into_a_converging_run():
    model = _jacobi_small()
    res = _jacobi_fit(model, [vmp.DomainMonitor(action="backoff"), vmp.ElboMonitor(patience=1, action="backoff")])
    assert not res.diverged
    assert any(e["action"] == "backoff" for e in res.history["events"])
    elbo = res.elbo
    assert np.all(np.isfinite(elbo))
    assert elbo[-1] > elbo[0] and elbo[-1] > -1e4
    assert res.history["rho"]["a0"][-1] < vmp.RobbinsMonro(tau=0.0, kappa=0.6)(res.iterations)


def _noisy_mf(seed, m=60, n=80, k=5, r=3000):
    """Raw-rating-like data (offset 3.5) for Paquet's fully factorized model: with one child per
    node and rho1 = 1 the first step lowers the bound several-fold, then the fit converges."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = 3.5 + 0.5 * np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.5 * rng.normal(size=r)
    return matrix_factorization(rows, cols, y, k, noise_precision=1.0, n_users=m, n_items=n, factorized=True)


@pytest.mark.parametrize("update", ["per-node", "global"])
def test_elbo_monitor_lets_a_noisy_converging_fit_run(update):
    """PerNode(children=1), rho1 = 1, the bound evaluated every step: the first step lowers it 2
    to 12 fold and it then climbs with noisy falls (up to 4.4 standard deviations of the last 10
    changes over 300 steps of these seeds). ElboMonitor(patience=1, action='stop') took that
    first fall for a divergence (stopped at step 1 on every seed); it lets the fits converge."""
    for seed in range(3):
        res = _noisy_mf(seed).fit(method="stochastic", subsample=vmp.PerNode(children=1), update=update, seed=seed,
                                  step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=150,
                                  evaluate_every=1, monitors=[vmp.ElboMonitor(patience=1, action="stop")],
                                  progress=False)
        assert res.elbo[1] < 2 * res.elbo[0]
        assert not res.diverged and res.iterations == 150 and not res.history["events"], (seed, res.message)
        assert res.elbo[-1] > res.elbo[0]


def test_elbo_monitor_falls_count_beyond_the_noise_of_recent_changes():
    monitor = vmp.ElboMonitor(patience=1, tolerance=0.0)
    rng = np.random.default_rng(0)
    flat = list(-1000.0 + rng.normal(size=400))
    assert not any(monitor.check_elbo(t, flat[:t + 1], {})[0] for t in range(400))
    eager = vmp.ElboMonitor(patience=1, tolerance=0.0, noise=2.0)
    assert any(eager.check_elbo(t, flat[:t + 1], {})[0] for t in range(400))
    assert monitor.check_elbo(1, [-100.0, -900.0], {})[0] is None  # no noise estimate from one change
    assert monitor.check_elbo(2, [-100.0, -900.0, -1e5], {})[0] is None  # nor from a fall of one change
    assert "fell at 1" in monitor.check_elbo(3, [-100.0, -101.0, -101.5, -120.0], {})[0]
    assert "far below" in monitor.check_elbo(3, [-100.0, -101.0, -101.5, -300.0], {})[0]
    decline = list(-100.0 - 2.0 * np.arange(12) + 0.01 * rng.normal(size=12))  # steady: not noise
    assert "fell at 3" in vmp.ElboMonitor(patience=3).check_elbo(11, decline, {})[0]
    assert vmp.ElboMonitor(patience=3).check_elbo(11, decline[:4] + [-104.0] + decline[5:], {})[0] is None  # a jump
    problem = vmp.ElboMonitor(patience=1).check_elbo(5, flat[:5] + [flat[4] - 10.0], {})[0]
    assert "5 standard deviations" in problem
    with pytest.raises(vmp.VMPError, match="window"):
        vmp.ElboMonitor(window=1)


def test_domain_monitor_rejects_an_invalid_step():
    model = _mixture(n=30)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    lam = model["Lambda"]
    good = state.natural["Lambda"]
    bad = (-good[0], good[1])
    assert vmp.DomainMonitor().check_step(lam, good, bad, {})[0] is not None
    assert vmp.DomainMonitor().check_step(lam, good, good, {})[0] is None
    with pytest.raises(ValueError):
        vmp.DomainMonitor(action="panic")


def test_policies_need_a_minibatch():
    with pytest.raises(ValueError, match="Minibatch"):
        _mixture(n=30).fit(method="stochastic", subsample=vmp.PerNode(2), policies=[vmp.Annealing([2.0])])


def test_noise_monitor_flags_small_child_samples_with_large_steps():
    rng = np.random.default_rng(0)
    m, n, k, r = 60, 80, 5, 3000
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = 3.5 + 0.5 * np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.5 * rng.normal(size=r)

    def run(c):
        model = matrix_factorization(rows, cols, y, k, noise_precision=1.0, n_users=m, n_items=n)
        return model.fit(method="stochastic", subsample=vmp.PerNode(children=c), step=vmp.Constant(1.0),
                         iterations=60, evaluate_every=20, monitors=[vmp.NoiseMonitor(action="backoff")])
    noisy, calm = run(1), run(50)
    assert any(e["source"] == "NoiseMonitor" for e in noisy.history["events"])
    assert noisy.history["rho"]["u"][-1] < 1.0
    assert not calm.history["events"] and calm.history["rho"]["u"][-1] == 1.0


def test_elbo_monitor_every_sets_the_evaluation_rhythm():
    res = _mixture(n=60).fit(method="stochastic", subsample=vmp.Minibatch("data", 10), iterations=6,
                             evaluate_every=0, monitors=[vmp.ElboMonitor(every=2, action="warn")])
    assert list(res.history["evaluations"]["iteration"]) == [0, 2, 4, 6]
    with pytest.raises(ValueError, match="every"):
        vmp.ElboMonitor(every=0)


def test_elbo_monitor_flags_a_bound_far_below_its_best():
    monitor = vmp.ElboMonitor(patience=3)
    assert monitor.check_elbo(3, [-100.0, -90.0, -4e4, -95.0], {})[0] is None
    problem, _ = monitor.check_elbo(3, [-100.0, -90.0, -4e4, -130.0], {})
    assert "far below its best -90" in problem
    assert monitor.check_elbo(2, [-100.0, -101.0, -100.5], {})[0] is None
    with pytest.raises(vmp.VMPError, match="drop"):
        vmp.ElboMonitor(drop=0)


def _caught(fn):
    import warnings as w

    from vmp.inference.loop import DivergenceWarning

    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        result = fn()
    return result, [str(c.message) for c in caught if issubclass(c.category, DivergenceWarning)]


def test_a_monitor_warns_once_per_node_for_a_few_nodes_and_counts_the_repeats():
    """NoiseMonitor(threshold tiny, action='warn') finds each of 6 nodes too noisy every 2 steps:
    one DivergenceWarning for each of the first alerts.NODES = 3 nodes, every finding an event; a
    resumed fit does not warn again (seen to fail warning at every finding: 60 warnings)."""
    from vmp.inference.alerts import NODES

    model = _jacobi_small(k=6, n=50)
    kw = dict(method="stochastic", subsample=vmp.PerNode(children=5), seed=0, progress=False,
              monitors=[vmp.NoiseMonitor(window=2, threshold=1e-12, action="warn")])
    first, found = _caught(lambda: model.fit(iterations=20, **kw))
    nodes = [e["node"] for e in first.history["events"] if e["source"] == "NoiseMonitor"]
    assert len(set(nodes)) == 6 and len(nodes) >= 30
    assert len(found) == NODES == 3 and all("warns once about node" in m for m in found)
    more, again = _caught(lambda: model.fit(iterations=40, resume=first, **kw))
    assert not again
    assert len([e for e in more.history["events"] if e["source"] == "NoiseMonitor"]) > len(nodes)


def test_a_diverging_fit_warns_twice_and_says_it_diverged():
    """Option (b)'s Jacobi divergence with the default monitors (ElboMonitor warns): the bound
    falls below 1e20 times its start within 40 evaluations. One warning at the first finding, one at the end that
    the fit diverged with the count; result.diverged (seen to fail with a warning at every
    finding, 39, and without the end's verdict: diverged False)."""
    model = _jacobi_small(k=20, n=100)
    result, found = _caught(lambda: model.fit(
        method="stochastic", subsample=vmp.PerNode(children=1), update="global", init="prior",
        step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=1.0), iterations=40, evaluate_every=1, progress=False))
    events = [e for e in result.history["events"] if e["source"] == "ElboMonitor"]
    assert len(events) > 30 and result.elbo[-1] < 1e20 * result.elbo[0]
    assert len(found) == 2 and "far below its best" in found[0]
    assert "the fit diverged at iteration 40" in found[1] and f"warned {len(events)} times" in found[1]
    assert result.diverged and "diverging" in result.message
