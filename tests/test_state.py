"""The state of a fit as one value: checkpoint and resume, interrupts, pickling, pure steps."""
from __future__ import annotations

import copy
import os
import pickle
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import vmp
from tests import state_cases
from tests.golden_fits import _blobs
from models import gaussian_mixture
from vmp.factors import terms
from vmp.inference import State, steps

ROOT = Path(__file__).resolve().parents[1]


def _same_natural(a: State, b: State) -> None:
    assert a.natural.keys() == b.natural.keys()
    for name in a.natural:
        for x, y in zip(a.natural[name], b.natural[name]):
            np.testing.assert_array_equal(x, y, err_msg=name)


def _same_history(a: dict, b: dict) -> None:
    keys = set(a) - {"step_seconds"}
    assert keys == set(b) - {"step_seconds"}
    for key in keys:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            assert x.keys() == y.keys(), key
            for k in x:
                np.testing.assert_array_equal(x[k], y[k], err_msg=f"{key}/{k}")
        elif key == "events":
            assert x == y
        else:
            np.testing.assert_array_equal(x, y, err_msg=key)


@pytest.fixture(scope="module")
def resumed_fits(tmp_path_factory) -> dict:
    """Each case's checkpoint after N steps, resumed to 2 N steps by one fresh process (which
    computed none of the first halves): name -> (the first half's result, the resumed one)."""
    folder = tmp_path_factory.mktemp("resume")
    halves, triples = {}, []
    for name in sorted(state_cases.CASES):
        _, halves[name] = state_cases.fit(name, state_cases.N, checkpoint=folder / f"{name}-half.npz")
        triples += [name, str(folder / f"{name}-half.npz"), str(folder / f"{name}-resumed.npz")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "tests.state_cases", "resume", *triples], cwd=ROOT, env=env, check=True,
                   timeout=300)
    return {name: (half, vmp.load(folder / f"{name}-resumed.npz")) for name, half in halves.items()}


@pytest.mark.parametrize("name", sorted(state_cases.CASES))
def test_resume_in_a_fresh_process_gives_the_same_bits(name, resumed_fits):
    n = state_cases.N
    _, whole = state_cases.fit(name, 2 * n)
    half, resumed = resumed_fits[name]
    _same_natural(whole.state, resumed.state)
    _same_history(whole.history, resumed.history)
    _same_policies(whole.state, resumed.state)
    np.testing.assert_array_equal(whole.elbo, resumed.elbo)
    assert resumed.iterations == 2 * n and half.iterations == n


def _same_policies(a: State, b: State) -> None:
    """The policies' state (q(T), log C(T), per-datapoint r_n, the sampler's counter) bit for bit."""
    assert len(a.loop.policies) == len(b.loop.policies)
    for x, y in zip(a.loop.policies, b.loop.policies):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_resume_from_a_result_in_process_and_by_hand():
    _, whole = state_cases.fit("minibatch_svi_plus", 10)
    _, half = state_cases.fit("minibatch_svi_plus", 4)
    model, resumed = state_cases.fit("minibatch_svi_plus", 10, resume=half)
    _same_natural(whole.state, resumed.state)
    _same_history(whole.history, resumed.history)
    build, kwargs = state_cases.CASES["minibatch_svi_plus"]
    fit = build().stochastic(**{k: v for k, v in kwargs.items() if k != "method"}, iterations=10, progress=False)
    fit.run(3)
    for _ in range(7):
        fit.step()
        if fit.t % kwargs["evaluate_every"] == 0:
            fit.evaluate()
    _same_natural(whole.state, fit.result().state)


