"""The contraction helper: chunking along a large axis gives the same numbers as plain einsum."""
from __future__ import annotations

import numpy as np
import pytest

from vmp.factors import terms


@pytest.mark.parametrize("subs", ["Bab,Aa,Ab,AB->", "Aa,Ab,AB->Bab", "Bab,Aa,Ab->AB", "Bab,AB->Bab"])
def test_chunked_contraction_matches_einsum(subs):
    rng = np.random.default_rng(0)
    n, k, d = 1000, 4, 3
    arrays = {"Bab": rng.normal(size=(k, d, d)), "Aa": rng.normal(size=(n, d)), "Ab": rng.normal(size=(n, d)),
              "AB": rng.random((n, k))}
    ops = [arrays[s] for s in subs.split("->")[0].split(",")]
    expected = np.einsum(subs, *ops)
    plans = terms.PlanCache(max_intermediate=500)
    got = terms.contract(subs, *ops, plans=plans)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    if subs != "Bab,AB->Bab":
        assert plans.plan(subs, ops).letter == "A", "a large intermediate must be chunked along the data axis"


def test_contract_to_broadcasts_letters_no_input_has():
    a = np.arange(3.0)
    out = terms.contract_to([(a, "B")], "AB", (4, 3))
    assert out.shape == (4, 3) and np.all(out == a)


SYMMETRIC = ["Aa,Ab,AB->Bab", "Bab,Aa,Ab->AB", "Aa,Ab->ab", "Bab,Aa,Ab,AB->", "Bba,Aa,Ab,AB->B", "Aa,Ab,AB->Bba",
             "Aa,Ab,Bab->AB"]


@pytest.mark.parametrize("chunked", [False, True], ids=["whole", "chunked"])
@pytest.mark.parametrize("subs", SYMMETRIC)
def test_symmetric_pairs_match_einsum(subs, chunked):
    """x (x) x passed as one array twice is contracted over its unique pairs; the result equals
    plain einsum for any mate M (not only a symmetric one) and any output order."""
    rng = np.random.default_rng(1)
    n, k, d = 3000, 4, 5
    x = rng.normal(size=(n, d))
    arrays = {"Bab": rng.normal(size=(k, d, d)), "Bba": rng.normal(size=(k, d, d)), "Aab": rng.normal(size=(n, d, d)),
              "AB": rng.random((n, k))}
    ops = [x if s in ("Aa", "Ab") else arrays[s] for s in subs.split("->")[0].split(",")]
    expected = np.einsum(subs, *[o.copy() for o in ops])
    plans = terms.PlanCache(max_intermediate=2000 if chunked else terms.MAX_INTERMEDIATE)
    plan = plans.plan(subs, ops)
    assert plan.symmetric is not None, "the pair x_a x_b of one array must be contracted over its unique pairs"
    assert (plan.letter == "A") is chunked
    got = terms.contract(subs, *ops, plans=plans)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("subs, same", [("Aa,Ab,Ba,Bb->", True), ("Aa,Ab,AB->Bab", False), ("Aa,Aa,AB->Ba", True),
                                        ("Aa,Ab,Aab->A", True), ("Aa,Ab,AB->Ba", True)])
def test_symmetric_rewrite_only_where_it_holds(subs, same):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3000, 3))
    shapes = {"Ba": (4, 3), "Bb": (4, 3), "AB": (3000, 4), "Aab": (3000, 3, 3)}
    inputs = subs.split("->")[0].split(",")
    ops = [x if s in ("Aa", "Ab") and (same or i == 0) else x.copy() if s in ("Aa", "Ab") else rng.normal(size=shapes[s])
           for i, s in enumerate(inputs)]
    assert terms._symmetric(subs, ops) is None
    np.testing.assert_allclose(terms.contract(subs, *ops), np.einsum(subs, *ops), rtol=1e-12)


