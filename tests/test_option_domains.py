"""Every option of a fit and every argument of its option objects (subsamplers, schedules,
policies, monitors) is checked where it is given: an OptionError naming the argument and its
domain, never a raw Python error later in the fit, never nonsense accepted silently."""
from __future__ import annotations

import numpy as np
import pytest

import vmp

NAN = float("nan")


def _model():
    with vmp.Model("normal_gamma") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", 6):
            vmp.Normal("x", mu, tau, observed=np.linspace(-1.0, 1.0, 6))
    return model


@pytest.mark.parametrize("make,words", [
    (lambda: vmp.Minibatch("data", "a"), ["Minibatch(size=)", "'a'"]),
    (lambda: vmp.Minibatch("data", NAN), ["Minibatch(size=)", "nan"]),
    (lambda: vmp.Minibatch("data", 4, local_iterations=0), ["Minibatch(local_iterations=)", ">= 1", "0"]),
    (lambda: vmp.Minibatch("data", 4, local_iterations=2.5), ["Minibatch(local_iterations=)", "2.5"]),
    (lambda: vmp.Minibatch("data", 4, local_tol=NAN), ["Minibatch(local_tol=)", "nan"]),
    (lambda: vmp.Minibatch("data", 4, local_tol=-1.0), ["Minibatch(local_tol=)", "-1.0"]),
    (lambda: vmp.Minibatch("data", 4, holdout="a"), ["Minibatch(holdout=)", "[0, 1)", "'a'"]),
    (lambda: vmp.Minibatch("data", 4, holdout=NAN), ["Minibatch(holdout=)", "nan"]),
    (lambda: vmp.Minibatch(3, 4), ["Minibatch(plate=)", "name", "3"]),
    (lambda: vmp.PerNode(children="a"), ["PerNode(children=)", "'a'"]),
    (lambda: vmp.RobbinsMonro(tau="a"), ["RobbinsMonro(tau=)", "'a'"]),
    (lambda: vmp.RobbinsMonro(tau=NAN), ["RobbinsMonro(tau=)", "nan"]),
    (lambda: vmp.RobbinsMonro(kappa=NAN), ["RobbinsMonro(kappa=)", "nan"]),
    (lambda: vmp.Constant("a"), ["Constant(rho=)", "'a'"]),
    (lambda: vmp.Warmup(-1), ["Warmup(iterations=)", ">= 0", "-1"]),
    (lambda: vmp.Warmup(2.5), ["Warmup(iterations=)", "2.5"]),
    (lambda: vmp.Warmup(2, then=0.5), ["Warmup(then=)", "schedule", "0.5"]),
    (lambda: vmp.SVIPlus(effective=-1), ["SVIPlus(effective=)", "-1"]),
    (lambda: vmp.SVIPlus(effective=4, redraws="a"), ["SVIPlus(redraws=)", "'a'"]),
    (lambda: vmp.Annealing([2.0, 0.5]), ["Annealing", ">= 1", "0.5"]),
    (lambda: vmp.Annealing("hot"), ["Annealing(schedule=)", "'hot'"]),
    (lambda: vmp.Annealing.linear(0.5, 10), ["Annealing.linear(start=)", ">= 1", "0.5"]),
    (lambda: vmp.Annealing.linear(5.0, 0), ["Annealing.linear(steps=)", ">= 1", "0"]),
    (lambda: vmp.Tempering([1.0, 0.5]), ["Tempering(temperatures=)", "increasing"]),
    (lambda: vmp.Tempering([1.0, 2.0], prior=[0.5, -0.5]), ["Tempering(prior=)", "positive"]),
    (lambda: vmp.Tempering([1.0, 2.0], samples=0), ["Tempering(samples=)", ">= 1"]),
    (lambda: vmp.Tempering([1.0, 2.0], log_partition=[0.0]), ["Tempering(log_partition=)", "2"]),
    (lambda: vmp.LocalTempering([1.0, 2.0], prior=[1.0]), ["LocalTempering(prior=)", "2"]),
    (lambda: vmp.LocalTempering([1.0, 2.0], importance=-1), ["LocalTempering(importance=)", ">= 0"]),
    (lambda: vmp.DomainMonitor(action="explode"), ["DomainMonitor(action=)", "'explode'", "backoff"]),
    (lambda: vmp.ElboMonitor(factor="a"), ["ElboMonitor(factor=)", "'a'"]),
    (lambda: vmp.ElboMonitor(patience=0), ["ElboMonitor(patience=)", ">= 1"]),
    (lambda: vmp.ElboMonitor(tolerance=NAN), ["ElboMonitor(tolerance=)", "nan"]),
    (lambda: vmp.NoiseMonitor(window="a"), ["NoiseMonitor(window=)", "'a'"]),
    (lambda: vmp.NoiseMonitor(threshold=NAN), ["NoiseMonitor(threshold=)", "nan"]),
], ids=lambda v: None)
def test_option_objects_check_their_arguments(make, words):
    with pytest.raises(vmp.OptionError) as info:
        make()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


@pytest.mark.parametrize("options,words", [
    (dict(tol=NAN), ["tol=", "nan"]),
    (dict(tol="small"), ["tol=", "'small'"]),
    (dict(decrease_tol=NAN), ["decrease_tol=", ">= 0", "nan"]),
    (dict(decrease_tol=-1.0), ["decrease_tol=", "-1.0"]),
    (dict(plate=3), ["plate=", "3"]),
    (dict(callback=3), ["callback=", "function", "3"]),
    (dict(progress="yes"), ["progress=", "'yes'"]),
    (dict(init=3), ["init=", "'prior'", "3"]),
    (dict(checkpoint=3), ["checkpoint=", "path", "3"]),
    (dict(resume=3), ["resume=", "path", "3"]),
    (dict(policies=["svi+"]), ["policies=", "'svi+'"]),
    (dict(policies="svi+"), ["policies=", "'svi+'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), monitors=["x"]), ["monitors=", "'x'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), monitors="x"), ["monitors=", "'x'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), tol="small"), ["tol=", "'small'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), evaluate_every=-1), ["evaluate_every=", "-1"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), step=0.5), ["step=", "schedule", "0.5"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 2), step={"nobody": vmp.Constant(0.5)}),
     ["step=", "'nobody'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 5, holdout=0.5)),
     ["Minibatch", "size 5", "3 training"]),
], ids=lambda v: None)
def test_fit_options_are_checked_before_any_step(options, words):
    calls = []
    with pytest.raises(vmp.OptionError) as info:
        _model().fit(**{"iterations": 3, "progress": False, "callback": lambda t, fit: calls.append(t), **options})
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert calls == []


def test_a_callable_callback_and_a_function_step_are_accepted():
    seen = []
    result = _model().fit(method="stochastic", subsample=vmp.Minibatch("data", 2), step=lambda t: 0.5,
                          iterations=3, callback=lambda t, fit: seen.append(t), progress=False)
    assert seen == [1, 2, 3] and result.iterations == 3
