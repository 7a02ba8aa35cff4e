"""Mistakes a new user makes raise a vmp error (a VMPError) naming the node, never a raw numpy or
Python error (issue 15)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.graph.expressions import Scaled
from tests.helpers import factorized_mixture


def _gamma(name="a"):
    return vmp.Gamma(name, shape=1.0, rate=1.0)


@pytest.mark.parametrize("declare,words", [
    (lambda: vmp.Gamma("b", shape=_gamma(), rate=1.0), ["'b'", "shape", "rate <- Gamma"]),
    (lambda: vmp.Wishart("W", dof=_gamma(), scale=np.eye(2)), ["'W'", "dof", "constants only"]),
    (lambda: vmp.Wishart("W", dof=3.0, scale=_gamma()), ["'W'", "scale"]),
    (lambda: vmp.Dirichlet("d", alpha=_gamma()), ["'d'", "alpha", "constants only"]),
], ids=["gamma-shape", "wishart-dof", "wishart-scale", "dirichlet-alpha"])
def test_a_node_where_only_a_constant_is_conjugate(declare, words):
    with vmp.Model("m"), pytest.raises(vmp.ConjugacyError) as info:
        declare()
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("scale", [lambda t: t * 2.0, lambda t: 2.0 * t, lambda t: t / 0.5,
                                   lambda t: np.float64(2.0) * t, lambda t: t * np.array(2.0)],
                         ids=["right", "left", "divide", "numpy-scalar", "0-d-array"])
def test_scaling_by_a_positive_number_from_either_side(scale):
    with vmp.Model("m"):
        tau = _gamma("tau")
        scaled = scale(tau)
        x = vmp.Normal("x", mean=0.0, precision=scaled, observed=1.0)
    assert scaled.scale == pytest.approx(2.0) and x.parents["precision"] is scaled


@pytest.mark.parametrize("scale,words", [
    (lambda t: np.arange(5) * t, ["shape (5,)", "'tau'", "one positive number"]),
    (lambda t: t * np.arange(5), ["shape (5,)", "'tau'"]),
    (lambda t: t / 0, ["'tau' / 0", "positive finite"]),
    (lambda t: t * -1.0, ["'tau'", "positive finite"]),
    (lambda t: t * t, ["both sides", "'tau'"]),
    (lambda t: t * "2", ["'tau'", "one positive number"]),
])
def test_scaling_refused_with_a_graph_error(scale, words):
    with vmp.Model("m"):
        tau = _gamma("tau")
        with pytest.raises(vmp.GraphError) as info:
            scale(tau)
    for w in words:
        assert w in str(info.value)


def test_string_data_is_a_data_error_not_nan():
    with vmp.Model("m"), vmp.Plate("d", 3), pytest.raises(vmp.DataError) as info:
        vmp.Normal("x", mean=0.0, precision=1.0, observed=np.array(["1.0", "a", "b"]))
    message = str(info.value)
    assert "'x'" in message and "strings" in message and "NaN" not in message and "mask" not in message


def test_a_parent_from_another_model_is_refused_at_declaration():
    with vmp.Model("first"):
        a = _gamma()
    with vmp.Model("second"), pytest.raises(vmp.GraphError) as info:
        vmp.Normal("x", mean=0.0, precision=2.0 * a, observed=1.0)
    assert all(w in str(info.value) for w in ("'x'", "'a'", "'first'"))


def test_elbo_before_a_fit():
    with vmp.Model("m") as model:
        vmp.Normal("x", mean=0.0, precision=_gamma(), observed=1.0)
    with pytest.raises(vmp.GraphError, match=r"model.fit\(\) before model.elbo\(\)"):
        model.elbo()
    model.fit(iterations=5)
    assert np.isfinite(model.elbo())


@pytest.mark.parametrize("make", [lambda: vmp.Minibatch("data", 0), lambda: vmp.Minibatch("data", 5, holdout=1.5),
                                  lambda: vmp.PerNode(children=0), lambda: vmp.RobbinsMonro(tau=-1.0),
                                  lambda: vmp.RobbinsMonro(kappa=2.0), lambda: vmp.Constant(2.0)],
                         ids=["minibatch", "holdout", "per-node", "tau", "kappa", "constant"])
def test_inference_options_raise_option_errors(make):
    with pytest.raises(vmp.OptionError) as info:
        make()
    assert isinstance(info.value, vmp.VMPError)


@pytest.mark.parametrize("iterations", [-1, 2.5, True, "3"])
def test_fit_iterations_must_be_a_count(iterations):
    with vmp.Model("m") as model:
        vmp.Normal("x", mean=0.0, precision=_gamma(), observed=1.0)
    with pytest.raises(vmp.OptionError, match="iterations"):
        model.fit(iterations=iterations)


@pytest.mark.parametrize("declare,role", [
    (lambda m: vmp.Gaussian("x", mean=np.zeros(2), precision=m, observed=np.zeros(2)), "precision"),
    (lambda m: vmp.Wishart("W", dof=3.0, scale=m), "scale"),
], ids=["gaussian-precision", "wishart-scale"])
def test_a_non_symmetric_matrix_is_refused(declare, role):
    with vmp.Model("m"), pytest.raises(vmp.HyperparameterError, match=f"{role} is not symmetric"):
        declare(np.array([[1.0, 0.5], [0.0, 1.0]]))
    with vmp.Model("m"):  # rounding from an inverse is not asymmetry
        declare(np.linalg.inv(np.array([[2.0, 0.3], [0.3, 1.0]])))


def test_glue_of_a_scalable_node_scales_and_other_glue_does_not():
    """A gated or gathered Gamma is scaled by a constant (c * tau[z]); a gated Normal or a dot is
    a linear map instead (c * mu[z], mu[z] / c); a gate is not scaled by an array or by zero, and a
    joint node is neither."""
    from vmp.graph.linear import Linear

    with vmp.Model("m"):
        with vmp.Plate("k", 2):
            tau = _gamma("tau")
            mu = vmp.Normal("mu", 0.0, 1.0)
            theta = vmp.NormalGamma("theta", 0.0, 1.0, 2.0, 2.0)
        z = vmp.Categorical("z", np.array([0.5, 0.5]))
        for scale in (lambda e: 2.0 * e, lambda e: e * 2.0, lambda e: e / 0.5):
            scaled = scale(tau[z])
            assert isinstance(scaled, Scaled) and scaled.scale == 2.0 and scaled.node.name == "tau[z]"
        for scale in (lambda e: 2.0 * e, lambda e: e / 0.5):
            assert isinstance(scale(mu[z]), Linear)
        assert isinstance(2.0 * vmp.dot(mu, mu), Linear)
        for scale in (lambda e: 2.0 * e, lambda e: e / 2.0):
            with pytest.raises(vmp.GraphError, match="only Gamma and Wishart nodes can be scaled"):
                scale(theta[z])
        with pytest.raises(vmp.GraphError, match="one positive number"):
            np.arange(2.0) * tau[z]
        with pytest.raises(vmp.GraphError, match="positive finite"):
            0.0 * tau[z]


def test_ragged_observed_data_is_a_data_error_naming_the_node():
    with vmp.Model("m"), vmp.Plate("n", 2), pytest.raises(vmp.DataError) as info:
        vmp.Gaussian("y", mean=np.zeros(2), precision=np.eye(2), observed=[[1.0, 2.0], [3.0]])
    assert "'y'" in str(info.value) and "ragged" in str(info.value)


def test_a_minibatch_larger_than_its_plate_is_an_option_error():
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("data", 3):
            vmp.Normal("y", mu, 1.0, observed=[1.0, 2.0, 3.0])
    with pytest.raises(vmp.OptionError, match=r"size 10 exceeds plate 'data' \(3"):
        model.fit(subsample=vmp.Minibatch("data", 10), iterations=3)


def test_indexing_a_data_input_says_what_can_be_gated():
    with vmp.Model("m"):
        table = vmp.Data("B", np.full((2, 3), 1 / 3))
        with vmp.Plate("n", 4):
            z = vmp.Categorical("z", np.array([0.5, 0.5]))
            with pytest.raises(vmp.GraphError) as info:
                table[z]
    assert "'B'" in str(info.value) and "observed node" in str(info.value)


@pytest.mark.parametrize("declare,role", [
    (lambda: vmp.Normal("y", vmp.Data("m", np.zeros(3)), 1.0, observed=np.ones(3)), "mean"),
    (lambda: vmp.Normal("y", 0.0, vmp.Data("p", np.ones(3)), observed=np.ones(3)), "precision"),
    (lambda: vmp.Normal("y", 0.0, 1.0, observed=vmp.Data("o", np.ones(3))), "observed data"),
], ids=["mean", "precision", "observed"])
def test_a_data_input_as_a_nodes_argument_says_where_data_go(declare, role):
    """vmp.Data enters through dot(w, X), as gather rows or as weights; elsewhere a GraphError naming the
    node, the role and the data (was numpy's 'setting an array element with a sequence')."""
    with vmp.Model("m"), vmp.Plate("n", 3), pytest.raises(vmp.GraphError) as info:
        declare()
    assert all(w in str(info.value) for w in ("'y'", role, "vmp.dot"))


def _mixture():
    x = np.concatenate([np.zeros((10, 2)), np.full((10, 2), 5.0)]) + np.random.default_rng(0).normal(size=(20, 2))
    return factorized_mixture(x, 3)


@pytest.mark.parametrize("options,error,words", [
    ({"iterationz": 5}, vmp.OptionError, ["iterationz", "tol", "subsample"]),
    ({"seed": "a"}, vmp.OptionError, ["seed", "'a'"]),
    ({"seed": -1}, vmp.OptionError, ["seed", "non-negative", "-1"]),
    ({"seed": np.array([3])}, vmp.OptionError, ["seed"]),
    ({"seed": True}, vmp.OptionError, ["seed", "True"]),
    ({"executor": "dask"}, vmp.OptionError, ["executor", "DaskExecutor", "'dask'"]),
    ({"init": {"z": np.full((20, 2), 0.5)}}, vmp.ShapeError, ["'z'", "(20, 2)", "(20, 3)"]),
    ({"init": {"z": np.full((20, 3), -1.0)}}, vmp.DataError, ["'z'", "domain"]),
], ids=["unknown-option", "seed", "seed-negative", "seed-1d", "seed-bool", "executor-string", "init-shape", "init-domain"])
def test_fit_options_a_user_gets_wrong(options, error, words):
    with pytest.raises(error) as info:
        _mixture().fit(iterations=3, **options)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_integer_seeds_of_any_integer_type_give_the_same_fit():
    """seed= 3, numpy's int64(3) and uint8(3), and a 0-d integer array (accepted before the
    seed check) are the same seed: the same bits."""
    fits = [_mixture().fit(iterations=4, seed=s, progress=False) for s in (3, np.int64(3), np.uint8(3), np.array(3))]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.elbo, fits[0].elbo)
        np.testing.assert_array_equal(other.state.natural["mu"][0], fits[0].state.natural["mu"][0])
