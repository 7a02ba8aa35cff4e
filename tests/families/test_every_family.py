"""The Family protocol, checked for every family in the registry ``vmp.families.ALL``.

One table: each family's ``example()`` (a valid eta over a small plate). A family added to the
registry is picked up here with no edit. References are scipy's (through ``to_scipy``, whose
parameters are checked by the round trip natural -> parameters -> natural_from), finite
differences, Monte Carlo, and the constraints themselves. tests/families/test_families.py keeps
the older table whose scipy references are built from hand-written parameters.

A family whose innermost plate axes are one variable (``joint_plates``: a Markov chain's steps)
is compared per variable: its per-element log-normalizer, entropy and log-density are summed over
those axes, and its finite differences move one position along them at a time. A check that
cannot apply to a family is declared in ``EXCLUDED`` with its reason, not skipped in the test.
"""
from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

import vmp
from vmp.families import ALL
from vmp.graph.node import Node

#: (test, family name) -> why that check does not apply to that family
EXCLUDED = {
    ("test_one_element_to_scipy_is_scipy_itself", "CategoricalMarkovChain"):
        "scipy.stats has no distribution over Markov chain paths; to_scipy enumerates the K^T paths "
        "(vmp/families/_chain_paths.py), which the other scipy checks use",
    ("test_domain_errors_at_declaration_name_the_node_and_the_role", "CategoricalMarkovChain"):
        "the node is declared by its prior's initial and transition (the factor's roles, checked by "
        "tests/test_markov_chain.py::test_declaration_errors), not by q's marginals and transitions",
    ("test_entropy_and_log_density_match_scipy", "PolyaGamma"):
        "its densities and entropy are relative to the base measure PG(b, 0) (H = -KL(q || PG(b, 0))), "
        "scipy's are relative to Lebesgue measure; tests/families/test_polya_gamma.py checks the KL and "
        "the density against numerical integration of the series density",
    ("test_one_element_to_scipy_is_scipy_itself", "PolyaGamma"):
        "the same: scipy's entropy of its rv_continuous is the differential entropy, not -KL(q || PG(b, 0))",
    ("test_domain_errors_at_declaration_name_the_node_and_the_role", "GaussianMarkovChain"):
        "the node is declared by its prior's mean, precision, transition and noise (the factor's roles, "
        "checked by tests/test_gaussian_chain.py::test_declaration_errors), not by q's smoothed marginals",
    **{("test_one_element_to_scipy_is_scipy_itself", name):
       "scipy.stats has no joint Normal-Wishart, Normal-Gamma or stick-breaking distribution; to_scipy "
       "builds one from scipy.stats' own (vmp/families/_scipy.py), which the other scipy checks use"
       for name in ("GaussianWishart", "NormalGamma", "StickBreaking", "ClosedStickBreaking")},
    **{("test_domain_errors_at_declaration_name_the_node_and_the_role", name):
       "the node is declared by its prior's concentration and truncation (checked by "
       "tests/joint/test_joint_nodes.py::test_stick_breaking_declaration_errors), not by q's sticks (alpha, beta)"
       for name in ("StickBreaking", "ClosedStickBreaking")},
}


def _table(test):
    rows = [pytest.param(f, id=f.name, marks=pytest.mark.skip(reason=EXCLUDED[test.__name__, f.name]))
            if (test.__name__, f.name) in EXCLUDED else pytest.param(f, id=f.name) for f in ALL]
    return pytest.mark.parametrize("f", rows)(test)


TABLE = _table


def test_exclusions_name_real_tests_and_families():
    names = {f.name for f in ALL}
    for test, family in EXCLUDED:
        assert callable(globals().get(test)) and family in names, (test, family)


def _event(f, eta):
    return f.event_shape(eta)


def _per_variable(f, values, eta):
    """Per-element values summed over the family's joint plate axes (the last plates)."""
    values = np.asarray(values)
    n = len(f.plate_shape(eta))
    return values.sum(axis=tuple(range(n - f.joint_plates, n))) if f.joint_plates else values


def _scipy_value(f, x, eta):
    """The value scipy's distribution takes: x, or the one-hot indicator for a selecting family
    (scipy's multinomial(1, p))."""
    return f.statistics(x, _event(f, eta))[0] if f.selects else x


def _log_density(d, value):
    return d.logpdf(value) if hasattr(d, "logpdf") else d.logpmf(value)


def _natural_keys(f):
    return list(inspect.signature(f.natural_from).parameters)


@TABLE
def test_example_is_valid_with_a_plate(f):
    eta = f.example()
    assert len(eta) == len(f.event_ndims)
    plates = f.plate_shape(eta)
    assert plates and np.prod(plates) >= 2
    assert f.valid(eta).shape == plates and f.valid(eta).all()
    assert [m.shape for m in f.moments(eta)] == [e.shape for e in eta]
    assert f.log_normalizer(eta).shape == plates and f.entropy(eta).shape == plates
    assert np.shape(f.mean(eta))[: len(plates)] == plates


