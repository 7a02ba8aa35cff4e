"""Bad input raises a vmp error (a ValueError) at declaration, naming the node and the problem."""
from __future__ import annotations

import numpy as np
import pytest

import vmp


def declare(fn):
    with vmp.Model("m") as model:
        fn()
    return model


@pytest.mark.parametrize("fn,err,words", [
    (lambda: vmp.Gaussian("mu", np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]])),
     vmp.HyperparameterError, ["'mu'", "positive definite"]),
    (lambda: vmp.Normal("x", 0.0, -1.0), vmp.HyperparameterError, ["'x'", "positive"]),
    (lambda: vmp.Gamma("tau", 0.0, 1.0), vmp.HyperparameterError, ["'tau'", "shape"]),
    (lambda: vmp.Gamma("tau", 1.0, -2.0), vmp.HyperparameterError, ["'tau'", "rate"]),
    (lambda: vmp.Dirichlet("pi", [1.0, 0.0, 2.0]), vmp.HyperparameterError, ["'pi'", "alpha"]),
    (lambda: vmp.Wishart("L", 1.0, np.eye(3)), vmp.HyperparameterError, ["'L'", "dof", "D - 1 = 2"]),
    (lambda: vmp.Wishart("L", 5.0, -np.eye(2)), vmp.HyperparameterError, ["'L'", "scale"]),
    (lambda: vmp.Categorical("z", [0.5, 0.6]), vmp.HyperparameterError, ["'z'", "sum to 1"]),
])
def test_invalid_hyperparameters(fn, err, words):
    with pytest.raises(err) as info:
        declare(fn)
    assert isinstance(info.value, ValueError)
    for w in words:
        assert w in str(info.value)


def test_shapes_that_do_not_fit_the_plates():
    def bad_mean():
        with vmp.Plate("N", 3):
            vmp.Normal("x", np.zeros(4), 1.0)
    with pytest.raises(vmp.ShapeError, match=r"node 'x': mean has shape \(4,\)"):
        declare(bad_mean)

    def bad_data():
        with vmp.Plate("N", 3):
            vmp.Gaussian("x", np.zeros(2), np.eye(2), observed=np.zeros((3, 3)))
    with pytest.raises(vmp.ShapeError, match="node 'x': observed data have shape"):
        declare(bad_data)

    def bad_dim():
        vmp.Gaussian("x", np.zeros(3), np.eye(2))
    with pytest.raises(vmp.ShapeError, match="node 'x'"):
        declare(bad_dim)


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_in_observed_data_without_mask(value):
    data = np.array([0.1, value, 0.3])

    def build():
        with vmp.Plate("N", 3):
            vmp.Normal("x", 0.0, 1.0, observed=data)
    with pytest.raises(vmp.DataError, match="node 'x'.*NaN or inf.*mask"):
        declare(build)


def test_masked_nan_is_accepted_and_ignored():
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 3):
            vmp.Normal("x", mu, 1.0, observed=[1.0, np.nan, 3.0], mask=[True, False, True])
    model.fit()
    # posterior precision 1 + 2, mean (1 + 3) / 3
    assert mu.mean == pytest.approx(4.0 / 3.0)
    assert np.isfinite(model.elbo())


def test_bad_observed_values():
    def cat():
        with vmp.Plate("N", 3):
            vmp.Categorical("z", [0.5, 0.5], observed=[0, 1, 2])
    with pytest.raises(vmp.DataError, match=r"node 'z'.*\[0, 2\)"):
        declare(cat)

    def gam():
        with vmp.Plate("N", 2):
            vmp.Gamma("t", 1.0, 1.0, observed=[1.0, -1.0])
    with pytest.raises(vmp.DataError, match="node 't'.*positive"):
        declare(gam)


def test_cycle_through_forward_references():
    with vmp.Model("m") as model:
        vmp.Normal("a", mean="b", precision=1.0)
        vmp.Normal("b", mean="a", precision=1.0)
    with pytest.raises(vmp.GraphError, match="cycle: (a -> b|b -> a)"):
        model.fit()


def test_forward_reference_resolves():
    with vmp.Model("m") as model:
        with vmp.Plate("N", 2):
            vmp.Normal("x", mean="mu", precision=1.0, observed=[1.0, 2.0])
        vmp.Normal("mu", 0.0, 1.0)
    model.fit()
    assert model["mu"].mean == pytest.approx(1.0)


