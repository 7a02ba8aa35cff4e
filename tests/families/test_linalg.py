"""Batched positive-definite algebra (vmp/families/_linalg.py) against numpy.linalg per element.

Both paths of ``Cholesky`` (the column loop vectorized over the stack, and LAPACK) are checked
on every shape of the table; the last tests pin the dispatch, so that a stack the thresholds
send to the vectorized path really takes it (one pass over the stack, no per-matrix LAPACK).
"""
from __future__ import annotations

import numpy as np
import pytest

from vmp.families import Gaussian, Wishart, _linalg
from vmp.families._linalg import Cholesky

#: (plates, D): single matrices, stacks over one and two plates, orders 1 to VECTOR_ORDER
SHAPES = [((), 3), ((7,), 1), ((5,), 4), ((3, 4), 2), ((300,), 10), ((2, 150), 5), ((40,), 12)]


def _spd(plates, d, seed=0, spread=1e3):
    """SPD matrices with condition numbers up to about ``spread``, not close to diagonal."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=plates + (d, d)))
    eig = np.exp(rng.uniform(0.0, np.log(spread), size=plates + (d,)))
    return (q * eig[..., None, :]) @ np.swapaxes(q, -1, -2)


def _per_element(f, *arrays):
    """Apply f to each plate element (the reference: one numpy.linalg call per matrix)."""
    plates = arrays[0].shape[:-2]
    out = [f(*(np.asarray(a)[idx] for a in arrays)) for idx in np.ndindex(*plates)]
    return np.array(out).reshape(plates + np.shape(out[0]))


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorized", "lapack"])
@pytest.mark.parametrize("plates, d", SHAPES, ids=[f"{p}x{d}" for p, d in SHAPES])
def test_cholesky_matches_numpy_per_element(plates, d, vectorize):
    a = _spd(plates, d)
    b = np.random.default_rng(1).normal(size=plates + (d,))
    f = Cholesky(a, vectorize=vectorize)
    assert f.vectorized is vectorize
    assert f.ok.shape == plates and f.ok.all()
    inv = f.inv()
    np.testing.assert_allclose(inv, _per_element(np.linalg.inv, a), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(inv, np.swapaxes(inv, -1, -2))
    np.testing.assert_allclose(f.logdet(), _per_element(lambda m: np.linalg.slogdet(m)[1], a),
                               rtol=1e-12, atol=1e-11)
    np.testing.assert_allclose(f.solve(b), _per_element(lambda m, v: np.linalg.solve(m, v[:, 0]), a, b[..., None]),
                               rtol=1e-10, atol=1e-12)


def test_vectorized_reads_only_the_lower_triangle():
    a = _spd((300,), 4)
    junk = a + np.triu(np.full((4, 4), 7.0), 1)
    f = Cholesky(junk, vectorize=True)
    np.testing.assert_allclose(f.inv(), np.linalg.inv(a), rtol=1e-10, atol=1e-12)


def test_vectorized_flags_each_failed_element():
    a = _spd((300,), 3)
    a[[5, 17]] = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # indefinite
    a[40, 1, 1] = np.nan
    with np.errstate(invalid="ignore"):
        f = Cholesky(a, vectorize=True)
    expected = np.ones(300, bool)
    expected[[5, 17, 40]] = False
    np.testing.assert_array_equal(f.ok, expected)
    with pytest.raises(np.linalg.LinAlgError):
        f.logdet()
    np.testing.assert_array_equal(_linalg.is_pd(a), expected)


def test_inv_pd_falls_back_to_lu_on_indefinite_stacks():
    a = _spd((300,), 3)
    a[0] = np.diag([1.0, -2.0, 3.0])
    np.testing.assert_allclose(_linalg.inv_pd(a), np.linalg.inv(a), rtol=1e-10, atol=1e-12)


def test_large_stacks_take_the_vectorized_path(monkeypatch):
    """A plate of small matrices is one pass of the column loop, no LAPACK call per matrix:
    this breaks if the thresholds, or a family, route it back to numpy.linalg."""
    d = 5
    n = max(_linalg.VECTOR_BATCH, 1)
    assert _linalg.vectorized((n, d, d)) and not _linalg.vectorized((n - 1, d, d))
    assert not _linalg.vectorized((n, _linalg.VECTOR_ORDER + 1, _linalg.VECTOR_ORDER + 1))
    assert not _linalg.vectorized((_linalg.VECTOR_MAX // 4 + 1, 2, 2))
    prec = _spd((n,), d)
    mean = np.random.default_rng(2).normal(size=(n, d))
    g = Gaussian.natural_from(mean, prec)
    w = Wishart.natural_from(np.full(n, d + 2.0), np.linalg.inv(prec))
    expected = (Gaussian.moments(g), Gaussian.log_normalizer(g), Gaussian.entropy(g), Gaussian.valid(g),
                Wishart.moments(w), Wishart.log_normalizer(w), Wishart.valid(w))

    def refuse(*args, **kwargs):
        raise AssertionError("per-matrix LAPACK call on a stack the vectorized path serves")

    for name in ("inv", "cholesky", "solve", "slogdet", "eigvalsh", "det"):
        monkeypatch.setattr(np.linalg, name, refuse)
    got = (Gaussian.moments(g), Gaussian.log_normalizer(g), Gaussian.entropy(g), Gaussian.valid(g),
           Wishart.moments(w), Wishart.log_normalizer(w), Wishart.valid(w))
    for e, r in zip(expected, got):
        for ea, ra in zip(e if isinstance(e, tuple) else (e,), r if isinstance(r, tuple) else (r,)):
            np.testing.assert_array_equal(ea, ra)
    monkeypatch.undo()
    np.testing.assert_allclose(expected[0][0], mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(expected[0][1] - mean[:, :, None] * mean[:, None, :],
                               _per_element(np.linalg.inv, prec), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("plates, d", [((), 2), ((1,), 3), ((7,), 1), ((300,), 4)])
def test_inputs_are_not_overwritten(plates, d):
    a = _spd(plates, d)
    b = np.ones(plates + (d,))
    a0, b0 = a.copy(), b.copy()
    f = Cholesky(a, vectorize=True)
    f.inv(), f.solve(b), f.logdet()
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_families_agree_across_paths(monkeypatch):
    """Gaussian and Wishart on a stack the vectorized path serves equal the LAPACK path."""
    n, d = _linalg.VECTOR_BATCH, 4
    prec = _spd((n,), d, seed=3)
    g = Gaussian.natural_from(np.random.default_rng(4).normal(size=(n, d)), prec)
    w = Wishart.natural_from(np.linspace(d, 3 * d, n), np.linalg.inv(prec))

    def evaluate():
        return [*Gaussian.moments(g), Gaussian.log_normalizer(g), Gaussian.entropy(g),
                *Wishart.moments(w), Wishart.log_normalizer(w), Wishart.entropy(w)]

    fast = evaluate()
    monkeypatch.setattr(_linalg, "VECTOR_BATCH", n + 1)
    slow = evaluate()
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)



@pytest.mark.parametrize("shape", [(3,), (40, 7), (20000, 10), (30, 200, 9)])
def test_sum_last_matches_numpy(shape):
    a = np.random.default_rng(6).normal(size=shape)
    got = _linalg.sum_last(a)
    assert got.shape == shape[:-1]
    np.testing.assert_allclose(got, np.sum(a, axis=-1), rtol=1e-12, atol=1e-12)
    if a.size <= _linalg.SUM_BLAS:
        np.testing.assert_array_equal(got, np.sum(a, axis=-1))


@pytest.mark.parametrize("vectorize", [True, False], ids=["vectorized", "lapack"])
def test_scale_factorizes_the_scaled_symmetric_part(vectorize):
    a = -0.5 * _spd((300,), 4, seed=7)
    a = a + np.triu(np.full((4, 4), 0.01), 1)  # not symmetric: the symmetric part is meant
    target = -2.0 * 0.5 * (a + np.swapaxes(a, -1, -2))
    f = Cholesky(a, vectorize=vectorize, scale=-2.0)
    np.testing.assert_array_equal(f.logdet(), Cholesky(target, vectorize=vectorize).logdet())
    np.testing.assert_array_equal(f.inv(), Cholesky(target, vectorize=vectorize).inv())
    np.testing.assert_allclose(_linalg.inv_pd(a, scale=-2.0), _per_element(np.linalg.inv, target),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("owner", [True, False], ids=["owns its data", "a view"])
def test_a_factorization_is_reused_for_the_same_values_only(owner):
    """``factor`` memoizes by array identity and values: one stack is factorized once for the
    moments, validity and entropy of a q, and an array changed in place is factorized again.
    An array that owns its data is kept read-only instead of compared with a copy."""
    base = -0.5 * _spd((301,), 10, seed=3)
    a = base[:300] if not owner else base[:300].copy()
    f = _linalg.factor(a, scale=-2.0)
    assert _linalg.factor(a, scale=-2.0) is f
    assert _linalg.factor(a.copy(), scale=-2.0) is not f  # another array
    assert _linalg.factor(a, scale=None) is not f
    if owner:
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[7] *= 2.0
        a.flags.writeable = True  # a caller who insists
    a[7] *= 2.0  # in place: a (0.5) scaled the precision
    expect = np.linalg.slogdet(-2.0 * a)[1]
    np.testing.assert_allclose(_linalg.factor(a, scale=-2.0).logdet(), expect, rtol=1e-10)
    natural = (np.zeros((300, 10)), a)
    entropy = Gaussian.entropy(natural)
    np.testing.assert_allclose(entropy, 5.0 * (1.0 + np.log(2 * np.pi)) - 0.5 * expect, rtol=1e-10)


def test_gaussian_valid_on_a_large_stack_is_the_generic_check():
    """Gaussian.valid reads the shared factorization on stacks the column loop serves; it must
    say what the constraints say (Family.valid) for every kind of broken element."""
    from vmp.families.base import Family

    n, d = _linalg.VECTOR_BATCH + 44, 4
    eta = Gaussian.natural_from(np.random.default_rng(5).normal(size=(n, d)), _spd((n,), d, seed=6))
    eta = (eta[0].copy(), eta[1].copy())
    eta[0][3, 1] = np.nan
    eta[0][4, 0] = np.inf
    eta[1][10, 0, 2] = eta[1][10, 2, 0] = np.nan  # off the diagonal, both triangles
    eta[1][11, 0, 3] = np.nan  # upper triangle only
    eta[1][12, 3, 1] = -np.inf  # lower triangle only
    eta[1][13, 2, 2] = np.inf
    eta[1][14, 1, 1] = 5.0  # Lambda_11 < 0: indefinite
    eta[1][15] = -eta[1][15]  # negative definite
    eta[1][16, 0, 1] += 0.3  # slightly asymmetric, symmetric part still definite
    with np.errstate(all="ignore"):
        got = Gaussian.valid(eta)
        expected = Family.valid.__func__(Gaussian, eta)
    assert _linalg.vectorized(eta[1].shape)
    np.testing.assert_array_equal(got, expected)
    assert not got[[3, 4, 10, 11, 12, 13, 14, 15]].any() and got[16] and got[[0, 1, 2, 5, 17]].all()


def test_symmetric_part_is_sym_bit_for_bit():
    """symmetric_part returns an exactly symmetric stack itself (no copy) and sym() of any
    other, so messages keep their numbers."""
    n = _linalg.SYMMETRIC_CHECK // 9 + 1
    a = _spd((n,), 3, seed=8)
    a = 0.5 * (a + np.swapaxes(a, -1, -2))
    assert _linalg.symmetric_part(a) is a
    np.testing.assert_array_equal(_linalg.symmetric_part(a), _linalg.sym(a))
    b = a.copy()
    b[5, 0, 1] += 1e-12
    np.testing.assert_array_equal(_linalg.symmetric_part(b), _linalg.sym(b))
    assert _linalg.symmetric_part(b) is not b
    b[6, 1, 1] = np.nan
    np.testing.assert_array_equal(_linalg.symmetric_part(b), _linalg.sym(b))


@pytest.mark.parametrize("plates, small", [((300,), (1,)), ((2, 300), (2, 1)), ((300, 2), (1, 1))])
def test_a_broadcast_stack_is_factorized_at_its_own_size(plates, small):
    """A prior over a plate is one matrix broadcast (stride 0) along it: ``factor`` factorizes
    the matrices it is broadcast from (``Shared``) and answers as the column loop over the
    materialized stack does, for every element (up to the order of a sum)."""
    d = 4
    one = -0.5 * _spd(small, d, seed=9)
    a = np.broadcast_to(one, plates + (d, d))
    full = np.ascontiguousarray(a)
    b = np.random.default_rng(10).normal(size=plates + (d,))
    f, g = _linalg.factor(a, scale=-2.0), Cholesky(full, vectorize=True, scale=-2.0)
    assert isinstance(f, _linalg.Shared) and f.small.plates == small
    np.testing.assert_array_equal(f.ok, g.ok)
    np.testing.assert_allclose(f.logdet(), g.logdet(), rtol=1e-14)
    np.testing.assert_allclose(f.inv(), g.inv(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(f.lower(), g.lower(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(f.lower(), np.linalg.cholesky(-2.0 * full), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(f.solve(b), g.solve(b), rtol=1e-12, atol=1e-14)
    for x, y in zip(f.inv_outer(b), g.inv_outer(b)):
        assert x.shape == y.shape and x.flags.c_contiguous  # the layout every reader wants
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
    second = f.inv_outer(b)[1]
    np.testing.assert_array_equal(second, np.swapaxes(second, -1, -2))  # exactly symmetric
    natural = (b, a)
    np.testing.assert_allclose(Gaussian.log_normalizer(natural), Gaussian.log_normalizer((b, full)), rtol=1e-12)
    bad = np.broadcast_to(np.eye(d) * [1.0, -1.0, 1.0, 1.0], plates + (d, d))
    assert not _linalg.factor(bad, scale=1.0).ok.any() and not Gaussian.valid((b, -0.5 * bad)).any()


@pytest.mark.parametrize("mean", ["zero", "one"])
def test_a_broadcast_stack_with_one_mean_has_the_moments_of_the_column_loop_bit_for_bit(mean):
    """A prior over a plate (one precision, one mean for every element): ``Shared.inv_outer``
    forms one E[x x^T] and copies it; each element's bits are those the column loop gives it
    when the elements' means differ (a changed last element leaves the others' bits alone)."""
    d, n = 5, 300
    one = -0.5 * _spd((1,), d, seed=11)
    a = np.broadcast_to(one, (n, d, d))
    m = np.zeros(d) if mean == "zero" else np.random.default_rng(12).normal(size=d)
    b = np.broadcast_to(_linalg.matvec(-2.0 * one, m)[0], (n, d))
    apart = b.copy()
    apart[-1] += 1.0  # a second mean: the column loop over every element
    f = _linalg.factor(a, scale=-2.0)
    assert isinstance(f, _linalg.Shared)
    x, second = f.inv_outer(b)
    y, loop = f.inv_outer(apart)
    assert second.flags.c_contiguous and second.flags.writeable and second.shape == (n, d, d)
    np.testing.assert_array_equal(x.view(np.uint64)[:-1], y.view(np.uint64)[:-1])
    np.testing.assert_array_equal(second.view(np.uint64)[:-1], loop.view(np.uint64)[:-1])
    np.testing.assert_array_equal(second.view(np.uint64)[-1], second.view(np.uint64)[0])
    cov = np.linalg.inv(-2.0 * one[0])
    for got, mu in ((second[0], cov @ b[0]), (loop[-1], cov @ apart[-1])):
        np.testing.assert_allclose(got, cov + np.outer(mu, mu), rtol=1e-12, atol=1e-14)



def test_one_mean_is_told_by_its_bits_and_its_copies_are_independent():
    """``Shared.inv_outer``'s one-mean path: means that differ by far less than any tolerance
    (1e-13 relative in one middle element) are different means, whose element gets its own
    second moment (the bits the column loop gives it); the copies for one mean are independent
    arrays (a write to one element leaves the others alone)."""
    d, n, k = 4, 300, 150
    one = -0.5 * _spd((1,), d, seed=5)
    a = np.broadcast_to(one, (n, d, d))
    b = np.broadcast_to(np.random.default_rng(6).normal(size=d), (n, d))
    f = _linalg.factor(a, scale=-2.0)
    x, second = f.inv_outer(b)
    before = second[1].copy()
    second[0] += 1.0
    np.testing.assert_array_equal(second[1], before)
    near = b.copy()
    near[k] *= 1 + 1e-13
    apart = near.copy()
    apart[-1] += 1.0  # the column loop over every element
    _, got = f.inv_outer(near)
    _, loop = f.inv_outer(apart)
    assert not np.array_equal(got[k], got[0])
    np.testing.assert_array_equal(got.view(np.uint64)[:-1], loop.view(np.uint64)[:-1])


MATVEC = [((300,), (300,), True), ((1,), (7, 300), True), ((300,), (4, 300), True),
          ((2, 300), (2, 300), False), ((10,), (10,), False), ((300,), (), True)]


@pytest.mark.parametrize("plates, rows, one", MATVEC, ids=[f"{p}-{r}" for p, r, _ in MATVEC])
def test_matvec_is_the_per_element_product(plates, rows, one, monkeypatch):
    """``matvec``: m x per element, through one BLAS product when m is one matrix broadcast
    over a large plate (einsum is then not called), through einsum otherwise."""
    d = 5
    small = _spd((1,) * len(plates) if one else plates[:-1] + (1,), d, seed=21)
    m = np.broadcast_to(small, plates + (d, d))
    x = np.random.default_rng(22).normal(size=rows + (d,))
    shape = np.broadcast_shapes(m.shape[:-1], x.shape)
    xb, mb = np.broadcast_to(x, shape), np.broadcast_to(m, shape + (d,))
    expect = np.array([mb[i] @ xb[i] for i in np.ndindex(*shape[:-1])]).reshape(shape)
    if one:
        monkeypatch.setattr(np, "einsum", None)
    got = _linalg.matvec(m, x)
    assert got.shape == shape
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-12)


def test_gaussian_with_mean_of_a_broadcast_precision_is_lambda_m():
    """eta_1 = Lambda m per element when Lambda is one matrix broadcast over the plate."""
    n, d = _linalg.VECTOR_BATCH + 10, 4
    prec = _spd((1,), d, seed=23)
    eta_2 = np.broadcast_to(-0.5 * prec, (n, d, d))
    mean = np.random.default_rng(24).normal(size=(n, d))
    eta = Gaussian.with_mean((np.zeros((n, d)), eta_2), mean)
    np.testing.assert_allclose(eta[0], np.array([prec[0] @ m for m in mean]), rtol=1e-12, atol=1e-12)
    assert eta[1] is eta_2


@pytest.mark.parametrize("path", ["vectorized", "lapack", "shared"])
@pytest.mark.parametrize("d", [1, 3, 5])
def test_draw_is_the_mean_plus_the_cholesky_factor_of_the_inverse_times_z(path, d):
    """``draw(b, z)`` = A^-1 b + C z with C = numpy's lower Cholesky factor of A^-1, per element."""
    n = _linalg.VECTOR_BATCH + 10
    a = _spd((1,) if path == "shared" else (n,), d, seed=25, spread=10.0)
    a = np.broadcast_to(a, (n, d, d)) if path == "shared" else a
    b, z = np.random.default_rng(26).normal(size=(2, n, d))
    f = _linalg.factor(a) if path == "shared" else Cholesky(a, vectorize=path == "vectorized")
    assert isinstance(f, _linalg.Shared) == (path == "shared") and f.vectorized == (path != "lapack")
    cov = np.linalg.inv(a)
    expect = np.array([c @ bi + np.linalg.cholesky(c) @ zi for c, bi, zi in zip(cov, b, z)])
    np.testing.assert_allclose(f.draw(b, z), expect, rtol=1e-12, atol=1e-12)


