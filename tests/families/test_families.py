"""Table-driven tests of the exponential families in ``vmp.families``.

One table (``CASES``) of (family, parameters, plate shape) feeds every generic test:

1. moments == gradient of the log-normalizer (central finite differences),
2. entropy == scipy.stats' entropy, per plate element,
3. moments == Monte-Carlo averages of statistics(sample(...)),
4. <eta, u(x)> - A(eta) == scipy's logpdf / logpmf at a sampled x,
5. natural_from -> parameters round trip,
6. valid() on in-domain (table) and out-of-domain natural parameters,
7. sampling is deterministic given the seed.

Reference values are computed from the parameters given in the table (never from the
library's own ``to_scipy``), so the library is checked against an independent source.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from vmp.families import Categorical, Dirichlet, Gamma, Gaussian, Normal, Wishart

# --------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------


def _spd(rng: np.random.Generator, plates: tuple[int, ...], d: int, ridge: float) -> np.ndarray:
    """Deterministic, well-conditioned symmetric positive-definite matrices."""
    a = rng.normal(size=plates + (d, d))
    return a @ np.swapaxes(a, -1, -2) / d + ridge * np.eye(d)


def _simplex(rng: np.random.Generator, plates: tuple[int, ...], k: int) -> np.ndarray:
    w = rng.uniform(0.2, 1.0, size=plates + (k,))
    return w / w.sum(-1, keepdims=True)


_r = np.random.default_rng(12345)  # only used to build the table, at import time


@dataclass(frozen=True)
class Case:
    id: str
    family: type
    params: dict  # keyword arguments of family.natural_from, arrays shaped plates + event
    plates: tuple[int, ...]

    def natural(self):
        return self.family.natural_from(**self.params)

    def at(self, idx: tuple[int, ...]) -> dict:
        """The parameters of one plate element."""
        return {k: np.asarray(v)[idx] for k, v in self.params.items()}


CASES = [
    Case("gaussian-2d", Gaussian,
         {"mean": np.array([0.5, -1.0]), "precision": np.array([[2.0, 0.3], [0.3, 1.0]])}, ()),
    Case("gaussian-3d-plates3", Gaussian,
         {"mean": _r.normal(size=(3, 3)), "precision": _spd(_r, (3,), 3, 0.5)}, (3,)),
    Case("normal-scalar", Normal, {"mean": np.array(1.5), "precision": np.array(4.0)}, ()),
    Case("normal-plates2x3", Normal,
         {"mean": _r.normal(size=(2, 3)), "precision": _r.uniform(0.3, 5.0, size=(2, 3))}, (2, 3)),
    Case("gamma-scalar", Gamma, {"shape": np.array(2.5), "rate": np.array(1.5)}, ()),
    Case("gamma-plates3", Gamma,
         {"shape": np.array([0.7, 3.0, 10.0]), "rate": np.array([0.5, 2.0, 4.0])}, (3,)),
    Case("wishart-2d", Wishart,
         {"dof": np.array(4.5), "scale": np.array([[0.8, -0.2], [-0.2, 0.5]])}, ()),
    Case("wishart-3d-plates2", Wishart,
         {"dof": np.array([3.5, 8.0]), "scale": _spd(_r, (2,), 3, 0.3)}, (2,)),
    Case("dirichlet-3", Dirichlet, {"alpha": np.array([2.0, 3.0, 4.0])}, ()),
    Case("dirichlet-4-plates2x3", Dirichlet, {"alpha": _r.uniform(0.6, 5.0, size=(2, 3, 4))}, (2, 3)),
    Case("categorical-3", Categorical, {"probabilities": np.array([0.2, 0.5, 0.3])}, ()),
    Case("categorical-4-plates3", Categorical, {"probabilities": _simplex(_r, (3,), 4)}, (3,)),
]

FAMILY_CASES = pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])

#: components of eta that are symmetric matrices (perturbed symmetrically)
SYMMETRIC = {Gaussian: {1}, Wishart: {0}}


def _statistics(family, x, natural):
    return family.statistics(x, family.event_shape(natural))


def _scipy(case: Case, idx: tuple[int, ...]):
    """Frozen scipy distribution of one plate element, built from the table's parameters."""
    p = case.at(idx)
    f = case.family
    if f is Gaussian:
        return stats.multivariate_normal(p["mean"], np.linalg.inv(p["precision"]))
    if f is Normal:
        return stats.norm(p["mean"], 1.0 / np.sqrt(p["precision"]))
    if f is Gamma:
        return stats.gamma(p["shape"], scale=1.0 / p["rate"])
    if f is Wishart:
        return stats.wishart(df=float(p["dof"]), scale=p["scale"])
    if f is Dirichlet:
        return stats.dirichlet(p["alpha"])
    raise AssertionError(f"no scipy reference for {f}")