@TABLE
def test_moments_are_the_gradient_of_the_log_normalizer(f):
    eta = f.example()
    moments = f.moments(eta)
    h = 1e-5
    plates = f.plate_shape(eta)
    for c, (e, n) in enumerate(zip(eta, f.event_ndims)):
        for at, idx in itertools.product(np.ndindex(*plates[len(plates) - f.joint_plates:]),
                                         np.ndindex(*e.shape[e.ndim - n:])):
            d = np.zeros_like(e)
            d[(Ellipsis,) + at + idx] = 1.0
            if n == 2:  # a symmetric matrix component moves symmetrically: E_ij + E_ji
                d[(Ellipsis,) + at + idx[::-1]] = 1.0
            plus, minus = list(eta), list(eta)
            plus[c], minus[c] = e + h * d, e - h * d
            fd = _per_variable(f, f.log_normalizer(tuple(plus)) - f.log_normalizer(tuple(minus)), eta) / (2 * h)
            expected = moments[c][(Ellipsis,) + at + idx]
            if n == 2 and idx[0] != idx[1]:
                expected = expected + moments[c][(Ellipsis,) + at + idx[::-1]]
            np.testing.assert_allclose(fd, expected, rtol=1e-6, atol=1e-6, err_msg=f"{f.name} dA/deta[{c}]{at}{idx}")


@TABLE
def test_entropy_and_log_density_match_scipy(f):
    eta = f.example()
    d = f.to_scipy(eta)
    np.testing.assert_allclose(_per_variable(f, f.entropy(eta), eta), d.entropy(), rtol=1e-9, atol=1e-10)
    x = f.sample(eta, np.random.default_rng(7))
    u = f.statistics(x, _event(f, eta))
    ours = _per_variable(f, f.inner(eta, u) - f.log_normalizer(eta) + f.log_base_measure(x, _event(f, eta)), eta)
    np.testing.assert_allclose(ours, _log_density(d, _scipy_value(f, x, eta)), rtol=1e-9, atol=1e-9)


@TABLE
def test_optimum_is_the_log_normalizer_less_the_base_measure(f):
    """Family.optimum = H[q] + <eta, E[u]> = A(eta) - E[log h(x)] (per variable): the bound's
    terms of a node right after its coordinate update."""
    eta = f.example()
    moments = f.moments(eta)
    want = f.log_normalizer(eta) - f.expected_log_base_measure(eta, moments)
    np.testing.assert_allclose(_per_variable(f, f.optimum(eta, moments), eta), _per_variable(f, want, eta),
                               rtol=1e-12, atol=1e-12)


@TABLE
def test_one_element_to_scipy_is_scipy_itself(f):
    eta = f.example()
    one = tuple(e[0] for e in eta)
    if f.bound_to:  # a family bound to per-element data (trials, r): the first element's
        f = f.bound(**{k: np.asarray(getattr(f, k)).reshape(-1)[0] for k in f.bound_to})
    d = f.to_scipy(one)
    assert type(d).__module__.startswith("scipy.stats")
    np.testing.assert_allclose(d.entropy(), _per_variable(f, f.entropy(one), one), rtol=1e-9)


@TABLE
def test_mean_is_scipys_mean(f):
    eta = f.example()
    m = f.to_scipy(eta).mean
    np.testing.assert_allclose(f.mean(eta), m() if callable(m) else m, rtol=1e-9, atol=1e-12)


N_MC = 20000


@TABLE
def test_moments_match_monte_carlo(f):
    eta = f.example()
    x = f.sample(eta, np.random.default_rng(2024), size=(N_MC,))
    again = f.sample(eta, np.random.default_rng(2024), size=(N_MC,))
    assert np.asarray(x).tobytes() == np.asarray(again).tobytes()
    for c, (uc, mc) in enumerate(zip(f.statistics(x, _event(f, eta)), f.moments(eta))):
        assert uc.shape == (N_MC,) + mc.shape
        se = uc.std(0) / np.sqrt(N_MC)
        assert np.all(np.abs(uc.mean(0) - mc) <= 5.0 * se + 1e-10), f"{f.name}: component {c}"


@TABLE
def test_parameters_round_trip(f):
    eta = f.example()
    p = f.parameters(eta)
    back = f.natural_from(**{k: p[k] for k in _natural_keys(f)})
    for a, b in zip(f.moments(back), f.moments(eta)):  # a Categorical's eta is log p up to a constant
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    for k in _natural_keys(f):
        np.testing.assert_allclose(f.parameters(back)[k], p[k], rtol=1e-9, atol=1e-12)


@TABLE
def test_support_holds_for_samples(f):
    eta = f.example()
    x = f.sample(eta, np.random.default_rng(3), size=(50,))
    assert np.all(f.support.check(x))


def _broken(value):
    """The parameter with its second plate element negated (out of a positive, a simplex or a
    positive-definite domain; still inside the real line)."""
    bad = np.array(value, float, copy=True)
    bad[1] = -bad[1]
    return bad


