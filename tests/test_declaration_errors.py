"""Bad input at declaration raises a vmp error naming the node, plate or option and what is
wrong (issue 29's list of raw errors and silently accepted nonsense); valid input next to it
still declares and fits."""
from __future__ import annotations

import numpy as np
import pytest

import vmp


@pytest.mark.parametrize("size", [None, float("nan"), float("inf"), 0, -2, 2.5, "3", True, 1j],
                         ids=["None", "nan", "inf", "zero", "negative", "fraction", "string", "bool", "complex"])
def test_a_plate_size_that_is_not_a_positive_integer(size):
    with vmp.Model("m"), pytest.raises(vmp.GraphError, match=r"plate 'p': size must be a positive integer"):
        vmp.Plate("p", size)


@pytest.mark.parametrize("size", [3, 3.0, np.int64(3), np.float32(3.0)])
def test_a_plate_size_given_as_any_whole_number(size):
    with vmp.Model("m"), vmp.Plate("p", size) as plate:
        vmp.Normal("x", 0.0, 1.0)
    assert plate.size == 3 and isinstance(plate.size, int)


def test_a_numpy_scalar_observation_is_data_not_an_array_out_of_core():
    """np.float64 has shape, dtype and __getitem__ but is one number (it was read as a lazy
    array and failed with IndexError)."""
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        vmp.Normal("x", mu, 1.0, observed=np.float64(0.3))
    model.fit(iterations=20)
    # closed form: q(mu) = N(0.3 / 2, 1 / 2)
    assert model["mu"].mean == pytest.approx(0.15, rel=1e-12)


@pytest.mark.parametrize("value,words", [
    (object(), ["node 'mu'", "mean must be numbers"]),
    (1 + 2j, ["node 'mu'", "mean must be real numbers", "complex"]),
    (np.array([1.0 + 0j]), ["node 'mu'", "complex"]),
    ([1.0, [2.0, 3.0]], ["node 'mu'", "mean", "ragged"]),
], ids=["object", "complex", "complex-array", "ragged"])
def test_a_constant_that_is_not_real_numbers(value, words):
    with vmp.Model("m"), pytest.raises(vmp.HyperparameterError) as info:
        vmp.Normal("mu", value, 1.0)
    for w in words:
        assert w in str(info.value)


@pytest.mark.parametrize("declare,words", [
    (lambda: vmp.Gamma("t", 1.0, 5e-324), ["node 't'", "rate", "subnormal"]),
    (lambda: vmp.Gamma("t", 1e-310, 1.0), ["node 't'", "shape", "subnormal"]),
    (lambda: vmp.Dirichlet("pi", np.array([1.0, 1e-320])), ["node 'pi'", "alpha", "subnormal"]),
    (lambda: vmp.Wishart("W", 3.0, np.eye(2) * 1e-309), ["node 'W'", "scale", "subnormal"]),
], ids=["gamma-rate", "gamma-shape", "dirichlet", "wishart"])
def test_a_subnormal_hyperparameter_is_refused(declare, words):
    """A Gamma rate of 5e-324 passed the "positive and finite" check and gave a NaN bound."""
    with vmp.Model("m"), pytest.raises(vmp.HyperparameterError) as info:
        declare()
    for w in words:
        assert w in str(info.value)


def test_complex_data_and_weights_are_refused():
    with vmp.Model("m"):
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("d", 2):
            with pytest.raises(vmp.DataError, match="node 'x'.*complex"):
                vmp.Normal("x", mu, 1.0, observed=np.array([1.0, 2.0 + 1j]))
            with pytest.raises(vmp.DataError, match="node 'y': weights must be real numbers"):
                vmp.Normal("y", mu, 1.0, observed=np.ones(2), weights=np.array([1.0, 1j]))


def test_a_string_parameter_that_names_no_node_says_which_node_referenced_it():
    with vmp.Model("m") as model:
        vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("d", 2):
            vmp.Normal("x", "muu", 1.0, observed=np.ones(2))
    with pytest.raises(vmp.GraphError, match=r"node 'x': its mean 'muu' names no node of model 'm' \(nodes: mu, x\)"):
        model.fit()


def test_a_ragged_parameter_of_a_gaussian_is_refused_with_the_node():
    with vmp.Model("m"), pytest.raises(vmp.VMPError, match="node 'w'"):
        vmp.Gaussian("w", [0.0, [1.0]], np.eye(2))


@pytest.mark.parametrize("k", [None, float("nan"), 2.5, "3", float("inf")])
def test_a_builder_count_that_is_not_an_integer(k):
    from vmp.models import gaussian_mixture

    with pytest.raises(vmp.ShapeError, match="n_components must be an integer >= 2"):
        gaussian_mixture(np.random.default_rng(0).normal(size=(20, 2)), k)


@pytest.mark.parametrize("effective", [-1, 0, "2", None, float("nan")])
def test_svi_plus_effective_size_outside_its_domain(effective):
    with pytest.raises(vmp.OptionError, match="SVIPlus"):
        vmp.SVIPlus(effective=effective)


def test_a_plate_whose_q_cannot_be_held_in_memory_is_a_shape_error():
    """A latent node over 10^12 elements (a plate of 10^12, or 10^6 x 10^6): a ShapeError naming
    the node, its plates and the memory q would need, at declaration, not a MemoryError."""
    with vmp.Model("m"):
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("data", 10 ** 12):
            with pytest.raises(vmp.ShapeError, match=r"node 'z': its plates \(data: 1000000000000\) hold 1e\+12 "
                                                     r"elements, and q .* would need 32 TB, more than"):
                vmp.Normal("z", mu, 1.0)
        with vmp.Plate("rows", 10 ** 6), vmp.Plate("cols", 10 ** 6):
            with pytest.raises(vmp.ShapeError, match=r"node 'u': its plates \(rows: 1000000, cols: 1000000\)"):
                vmp.Gaussian("u", np.zeros(2), np.eye(2))


def test_an_observed_node_over_a_plate_of_10_12_is_a_vmp_error():
    """Its constant precision broadcast over the plate has statistics that would not fit: a
    ShapeError naming the node's parameter (it was a MemoryError from the parameter checks)."""
    with vmp.Model("m"):
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("data", 10 ** 12), pytest.raises(vmp.ShapeError, match=r"'x.precision': the constant"):
            vmp.Normal("x", mu, 1.0, observed=np.zeros(3))


def test_a_large_plate_that_fits_in_memory_declares():
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("data", 10 ** 6):
            vmp.Normal("z", mu, 1.0)
    assert model.nodes["z"].plate_shape == (10 ** 6,)