def test_gaussian_sample_is_mu_plus_cholesky_of_sigma_times_z():
    """sample = mu + L z with L the lower Cholesky factor of Sigma (numpy's), for a stack the
    column loop serves and for a broadcast prior."""
    n, d = _linalg.VECTOR_BATCH + 10, 3
    prec = _spd((n,), d, seed=11)
    natural = Gaussian.natural_from(np.random.default_rng(12).normal(size=(n, d)), prec)
    for eta in (natural, (natural[0], np.broadcast_to(natural[1][:1], natural[1].shape))):
        cov = np.linalg.inv(-2.0 * eta[1])
        z = np.random.default_rng(13).standard_normal((n, d))
        expect = np.einsum("...ij,...j->...i", cov, eta[0]) + np.einsum("...ij,...j->...i", np.linalg.cholesky(cov), z)
        np.testing.assert_allclose(Gaussian.sample(eta, np.random.default_rng(13)), expect, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("spread", [1e1, 1e8, 1e14], ids=["well", "ill", "near-singular"])
@pytest.mark.parametrize("d", [1, 5, 10])
def test_an_exactly_symmetric_stack_factorizes_from_one_triangle_to_the_same_bits(d, spread):
    """``exact``: scale * a from one triangle is scale * (a + a^T) / 2 to the last bit for an
    exactly symmetric a, including broken elements (NaN, inf, indefinite)."""
    a = -0.5 * _spd((300,), d, seed=14, spread=spread)
    a = 0.5 * (a + np.swapaxes(a, -1, -2))
    a[3] = -a[3]
    a[4, 0, 0] = np.nan
    a[5, -1, 0] = a[5, 0, -1] = np.inf
    with np.errstate(all="ignore"):
        one, both = Cholesky(a, scale=-2.0, exact=True), Cholesky(a, scale=-2.0)
    np.testing.assert_array_equal(one.ok, both.ok)
    np.testing.assert_array_equal(np.tril(one.lower() if one.ok.all() else np.moveaxis(one._l, -1, 0)),
                                  np.tril(both.lower() if both.ok.all() else np.moveaxis(both._l, -1, 0)))
    good = a[6:]
    one, both = Cholesky(good, scale=-2.0, exact=True), Cholesky(good, scale=-2.0)
    for x, y in zip(one.inv_outer(good[:, 0]), both.inv_outer(good[:, 0])):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(one.logdet(), both.logdet())
    if spread < 1e10:
        np.testing.assert_allclose(one.inv(), _per_element(np.linalg.inv, -2.0 * good), rtol=1e-6 * spread / 1e1,
                                   atol=1e-12)


def test_a_marked_stack_is_factorized_from_its_lower_triangle():
    """``mark_symmetric``: ``factor`` trusts the mark (it reads the lower triangle only; an
    asymmetric stack marked by mistake shows it), keeps the stack read-only, and a stack made
    writable again loses the mark."""
    a = -0.5 * _spd((300,), 4, seed=15)
    a = a + np.tril(np.full((4, 4), -0.01), -1)  # asymmetric: the mark is a promise it breaks
    lower = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    assert _linalg.mark_symmetric(a) is a and not a.flags.writeable
    np.testing.assert_array_equal(_linalg.factor(a, scale=-2.0).logdet(), Cholesky(lower, scale=-2.0).logdet())
    b = a.copy()
    _linalg.mark_symmetric(b)
    b.flags.writeable = True
    np.testing.assert_array_equal(_linalg.factor(b, scale=-2.0).logdet(), Cholesky(b, scale=-2.0).logdet())
    small = np.array(a[:3])
    assert _linalg.mark_symmetric(small) is small and small.flags.writeable  # not a column-loop stack


def test_a_mark_keeps_no_stack_alive():
    import gc
    import weakref

    a = _linalg.mark_symmetric(-0.5 * _spd((300,), 3, seed=16))
    ref = weakref.ref(a)
    assert _linalg._marked(a)
    del a
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_columns_reads_the_bits_of_any_float_width(dtype):
    x = np.tile(np.arange(3, dtype=dtype)[:, None], (1, 5))
    assert _linalg._same_columns(x)
    x[2, 4] = np.nextafter(x[2, 4], dtype(10))
    assert not _linalg._same_columns(x)
    assert not _linalg._same_columns(np.asfortranarray(x))