@TABLE
def test_valid_agrees_with_the_constraints(f):
    eta = f.example()
    p = f.parameters(eta)
    rules = f.constraints_for(_event(f, eta))
    assert set(rules) <= set(_natural_keys(f))
    broken = 0
    for key in _natural_keys(f):
        given = {k: p[k] for k in _natural_keys(f)}
        given[key] = _broken(p[key])
        with np.errstate(all="ignore"):
            got = f.valid(f.natural_from(**given))
        expected = np.ones(got.shape, bool)
        for k, c in rules.items():
            ok = np.asarray(c.check(given[k]))
            expected &= ok.reshape(ok.shape[: got.ndim] + (-1,)).all(-1) if ok.ndim > got.ndim else ok
        np.testing.assert_array_equal(got, expected, err_msg=f"{f.name}: {key} broken")
        broken += not np.all(expected[1])
    assert broken, f"{f.name}: negating a parameter should leave the domain somewhere"
    nan = tuple(np.where(np.arange(e.shape[0]).reshape((-1,) + (1,) * (e.ndim - 1)) == 0, np.nan, e) for e in eta)
    per_first = f.valid(nan).reshape(f.plate_shape(eta)[0], -1)
    assert per_first.all(-1).tolist() == [False] + [True] * (f.plate_shape(eta)[0] - 1)
    assert not per_first[0].any()


def _node_class(f):
    classes = [c for c in _subclasses(Node) if getattr(c, "family", None) is f]
    return classes[0] if classes else None


def _subclasses(cls):
    for c in cls.__subclasses__():
        yield c
        yield from _subclasses(c)


def _declaration(cls, f):
    """Keyword arguments beyond the family's parameters: the node's ``example_arguments`` (a
    Binomial's trials) and, for an observed-only family, data drawn from the example."""
    extra = dict(getattr(cls, "example_arguments", {}))
    if not f.latent:
        extra["observed"] = f.sample(f.example(), np.random.default_rng(5))
    return extra


@TABLE
def test_domain_errors_at_declaration_name_the_node_and_the_role(f):
    cls = _node_class(f)
    assert cls is not None, f"no node class declares {f.name}"
    params = inspect.signature(cls.__init__).parameters
    keys = _natural_keys(f)
    assert all(k in params for k in keys), f"{cls.__name__} does not take {f.name}'s parameters {keys}"
    p = f.parameters(f.example())
    extra = _declaration(cls, f)
    with vmp.Model("m"), vmp.Plate("n", 3):
        cls("good", **{k: p[k] for k in keys}, **extra)
    for key, c in f.constraints_for(_event(f, f.example())).items():
        given = {k: p[k] for k in keys}
        given[key] = _broken(p[key])
        if np.all(c.check(given[key])):
            continue
        with vmp.Model("m"), vmp.Plate("n", 3), pytest.raises(vmp.HyperparameterError) as info:
            cls("bad_node", **given, **extra)
        assert "'bad_node'" in str(info.value) and key in str(info.value), str(info.value)


@pytest.mark.parametrize("f", [f for f in ALL if not f.latent], ids=lambda f: f.name)
def test_observed_only_families_refuse_a_latent_node(f):
    """A family with a base measure h != 1 (Poisson, Multinomial, Binomial) is observed only."""
    cls = _node_class(f)
    assert cls is not None, f"no node class declares {f.name}"
    p = f.parameters(f.example())
    with vmp.Model("m"), vmp.Plate("n", 3), pytest.raises(vmp.GraphError, match="'bad_node'.*observed"):
        cls("bad_node", **{k: p[k] for k in _natural_keys(f)}, **getattr(cls, "example_arguments", {}))


@TABLE
def test_kl_is_the_expected_log_density_ratio_by_monte_carlo(f):
    """Family.kl(eta, eta') = E_eta[log q_eta(x) - log q_eta'(x)] (the base measure cancels),
    against the mean over draws x ~ q_eta of <eta - eta', u(x)> - A(eta) + A(eta'), within 5
    standard errors; 0 at eta' = eta. eta' is halfway to another valid eta (the domain is convex)."""
    eta = f.example()
    plates = f.plate_shape(eta)
    other = f.random_natural(np.random.default_rng(3), plates, _event(f, eta))
    other = tuple(0.5 * (a + b) for a, b in zip(eta, other))
    assert f.valid(other).all()
    x = f.sample(eta, np.random.default_rng(11), size=(4000,))
    u = f.statistics(x, _event(f, eta))
    diff = tuple(a - b for a, b in zip(eta, other))
    draws = _per_variable(f, np.moveaxis(f.inner(diff, u) - f.log_normalizer(eta) + f.log_normalizer(other), 0, -1), eta)
    kl = _per_variable(f, f.kl(eta, other), eta)
    assert np.all(kl > 0)
    se = draws.std(axis=-1) / np.sqrt(draws.shape[-1])
    assert np.all(np.abs(kl - draws.mean(axis=-1)) <= 5 * se + 1e-12), (kl, draws.mean(axis=-1), se)
    np.testing.assert_allclose(f.kl(eta, eta), 0.0, atol=1e-9)