@pytest.mark.parametrize("subs", ["Aa,Aa->", "Aa,aA->", "ABa,BAa->", "Aa,Ab,ab->"])
def test_a_contraction_to_a_number_is_the_sum_of_products(subs):
    """A pair contracted over every letter (q(beta)'s prior term, 20 x 2,000) leaves the matrix
    product for a dot over aligned vectors: the plain sum of products, operands in any order."""
    rng = np.random.default_rng(15)
    sizes = {"A": 20, "B": 3, "a": 2000, "b": 4}
    ops = [rng.normal(size=tuple(sizes[ch] for ch in term)) for term in subs.split("->")[0].split(",")]
    got = terms.contract(subs, *ops, plans=terms.PlanCache())
    assert np.shape(got) == ()
    np.testing.assert_allclose(got, np.einsum(subs, *ops), rtol=1e-12)


@pytest.mark.parametrize("first_same", [True, False])
def test_plans_differ_for_one_array_twice_and_two_arrays(first_same):
    """x_a x_b M_ab of one x goes through its unique pairs; the same subscripts and shapes with
    two different arrays must not reuse that plan (nor the plain plan serve x twice), in either
    order of first use."""
    plans = terms.PlanCache()
    rng = np.random.default_rng(4)
    x, y, m = rng.normal(size=(5000, 4)), rng.normal(size=(5000, 4)), rng.normal(size=(4, 4))
    calls = [(x, x), (x, y)] if first_same else [(x, y), (x, x)]
    for a, b in calls:
        np.testing.assert_allclose(terms.contract("na,nb,ab->", a, b, m, plans=plans),
                                   np.einsum("na,nb,ab->", a, b, m), rtol=1e-12)


def test_plan_cache_is_bounded():
    """The last ``size`` plans are kept, least recently used dropped first; size 0 keeps none
    and contracts to the same numbers."""
    plans, none = terms.PlanCache(3), terms.PlanCache(0)
    a = np.ones((300, 200))
    for m in range(1, 6):
        np.testing.assert_array_equal(terms.contract("ij,jk->ik", a[:m * 10], a.T, plans=plans),
                                      terms.contract("ij,jk->ik", a[:m * 10], a.T, plans=none))
    assert len(plans.plans) == 3 and not none.plans and not none.routes
    assert [k[1] for k in plans.plans] == [(30, 200), (40, 200), (50, 200)]


def test_compact_keeps_the_broadcast_source():
    small = np.arange(4.0)
    assert terms.compact(np.broadcast_to(small[:, None], (4, 50))).shape == (4, 1)


@pytest.mark.parametrize("n", [10, 2_000, 100_000])  # np.vdot, einsum below DIRECT, above
def test_inner_product_with_broadcast_gradients(n):
    rng = np.random.default_rng(4)
    value = rng.normal(size=(n, 3))
    for grad in (rng.normal(size=3), rng.normal(size=(n, 1)), np.broadcast_to(rng.normal(size=3), (n, 3)),
                 rng.normal(size=(n, 3))):
        expected = float(np.sum(np.broadcast_to(grad, value.shape) * value))
        assert terms.inner_product(grad, value) == pytest.approx(expected, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("subs", ["Aa,Ab,AB->Bab", "Bab,Aa,Ab->AB"])
def test_symmetric_pairs_keep_float32(subs):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3000, 4)).astype(np.float32)
    other = {"AB": rng.random((3000, 5)).astype(np.float32), "Bab": rng.normal(size=(5, 4, 4)).astype(np.float32)}
    ops = [x if s in ("Aa", "Ab") else other[s] for s in subs.split("->")[0].split(",")]
    got = terms.contract(subs, *ops, plans=terms.PlanCache(max_intermediate=2000))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.einsum(subs, *[o.astype(float) for o in ops]), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kinds", ["full", "broadcast", "full broadcast full", "broadcast full broadcast",
                                   "scalar scalar", "view full", "view view broadcast"])