# --------------------------------------------------------------------------------------
# Shapes (sanity of the table itself, so the generic tests below test what they claim)
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_shapes(case):
    f = case.family
    eta = case.natural()
    assert len(eta) == len(f.event_ndims)
    assert f.plate_shape(eta) == case.plates
    for e, n in zip(eta, f.event_ndims):
        assert e.shape[: e.ndim - n] == case.plates
    m = f.moments(eta)
    assert [a.shape for a in m] == [e.shape for e in eta]
    assert f.log_normalizer(eta).shape == case.plates
    assert f.entropy(eta).shape == case.plates
    assert np.asarray(f.valid(eta)).shape == case.plates


# --------------------------------------------------------------------------------------
# 1. moments = grad A
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_moments_are_gradient_of_log_normalizer(case):
    f = case.family
    eta = case.natural()
    moments = f.moments(eta)
    h = 1e-5
    for c, (e, n) in enumerate(zip(eta, f.event_ndims)):
        event_shape = e.shape[e.ndim - n:]
        symmetric = c in SYMMETRIC.get(f, ())
        for idx in np.ndindex(*event_shape):
            # perturb this event coordinate in every plate element at once; A is per plate
            # element, so the per-plate difference quotient is the gradient of sum_plates A
            # w.r.t. each element of eta_c.
            d = np.zeros_like(e)
            d[(Ellipsis,) + idx] = 1.0
            if symmetric:
                i, j = idx
                d[..., j, i] = 1.0  # E_ij + E_ji (or E_ii on the diagonal)
            plus = list(eta)
            minus = list(eta)
            plus[c] = e + h * d
            minus[c] = e - h * d
            fd = (f.log_normalizer(tuple(plus)) - f.log_normalizer(tuple(minus))) / (2 * h)
            m = moments[c][(Ellipsis,) + idx]
            if symmetric and idx[0] != idx[1]:
                i, j = idx
                expected = m + moments[c][..., j, i]
            else:
                expected = m
            assert fd.shape == case.plates
            np.testing.assert_allclose(
                fd, expected, rtol=1e-6, atol=1e-6,
                err_msg=f"{case.id}: d A / d eta[{c}]{idx}")


# --------------------------------------------------------------------------------------
# 2. entropy
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_entropy_matches_scipy(case):
    f = case.family
    got = np.asarray(f.entropy(case.natural()))
    assert got.shape == case.plates
    expected = np.empty(case.plates)
    for idx in np.ndindex(*case.plates):
        if f is Categorical:
            p = case.at(idx)["probabilities"]
            expected[idx] = -np.sum(p * np.log(p))
        else:
            expected[idx] = _scipy(case, idx).entropy()
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10)


# --------------------------------------------------------------------------------------
# 3. moments = Monte-Carlo average of u(x)
# --------------------------------------------------------------------------------------

N_MC = 20000