def test_interrupt_saves_a_checkpoint_that_resumes_to_the_same_bits(tmp_path):
    """SIGINT to a stochastic fit in a subprocess: it stops after the current step, writes its
    checkpoint and reports the interruption; resuming reaches the uninterrupted run's bits."""
    ckpt = tmp_path / "run.npz"
    script = f"""
import sys, time
from tests import state_cases
def slow(t, fit):
    if t == 3:
        print("ready", flush=True)
    time.sleep(0.05)
_, result = state_cases.fit("minibatch_local_tempering", 400, checkpoint=r"{ckpt}", callback=slow)
print("interrupted" if result.interrupted else "finished", result.iterations, flush=True)
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    word, steps_done = out.split()
    assert word == "interrupted" and 3 <= int(steps_done) < 400
    saved = vmp.load(ckpt)
    assert saved.interrupted and saved.iterations == int(steps_done)
    total = int(steps_done) + 4
    _, whole = state_cases.fit("minibatch_local_tempering", total)
    _, resumed = state_cases.fit("minibatch_local_tempering", total, resume=ckpt)
    _same_natural(whole.state, resumed.state)
    _same_history(whole.history, resumed.history)


@pytest.mark.parametrize("fitted", [False, True])
def test_pickled_and_deep_copied_models_fit_to_the_same_bits(fitted):
    def build():
        model = gaussian_mixture(_blobs(60), 3)
        if fitted:
            model.fit(iterations=3, tol=0.0)
        return model
    original, pickled, copied = build(), pickle.loads(pickle.dumps(build())), copy.deepcopy(build())
    kwargs = dict(method="stochastic", subsample=vmp.Minibatch("data", 10), iterations=5, evaluate_every=2,
                  seed=3, progress=False)
    results = [m.fit(**kwargs) for m in (original, pickled, copied)]
    for r in results[1:]:
        _same_natural(results[0].state, r.state)
        np.testing.assert_array_equal(results[0].elbo, r.elbo)


def test_steps_read_only_the_state_they_are_given():
    """A minibatch's local step and global targets computed from a copied state equal the serial
    loop's step, while the model's own state is something else entirely."""
    model = gaussian_mixture(_blobs(80), 3)
    fit = model.stochastic(subsample=vmp.Minibatch("data", 12), update="global", step=vmp.Constant(0.5),
                           iterations=10, seed=1, progress=False, monitors=[])
    fit.run(3)
    engine, plan = fit.engine, fit.plan
    start = fit.state.copy()
    rng = copy.deepcopy(fit.rng)
    draw = plan.draw(engine, rng)
    ctx, _, _ = steps.local_step(engine, plan, start, draw.ctx)
    targets = steps.targets(engine, plan, start, replace(draw, ctx=ctx), plan.stepped)
    other = gaussian_mixture(_blobs(80, seed=9), 3).fit(iterations=2).state
    model.state = other
    fit.step()
    assert model.state is fit.state
    for node in plan.stepped:
        expected = engine.blend(start.natural[node.name], targets[node.name], 0.5)
        for x, y in zip(expected, fit.state.natural[node.name]):
            np.testing.assert_array_equal(x, y)
    model.state = other
    again = steps.targets(engine, plan, start, replace(draw, ctx=ctx), plan.stepped)
    assert model.state is other
    for name in targets:
        for x, y in zip(targets[name], again[name]):
            np.testing.assert_array_equal(x, y)


def test_state_save_load_copy_and_equality(tmp_path):
    model = gaussian_mixture(_blobs(40), 2)
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 8), iterations=4, seed=0,
                       policies=[vmp.LocalTempering([1.0, 3.0])], progress=False)
    state = result.state
    assert state.copy() == state and state.copy() is not state
    state.save(tmp_path / "s.npz", note={"a": [1, 2.5, None]})
    back, docs = State.load(tmp_path / "s.npz", {n.name: n.family for n in model if not n.observed})
    assert back == state and docs == {"note": {"a": [1, 2.5, None]}}
    changed = back.updated({"pi": (tuple(a + 1.0 for a in back.natural["pi"]), back.moments["pi"])})
    assert changed != state
    with np.load(tmp_path / "s.npz", allow_pickle=False) as data:
        assert data.files  # a plain npz: no pickled objects


def test_one_minibatch_object_serves_two_models_with_local_tempering():
    mb = vmp.Minibatch("data", 10)
    for seed in (0, 1):
        res = gaussian_mixture(_blobs(50, seed), 2).fit(method="stochastic", subsample=mb, iterations=3,
                                                        policies=[vmp.LocalTempering([1.0, 2.0])], progress=False)
        assert len(res.history["temperature"]) == 3


def test_warn_never_marks_a_fit_diverged_and_events_name_their_source():
    rng = np.random.default_rng(0)
    m, n, k, r = 40, 50, 4, 1500
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = 0.5 * np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.5 * rng.normal(size=r)
    from models import matrix_factorization

    model = matrix_factorization(rows, cols, y, k, noise_precision=1.0, n_users=m, n_items=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.DivergenceWarning)
        res = model.fit(method="stochastic", subsample=vmp.PerNode(children=1), step=vmp.Constant(1.0),
                        iterations=30, evaluate_every=10, monitors=[vmp.NoiseMonitor(window=3, action="warn")],
                        progress=False)
    assert any(e["source"] == "NoiseMonitor" and e["action"] == "warn" for e in res.history["events"])
    assert not res.diverged
    svi = gaussian_mixture(_blobs(60), 3).fit(method="stochastic", subsample=vmp.Minibatch("data", 30),
                                              policies=[vmp.SVIPlus(effective=1.5, redraws=1)], iterations=20,
                                              progress=False)
    skips = [e for e in svi.history["events"] if e["action"] == "skip"]
    assert skips and all(e["source"] == "SVIPlus" for e in skips)


def test_contraction_plans_are_bounded():
    a = np.ones(3)
    for n in range(terms.PLAN_CACHE_SIZE + 50):
        terms.contract("a,ab->b", a, np.ones((3, n + 1)))
    assert len(terms.PLANS.plans) <= terms.PLAN_CACHE_SIZE


def test_fit_options_are_checked():
    model = gaussian_mixture(_blobs(30), 2)
    with pytest.raises(vmp.VMPError, match="decrease_tol"):
        model.fit(method="stochastic", subsample=vmp.PerNode(2), decrease_tol=1e-3)
    with pytest.raises(vmp.VMPError, match="tol="):
        model.fit(method="stochastic", subsample=vmp.PerNode(2), tol=-1.0)
    with pytest.raises(vmp.VMPError, match="subsample"):
        model.fit(method="batch", subsample=vmp.PerNode(2))
    with pytest.raises(vmp.VMPError, match="iterations"):
        model.fit(iterations=-1)
    with pytest.raises(vmp.VMPError, match="resume"):
        gaussian_mixture(_blobs(30), 3).fit(resume=model.fit(iterations=2))


def test_n_init_keeps_the_best_of_several_seeds():
    x = _blobs(150)
    singles = [gaussian_mixture(x, 4).fit(iterations=30, seed=s, progress=False).final_elbo for s in (3, 4, 5)]
    model = gaussian_mixture(x, 4)
    best = model.fit(iterations=30, seed=3, n_init=3, progress=False)
    assert best.extra["n_init_bounds"] == singles
    assert best.final_elbo == max(singles) and model.elbo() == pytest.approx(max(singles), rel=1e-12)
    with pytest.raises(vmp.VMPError, match="n_init"):
        model.fit(n_init=0)


@pytest.mark.parametrize("options", [
    dict(method="batch", policies=[vmp.Annealing.linear(3.0, 4)]),
    dict(method="stochastic", subsample=vmp.Minibatch("data", 12), policies=[vmp.SVIPlus(effective=4)]),
    dict(method="stochastic", subsample=vmp.PerNode(children=3), update="global",
         monitors=[vmp.NoiseMonitor(window=2, action="backoff")]),
], ids=["batch", "minibatch", "pernode"])
def test_a_step_is_a_function_of_its_state_and_draw(options):
    """method.step(engine, state, draw) -> (state, info) leaves the State it was given as it was
    (its copy compares equal after the step) and gives the same next State from the same
    (state, draw); Fit.step commits that State and records its info."""
    fit = gaussian_mixture(_blobs(60), 3).stochastic(**{k: v for k, v in options.items() if k != "method"}) \
        if options["method"] == "stochastic" else gaussian_mixture(_blobs(60), 3).batch(policies=options["policies"])
    fit.run(2)
    engine, method, state = fit.engine, fit.method, fit.state
    before = state.copy()
    draw = method.draw(engine, state, copy.deepcopy(fit.rng))
    again = replace(draw, rng=copy.deepcopy(draw.rng))
    first, info = method.step(engine, state, draw)
    second, _ = method.step(engine, state, again)
    assert state == before and first is not state
    assert first == second and first.step == state.step + 1
    assert set(info.rho) == {n.name for n in method.plan.stepped} and info.stopped is None and info.error is None
    recorded = fit.step()
    assert fit.state.step == first.step and recorded.change.keys() == info.change.keys()