@pytest.mark.parametrize("n", [50, 50_000])
def test_accumulate_is_the_plain_sum(kinds, n):
    """sum_i g_i of full and broadcast partial derivatives (and 0-d ones): written into a full
    array that owns its memory, never into a view or a broadcast (they may be moments); small
    ones (at most DIRECT elements) into a new array."""
    from vmp.factors.terms import accumulate

    rng = np.random.default_rng(0)
    parts = []
    for i, kind in enumerate(kinds.split()):
        if kind == "scalar":
            g = np.asarray(rng.normal())
        elif kind == "full":
            g = rng.normal(size=(n, 4))
        elif kind == "view":
            g = rng.normal(size=(n, 8))[:, ::2]
        else:
            g = np.broadcast_to(rng.normal(size=(1, 4)) if i % 2 else rng.normal(size=(n, 1)), (n, 4))
        parts.append(g)
    expected = sum(g.copy() for g in parts)
    before = [g.copy() for g in parts]
    owned = [k for k, g in enumerate(parts) if g.flags.owndata and g.ndim and g.size > terms.DIRECT]
    out = accumulate(parts)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)
    for k, (g, b) in enumerate(zip(parts, before)):
        assert np.array_equal(g, b) or (owned and k == owned[0] and out is g)
    assert not owned or out is parts[owned[0]]
    if n > terms.DIRECT and all(terms.compact(g).size < g.size for g in parts):
        assert terms.compact(out).size < out.size  # broadcast parts sum to a broadcast


@pytest.mark.parametrize("subs", ["ab,bc->ac", "ab,bc->ca", "Aa,Ba->AB", "Aa,Ba->BA", "abc,cbd->ad", "abc,cbd->da",
                                  "Bab,Aa,Bb->AB", "Bab,Aa,Ab->AB", "Aa,Ab,AB->Bab", "Bab,Bab->B", "ab,ab->a",
                                  "aab,bc->ac", "ab,bc->abc", "ab,cd->abcd", "abc,bd->ad", "Aa,AB->aB"])
def test_path_steps_by_matrix_products_equal_einsum(subs):
    """Each pairwise step that is a matrix product goes to np.matmul in the order wanted; the
    others (batch letters, repeated letters, letters summed from one operand, outer products)
    stay with einsum: the result is einsum's."""
    rng = np.random.default_rng(11)
    size = dict(zip("abcdAB", (3, 4, 5, 2, 60, 6)))
    inputs = subs.split("->")[0].split(",")
    ops = [rng.normal(size=[size[ch] for ch in s]) for s in inputs]
    path = np.einsum_path(subs, *ops, optimize="greedy")[0]
    np.testing.assert_allclose(terms._run_path(subs, ops, path), np.einsum(subs, *ops), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, small", [((50_000, 10), (1, 10)), ((50_000, 10), (1, 1)), ((3_000, 10, 4), (1, 10, 4)),
                                          ((3_000, 10, 4), (1, 1, 4)), ((3_000, 10, 4), (1, 10, 1)),
                                          ((50_000, 7), (50_000, 1)), ((30, 10), (1, 10)), ((40_001, 3), (1, 3)),
                                          ((9_724, 5, 5), (1, 5, 5)), ((9_724, 5), (1, 5)), ((4_099, 9), (1, 9))])
def test_plus_adds_a_broadcast_by_long_rows_with_the_same_bits(shape, small):
    """a + b where one side is a broadcast: the same bits as numpy's a + b, either way round,
    into a new array or in place."""
    rng = np.random.default_rng(12)
    full = rng.normal(size=shape)
    b = np.broadcast_to(rng.normal(size=small), shape)
    np.testing.assert_array_equal(terms.plus(full, b), full + b)
    np.testing.assert_array_equal(terms.plus(b, full), b + full)
    expected = full + b
    assert terms.plus(full, b, out=full) is full
    np.testing.assert_array_equal(full, expected)


