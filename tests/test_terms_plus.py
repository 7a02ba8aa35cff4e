"""``terms.plus`` (a broadcast add in long rows, ``_add_rows``) is numpy's a + b to the bit for
every pattern: any axes broadcast on either side, sizes around a whole number of ADD_ROW rows
(and the tail a unit at a time), into a new array, in place, or into a non-contiguous ``out``."""
from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings, strategies as st

from vmp.factors import terms


@st.composite
def _case(draw):
    """(shape, which axes of each side are broadcast, ADD_ROW, DIRECT, how ``out`` is given)."""
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=4)))
    lead = draw(st.integers(1, 400))
    shape = (lead,) + shape
    mask_a = tuple(draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape))))
    mask_b = tuple(draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape))))
    row = draw(st.sampled_from([1, 2, 3, 7, 16, 50, 64, 127, terms.ADD_ROW]))
    out = draw(st.sampled_from(["new", "a", "b", "strided", "fortran"]))
    return shape, mask_a, mask_b, row, out


def _side(rng, shape, mask):
    small = tuple(1 if m else n for n, m in zip(shape, mask))
    return np.broadcast_to(rng.normal(size=small), shape)


@settings(max_examples=300, deadline=None)
@given(_case(), st.integers(0, 2**32 - 1))
def test_plus_is_numpys_sum_bit_for_bit(case, seed):
    shape, mask_a, mask_b, row, how = case
    rng = np.random.default_rng(seed)
    a, b = _side(rng, shape, mask_a), _side(rng, shape, mask_b)
    if how == "a":
        a = a.copy()
    elif how == "b":
        b = b.copy()
    expected = a + b
    out = {"new": None, "a": a, "b": b, "strided": np.empty(shape + (2,))[..., 0],
           "fortran": np.empty(shape, order="F")}[how]
    with mock.patch.object(terms, "ADD_ROW", row), mock.patch.object(terms, "DIRECT", 8):
        got = terms.plus(a, b, out=out)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if out is not None:
        assert got is out
    np.testing.assert_array_equal(got, expected)


def test_plus_at_its_own_thresholds():
    """The thresholds as shipped: unit sizes that divide ADD_ROW and that do not, a tail of part
    of a row, just above DIRECT elements."""
    rng = np.random.default_rng(3)
    for shape in [(terms.DIRECT // 7 + 1, 7), (terms.ADD_ROW + 1, 4), (3, terms.ADD_ROW + 5), (4097, 3, 3)]:
        full = rng.normal(size=shape)
        for small in [(1,) + shape[1:], (1,) * (len(shape) - 1) + shape[-1:]]:
            b = np.broadcast_to(rng.normal(size=small), shape)
            np.testing.assert_array_equal(terms.plus(full, b), full + b)
            np.testing.assert_array_equal(terms.plus(b, full.copy(), out=None), b + full)


def test_plus_keeps_numpys_result_type():
    """float32 + float32 is float32 with numpy's bits (the long-row path formed float64)."""
    rng = np.random.default_rng(4)
    full = rng.normal(size=(terms.DIRECT, 4)).astype(np.float32)
    b = np.broadcast_to(rng.normal(size=(1, 4)).astype(np.float32), full.shape)
    got = terms.plus(full, b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, full + b)