@FAMILY_CASES
def test_moments_match_monte_carlo(case):
    f = case.family
    eta = case.natural()
    x = f.sample(eta, np.random.default_rng(2024), size=(N_MC,))
    event = () if f is Categorical else f.event_shape(eta)  # Categorical samples are indices
    assert np.shape(x) == (N_MC,) + case.plates + event
    u = _statistics(f, x, eta)
    moments = f.moments(eta)
    for c, (uc, mc) in enumerate(zip(u, moments)):
        assert uc.shape == (N_MC,) + mc.shape
        assert np.all(np.isfinite(uc))
        mean = uc.mean(0)
        se = uc.std(0) / np.sqrt(N_MC)
        z = np.abs(mean - mc) / np.maximum(se, 1e-12)
        assert np.all(np.abs(mean - mc) <= 5.0 * se + 1e-10), (
            f"{case.id}: component {c} off by up to {z.max():.1f} standard errors\n"
            f"MC mean {mean}\nmoments {mc}")


# --------------------------------------------------------------------------------------
# 4. log density
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_log_density_matches_scipy(case):
    f = case.family
    eta = case.natural()
    x = f.sample(eta, np.random.default_rng(7))
    got = f.inner(eta, _statistics(f, x, eta)) - f.log_normalizer(eta)
    assert np.shape(got) == case.plates
    expected = np.empty(case.plates)
    for idx in np.ndindex(*case.plates):
        xi = np.asarray(x)[idx]
        if f is Categorical:
            expected[idx] = np.log(case.at(idx)["probabilities"][int(xi)])
        else:
            expected[idx] = _scipy(case, idx).logpdf(xi)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------------------
# 5. parameter round trip
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_parameters_round_trip(case):
    back = case.family.parameters(case.natural())
    for key, given in case.params.items():
        assert key in back, f"{case.id}: parameters() lacks {key!r}"
        got = np.asarray(back[key])
        given = np.asarray(given, float)
        assert got.shape == given.shape, f"{case.id}: {key} shape {got.shape} != {given.shape}"
        np.testing.assert_allclose(got, given, rtol=1e-10, atol=1e-12, err_msg=f"{case.id}: {key}")


# --------------------------------------------------------------------------------------
# 6. valid
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_valid_on_table(case):
    ok = np.asarray(case.family.valid(case.natural()))
    assert ok.dtype == bool
    assert ok.shape == case.plates
    assert ok.all()


_GOOD2 = np.array([[2.0, 0.3], [0.3, 1.0]])
_INDEF2 = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3, -1
_NSD2 = np.array([[1.0, 1.0], [1.0, 1.0]])  # eigenvalues 2, 0 (singular)

INVALID = [
    ("gaussian-non-pd-precision", Gaussian,
     lambda: Gaussian.natural_from(np.zeros((4, 2)), np.stack([_GOOD2, _INDEF2, -_GOOD2, _NSD2])),
     [True, False, False, False]),
    ("gaussian-nan-mean", Gaussian,
     lambda: Gaussian.natural_from(np.array([[0.0, 1.0], [np.nan, 0.0]]), np.stack([_GOOD2, _GOOD2])),
     [True, False]),
    ("normal-precision<=0", Normal,
     lambda: Normal.natural_from(np.array([0.5, 0.5, 0.5, -1.0]), np.array([1.0, 0.0, -1.0, 1e-8])),
     [True, False, False, True]),
    ("gamma-shape<=0-or-rate<=0", Gamma,
     lambda: Gamma.natural_from(np.array([[2.0, 0.0, -1.0], [2.0, 2.0, 1e-3]]),
                                np.array([[1.0, 1.0, 1.0], [0.0, -1.0, 1e-3]])),
     [[True, False, False], [False, False, True]]),
    ("wishart-dof<=D-1", Wishart,
     lambda: Wishart.natural_from(np.array([3.0, 2.5, 2.0, 1.5, 0.5]), np.broadcast_to(np.eye(3), (5, 3, 3))),
     [True, True, False, False, False]),
    ("wishart-non-pd-scale", Wishart,
     lambda: Wishart.natural_from(np.array([5.0, 5.0, 5.0]), np.stack([_GOOD2, _INDEF2, -_GOOD2])),
     [True, False, False]),
    ("dirichlet-alpha<=0", Dirichlet,
     lambda: Dirichlet.natural_from(np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 3.0], [-1.0, 2.0, 3.0], [0.1, 0.1, 0.1]])),
     [True, False, False, True]),
    ("categorical-nan", Categorical,
     lambda: (np.array([[0.0, 1.0, 2.0], [0.0, np.nan, 2.0], [np.nan] * 3, [-1.0, -2.0, 5.0]]),),
     [True, False, False, True]),
]