def test_large_plate_paths_give_the_reference_messages_and_bound():
    """Above DIRECT elements a message's coefficients go into its contractions, its partial
    derivatives are summed in place, the data plate's sums are kept between updates and the bound
    reuses the summed messages: along a sweep of a mixture with N x K > DIRECT, the messages and
    the bound equal the reference evaluator's."""
    from models import gaussian_mixture
    from vmp.graph.compiled import CompiledFactor
    from vmp.graph.leaves import Context
    from vmp.inference.engine import Engine

    rng = np.random.default_rng(13)
    x = np.concatenate([rng.normal(loc=c, size=(1500, 3)) for c in (-4.0, 0.0, 4.0)])
    model = gaussian_mixture(x, 12)
    model.fit(iterations=3, seed=0, progress=False)
    assert model["z"].plate_shape[0] * 12 > terms.DIRECT
    engine = Engine(model)
    reference = {name: CompiledFactor(f.child, strategies=()) for name, f in engine.factors.items()}
    state = model.state
    for node in engine.update_order():
        for f in engine.touching[node.name]:
            ctx = Context(state=state)
            fast = f.messages(node, engine.factor_weight(f), ctx=ctx)
            plain = reference[f.child.name].messages(node, engine.factor_weight(f), ctx=ctx)
            for a, b in zip(fast, plain):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))
        new, moments = engine.coordinate(state, node)
        state = state.updated({node.name: (new, moments)})
        for name, f in engine.factors.items():
            ctx = Context(state=state)
            assert f.elog(engine.factor_weight(f), ctx=ctx) == pytest.approx(
                reference[name].elog(engine.factor_weight(f), ctx=ctx), rel=1e-12)


def test_array_times_scalar_is_einsum_bit_for_bit():
    rng = np.random.default_rng(3)
    y, tau = rng.normal(size=(500, 4, 4)), np.float64(1.7)
    got = terms.contract_to([(y, "Aab"), (tau, "")], "Aab", y.shape)
    np.testing.assert_array_equal(got, np.einsum("Aab,->Aab", y, tau))
    np.testing.assert_array_equal(terms.contract_to([(y, "Aab"), (tau, "")], "Aba", y.shape),
                                  np.einsum("Aab,->Aba", y, tau))


def test_inner_product_of_arrays_in_either_order():
    """<a, b> over N x K arrays written by rows or by columns (a folded message is written by
    columns), in any combination: the plain sum of products."""
    rng = np.random.default_rng(14)
    a, b = rng.normal(size=(20_000, 5)), rng.normal(size=(20_000, 5))
    expect = float(np.sum(a * b))
    for x in (a, np.asfortranarray(a)):
        for y in (b, np.asfortranarray(b)):
            assert terms.inner_product(x, y) == pytest.approx(expect, rel=1e-12)


def test_a_prior_precision_over_a_large_plate_stays_a_broadcast():
    """Nothing to contract (one operand with the output's letters) returns the operand: a
    Gaussian prior's matrix message over a plate too large for one einsum (chunked) stays one
    K x K matrix broadcast along the plate, so its factorization is done once (_linalg.Shared)."""
    from vmp.families import _linalg
    from vmp.factors.terms import MAX_INTERMEDIATE, contract_to
    from vmp.graph.leaves import Context
    from vmp.inference.engine import Engine
    from vmp.inference.state import State
    from vmp.models import matrix_factorization

    k = 10
    n = MAX_INTERMEDIATE // (k * k) + 1000
    x = np.broadcast_to(np.eye(k), (n, k, k))
    out = contract_to([(x, "Aab")], "Aab", x.shape)
    assert out.strides == x.strides and np.shares_memory(out, x)
    owned = np.ones((3, 2))
    view = contract_to([(owned, "Ab")], "Ab", owned.shape)
    assert not view.flags.owndata  # callers sum in place only into arrays that own their data
    np.testing.assert_array_equal(terms.accumulate([view, owned]), 2.0 * owned)
    np.testing.assert_array_equal(owned, 1.0)
    rng = np.random.default_rng(0)
    users, items = rng.integers(0, 50, 500), rng.integers(0, n, 500)
    model = matrix_factorization(users, items, rng.normal(size=500), n_factors=k, n_users=50, n_items=n)
    prior = Engine(model).factors["v"].messages(model["v"], ctx=Context(state=State()))
    assert prior[1].shape == (n, k, k) and prior[1].strides[0] == 0
    np.testing.assert_array_equal(prior[1][123], -0.5 * np.eye(k))
    assert isinstance(_linalg.factor(prior[1], scale=-2.0), _linalg.Shared)