def test_non_conjugate_parent_names_both_nodes_and_lists_rules():
    def build():
        tau = vmp.Gamma("tau", 1.0, 1.0)
        vmp.Normal("x", mean=tau, precision=1.0)
    with pytest.raises(vmp.ConjugacyError) as info:
        declare(build)
    msg = str(info.value)
    assert "'x'" in msg and "'tau'" in msg and "mean <- Normal" in msg and "precision <- Gamma" in msg

    def gaussian_gamma_elsewhere():
        with vmp.Plate("K", 3):
            tau = vmp.Gamma("tau", 1.0, 1.0)
        vmp.Gaussian("x", mean=np.zeros(2), precision=tau)  # neither ARD (size 2) nor on x's plates
    with pytest.raises(vmp.ShapeError, match="size D = 2"):
        declare(gaussian_gamma_elsewhere)


def test_unknown_and_duplicate_names():
    with vmp.Model("m") as model:
        vmp.Normal("x", 0.0, 1.0)
        with pytest.raises(vmp.GraphError, match="'x' exists already"):
            vmp.Normal("x", 0.0, 1.0)
        vmp.Normal("y", mean="nope", precision=1.0)
    with pytest.raises(vmp.GraphError, match="no node named 'zzz'"):
        model["zzz"]
    with pytest.raises(vmp.GraphError, match="node 'y': its mean 'nope' names no node"):
        model.fit()


def test_parent_in_a_plate_the_child_is_not_in():
    def build():
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4):
            vmp.Normal("x", mu, 1.0)
    with pytest.raises(vmp.GraphError, match="node 'x': parent 'mu' has plates \\['K'\\]"):
        declare(build)


def test_gate_with_wrong_number_of_categories():
    def build():
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], 1.0)
    with pytest.raises(vmp.ShapeError, match="'z' has 2 categories"):
        declare(build)


def test_node_outside_a_model():
    with pytest.raises(vmp.GraphError, match="vmp.Model"):
        vmp.Normal("x", 0.0, 1.0)


def test_posterior_before_fit():
    with vmp.Model("m") as model:
        x = vmp.Normal("x", 0.0, 1.0)
    with pytest.raises(vmp.GraphError, match="call model.fit"):
        x.mean
    model.fit()
    assert x.mean == pytest.approx(0.0)
    assert x.to_scipy().std() == pytest.approx(1.0)


def test_rules_are_listed():
    rules = vmp.rules()
    assert ("Gaussian", "precision", "Wishart") in rules
    assert ("Normal", "precision", "Gamma") in rules
    assert ("Categorical", "probabilities", "Dirichlet") in rules


@pytest.mark.parametrize("make", [
    lambda: vmp.Wishart("V", 3.0, vmp.Wishart("W", 3.0, np.eye(2))),
    lambda: vmp.Wishart("V", vmp.Gamma("n", 3.0, 1.0), np.eye(2)),
    lambda: vmp.Gamma("h", vmp.Gamma("g", 1.0, 1.0), 1.0),
    lambda: vmp.Dirichlet("p", vmp.Dirichlet("q", np.ones(3))),
])
def test_random_hyperparameter_outside_the_rules_is_a_conjugacy_error(make):
    """Used to be a raw numpy ValueError from np.asarray(node)."""
    with pytest.raises(vmp.ConjugacyError, match="must be a constant, got the random node .*All rules: "):
        declare(make)


@pytest.mark.parametrize("fn,role", [
    (lambda: vmp.Gamma("tau", 1e-50, 1.0), "shape"),
    (lambda: vmp.Dirichlet("pi", [1.0, 1e-20, 2.0]), "alpha"),
    (lambda: vmp.Beta("p", 1.0, 1e-30), "beta"),
], ids=["gamma-shape", "dirichlet-alpha", "beta-beta"])
def test_a_shape_lost_in_its_natural_parameter_is_refused(fn, role):
    """eta = a - 1 holds a to about 1e-16 absolute: a = 1e-50 became a = 0 (gammaln(0) = inf, a
    NaN bound at the first evaluation, or with a = 1e-300 a silently wrong q)."""
    with pytest.raises(vmp.HyperparameterError) as info:
        declare(fn)
    assert role in str(info.value) and "1e-10" in str(info.value)