@pytest.mark.parametrize("family, make, expected", [row[1:] for row in INVALID], ids=[row[0] for row in INVALID])
def test_valid_rejects_out_of_domain(family, make, expected):
    expected = np.asarray(expected)
    with np.errstate(all="ignore"):
        ok = np.asarray(family.valid(make()))
    assert ok.dtype == bool
    assert ok.shape == expected.shape
    np.testing.assert_array_equal(ok, expected)


# --------------------------------------------------------------------------------------
# 7. determinism
# --------------------------------------------------------------------------------------


@FAMILY_CASES
def test_sample_is_deterministic_given_seed(case):
    f = case.family
    tiled = tuple(np.repeat(e[None], 50, axis=0) for e in case.natural())
    a = np.asarray(f.sample(tiled, np.random.default_rng(99)))
    b = np.asarray(f.sample(tiled, np.random.default_rng(99)))
    c = np.asarray(f.sample(tiled, np.random.default_rng(100)))
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit-identical
    assert not np.array_equal(a, c)  # and the seed actually matters


def test_categorical_kernels_keep_their_numbers():
    """The softmax with a per-category max and the in-place entropy equal the plain formulas."""
    rng = np.random.default_rng(5)
    e = rng.normal(size=(400, 7)) * 30
    e[3, 2] = -np.inf
    p = np.exp(e - e.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    np.testing.assert_array_equal(Categorical.moments((e,))[0], p)
    np.testing.assert_array_equal(Categorical.entropy((e,)), -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1))
    assert Categorical.valid((e,)).all()


def test_categorical_valid_per_row_when_the_sum_is_not_finite():
    """valid reads the sum of eta first; an inf or NaN anywhere, or finite entries whose sum
    overflows, still gives the answer row by row: finite rows are in the simplex, a row with
    +inf or NaN is not, -inf is p_k = 0."""
    e = np.full((300, 4), 1e308)
    e[5, 1], e[7, 2], e[9, 0] = np.inf, np.nan, -np.inf
    expected = np.ones(300, bool)
    expected[[5, 7]] = False
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(Categorical.valid((e,)), expected)
        e[[5, 7]] = 0.0
        assert Categorical.valid((e,)).all()


@pytest.mark.parametrize("with_zero", [False, True], ids=["finite", "p_k=0"])
def test_categorical_entropy_from_the_softmax_normalizer(with_zero):
    """A large q's entropy reads the log-normalizer its softmax kept, A(eta) - <eta, p>; it equals
    -sum_k p_k log p_k (an eta of -inf takes the direct form), and a p that is not the kept one
    (another array, or q's natural parameters changed) is computed directly."""
    rng = np.random.default_rng(9)
    e = rng.normal(size=(20000, 10)) * 30 - 500.0
    if with_zero:
        e[3, 2] = -np.inf
    p = Categorical.moments((e,))[0]
    plogp = np.where(p > 0, p, 1.0)
    direct = -np.sum(p * np.log(plogp), axis=-1)
    np.testing.assert_allclose(Categorical.entropy((e,), (p,)), direct, rtol=1e-9, atol=1e-10)
    assert not p.flags.writeable  # what the entropy reads stays the softmax of e
    other = e + rng.normal(size=e.shape)
    np.testing.assert_allclose(Categorical.entropy((other,), (p,)), direct, rtol=1e-9, atol=1e-10)
    from vmp.families import categorical

    kept = Categorical.entropy((e,), (p,))
    categorical._NORMALIZERS.clear()  # as in a process resumed from a checkpoint
    np.testing.assert_array_equal(Categorical.entropy((e,), (p,)), kept)