def test_the_smallest_admitted_shape_fits():
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1e-3)
        tau = vmp.Gamma("tau", 1e-10, 1e-10)
        with vmp.Plate("n", 3):
            vmp.Normal("y", mu, tau, observed=[1.0, 2.0, 3.0])
    model.fit(iterations=200, tol=0)
    a, b = tau.parameters["shape"], tau.parameters["rate"]
    var_mu = 1.0 / (1e-3 + 3 * tau.mean)
    assert a == pytest.approx(1e-10 + 1.5, rel=1e-12)                     # PRML (10.29)
    assert b == pytest.approx(1e-10 + 0.5 * (((np.array([1.0, 2.0, 3.0]) - mu.mean) ** 2).sum() + 3 * var_mu),
                              rel=1e-9)


@pytest.mark.parametrize("family", ["normal", "gaussian", "gaussian-mean"])
def test_values_whose_squares_overflow_are_refused_at_declaration(family):
    """A Normal's or Gaussian's moments hold x^2: data of size 1e200 overflowed them, and the fit
    failed later with an error about another node (tau left the Gamma domain)."""
    big = np.array([1.0, -2e200, 3.0])

    def build():
        with vmp.Plate("N", 3):
            if family == "normal":
                vmp.Normal("x", 0.0, 1.0, observed=big)
            elif family == "gaussian":
                vmp.Gaussian("x", np.zeros(2), np.eye(2), observed=np.c_[big, np.ones(3)])
            else:
                vmp.Gaussian("x", np.array([1e151, 0.0]), np.eye(2))
    with pytest.raises((vmp.DataError, vmp.HyperparameterError), match="node 'x'.*magnitude below 1e\\+150"):
        declare(build)


def test_the_largest_admitted_values_fit():
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1e-300)
        with vmp.Plate("N", 2):
            vmp.Normal("x", mu, 1.0, observed=[9e149, 9.5e149])
    model.fit()
    assert mu.mean == pytest.approx(9.25e149, rel=1e-12)
    assert np.isfinite(model.elbo())


@pytest.mark.parametrize("source", ["memory", "memmap"])
def test_a_builder_refuses_data_whose_squares_overflow(source, tmp_path):
    from vmp.models import gaussian_mixture
    x = np.random.default_rng(0).normal(size=(50, 2))
    x[7, 1] = 3e200
    if source == "memmap":
        mm = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
        mm[:] = x
        mm.flush()
        x = np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape)
    with pytest.raises(vmp.DataError, match="gaussian_mixture: data has entries of magnitude up to 3e\\+200"):
        gaussian_mixture(x, 2)



def test_a_builder_admits_a_huge_sentinel_at_a_masked_entry():
    """A masked entry is no data: a sentinel there (-9.9e299) was refused as overflowing, though
    the node itself fills masked entries; the fit is that of NaN there."""
    from vmp.models import gaussian_mixture
    x = np.random.default_rng(0).normal(size=(40, 2))
    mask = np.ones(x.shape, bool)
    mask[5, 1] = False
    sentinel, nan = x.copy(), x.copy()
    sentinel[5, 1], nan[5, 1] = -9.9e299, np.nan
    a = gaussian_mixture(sentinel, 2, mask=mask).fit(iterations=3, tol=0, seed=0)
    b = gaussian_mixture(nan, 2).fit(iterations=3, tol=0, seed=0)
    assert np.array_equal(a.elbo, b.elbo)

@pytest.mark.parametrize("make", [
    lambda: vmp.Categorical("x", [0.5, 0.5, 0.0], observed=[0, 2, 1]),
    lambda: vmp.Categorical("x", np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]), observed=[0, 0, 0]),
    lambda: vmp.Multinomial("x", [0.5, 0.5, 0.0], observed=[[1, 0, 0], [0, 1, 2], [2, 0, 0]]),
], ids=["categorical", "per-element", "multinomial"])
def test_data_in_a_category_of_constant_probability_zero_are_refused(make):
    """Their bound is -inf (read as -1e100): an error at declaration names the node and the element."""
    def build():
        with vmp.Plate("N", 3):
            make()
    with pytest.raises(vmp.DataError, match=r"node 'x'.*probability is 0 at 1 element\(s\) \(the first at \(1,\)\)"):
        declare(build)


def test_a_masked_or_weightless_element_in_a_category_of_probability_zero_is_not_data():
    with vmp.Model("m"):
        with vmp.Plate("N", 3):
            vmp.Categorical("x", [0.5, 0.5, 0.0], observed=[0, 2, 1], mask=[True, False, True])
            vmp.Categorical("y", [0.5, 0.5, 0.0], observed=[0, 2, 1], weights=[1.0, 0.0, 1.0])
