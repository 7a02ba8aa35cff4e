"""A worker's partition of the data (vmp/graph/data.py: Rows; partition_model.partition_blob): only its
rows travel or are read, from memory, a memmap, HDF5 or zarr; reading any other row is an error;
the model a partition's holder unpickles evaluates its rows as the whole model does."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from models import lda
from tests.helpers import factorized_mixture
from vmp.graph.data import Rows, take_rows
from vmp.graph.leaves import Context
from vmp.inference.engine import Engine
from vmp.inference.partition_model import partition_blob
from vmp.inference.init import initialize
from vmp.inference.state import State


def test_rows_read_only_their_rows():
    x = np.arange(40.0).reshape(20, 2)
    rows = Rows(x, 0, 5, 12)
    np.testing.assert_array_equal(take_rows(rows, np.arange(6, 9)), x[6:9])
    np.testing.assert_array_equal(take_rows(rows, np.array([5, 7, 11])), x[[5, 7, 11]])
    np.testing.assert_array_equal(rows[5:12], x[5:12])
    for outside in (np.array([4, 6]), np.array([11, 12]), slice(0, 8)):
        with pytest.raises(IndexError, match="5..12"):
            rows[outside]
    with pytest.raises(IndexError, match="whole array"):
        np.asarray(rows)
    assert len(pickle.dumps(rows)) < 7 * 16 + 600  # 7 rows of 16 bytes, not 20


def test_rows_along_another_axis_and_as_integers():
    w = np.arange(30).reshape(3, 10)
    rows = Rows(w, 1, 2, 6)
    np.testing.assert_array_equal(rows[:, np.array([2, 5])], w[:, [2, 5]])
    np.testing.assert_array_equal(take_rows(rows.astype(np.int64), np.arange(3, 6), axis=1), w[:, 3:6])


def test_files_are_opened_on_the_worker(tmp_path):
    """A memmap, an HDF5 dataset and a zarr array pickle as where to read, not as their rows."""
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    x = np.random.default_rng(0).normal(size=(5000, 3))
    mm = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
    mm[:] = x
    mm.flush()
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=x.shape, chunks=(1000, 3), dtype="f8")
    z[:] = x
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        for data in (np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape), f["x"], z):
            blob = pickle.dumps(Rows(data, 0, 1000, 4000))
            assert len(blob) < 3000 * 24 / 4, type(data)
            back = pickle.loads(blob)
            np.testing.assert_array_equal(take_rows(back, np.arange(1500, 1600)), x[1500:1600])


@pytest.mark.parametrize("case", ["mixture", "lda"])
def test_a_partition_evaluates_its_rows_as_the_whole_model(case):
    """The holder's model (data rows lo..hi only) gives the message of those rows bit for bit,
    and its pickle is a fraction of the whole model's (a quarter of the rows: LDA's words, token
    counts and document indices are all cut; about 0.16 of the whole, 0.78 before they were)."""
    rng = np.random.default_rng(1)
    if case == "mixture":
        model, plate, node, most = factorized_mixture(rng.normal(size=(4000, 3)), 3), "data", "Lambda", 0.6
    else:
        d, w = rng.integers(200, size=6000), rng.integers(50, size=6000)
        model, plate, node, most = lda(d, w, np.ones(6000), 3, n_words=50), "tokens", "beta", 0.25
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    lo, hi = 1000, 2500
    local = {k: tuple(np.ascontiguousarray(m[lo:hi]) for m in state.moments[k]) for k in ("z",)}
    ctx = Context(subset={plate: np.arange(lo, hi)}, overrides=local)
    blob = partition_blob(model, {plate: (lo, hi)})
    assert len(blob) < most * len(pickle.dumps(model))
    part = pickle.loads(blob)
    assert isinstance(part[("x" if case == "mixture" else "w")].data, Rows)
    moments = State(moments={k: v for k, v in state.moments.items() if k != "z"})
    holder = Engine(part)
    here = engine.children(moments, engine.nodes[node], ctx)
    there = holder.children(moments, holder.nodes[node], ctx)
    for a, b in zip(here, there):
        np.testing.assert_array_equal(a, b)


def test_sparse_sums_add_as_dense_ones():
    """Columns: a sum zero outside some columns; sums of them (and with dense arrays) equal the
    dense sums bit for bit, and only mostly-zero large arrays are made sparse."""
    from vmp.inference.sparse import Columns, dense, sparse

    rng = np.random.default_rng(0)
    arrays = []
    for _ in range(5):
        a = np.zeros((3, 3000))
        cols = rng.choice(3000, size=rng.integers(1, 400), replace=False)
        a[:, cols] = rng.normal(size=(3, cols.size))
        arrays.append(a)
    parts = [sparse(a) for a in arrays]
    assert all(isinstance(p, Columns) for p in parts)
    assert sum(p.nbytes for p in parts) < sum(a.nbytes for a in arrays) / 4
    total, reference = parts[0], arrays[0]
    for p, a in zip(parts[1:], arrays[1:]):
        total, reference = total + p, reference + a
    np.testing.assert_array_equal(dense(total), reference)
    np.testing.assert_array_equal(arrays[0] + parts[1], arrays[0] + arrays[1])
    np.testing.assert_array_equal(parts[1] + arrays[0], arrays[1] + arrays[0])
    assert not isinstance(sparse(rng.normal(size=(3, 3000))), Columns)  # dense: sent as it is
    assert not isinstance(sparse(np.zeros((3, 10))), Columns)  # small: sent as it is
    assert dense((parts[0], 1.0))[1] == 1.0


def test_a_view_of_a_memmap_is_copied_not_reopened(tmp_path):
    x = np.arange(60.0).reshape(20, 3)
    mm = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
    mm[:] = x
    mm.flush()
    view = np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape)[:, 1:]
    back = pickle.loads(pickle.dumps(Rows(view, 0, 4, 9)))
    np.testing.assert_array_equal(back[4:9], x[4:9, 1:])


@pytest.mark.parametrize("grouped", [True, False])
def test_a_holder_plan_gives_the_contexts_of_its_rows(grouped):
    """MinibatchPlan.part/on_part: the plan of documents lo..hi (with their tokens only) gives the
    Context of any of its drawn documents that the whole plan gives (subsets and owners, tokens
    by their global index); spans: the tokens' range when they are grouped by document, None
    when they are not contiguous."""
    import vmp

    rng = np.random.default_rng(4)
    d = np.sort(rng.integers(40, size=900)) if grouped else rng.integers(40, size=900)
    model = lda(d, rng.integers(30, size=900), np.ones(900), 3, n_documents=40, n_words=30)
    engine = Engine(model)
    plan = vmp.Minibatch("documents", 8).prepare(engine, np.random.default_rng(0))
    lo, hi = 13, 29
    mine = type(plan).on_part(model, plan.part(lo, hi))
    rows = np.array([13, 14, 20, 28])
    a, b = plan.context(rows), mine.context(rows)
    for name in a.subset:
        np.testing.assert_array_equal(a.subset[name], b.subset[name])
        np.testing.assert_array_equal(a.owner[name], b.owner[name])
    tokens = np.flatnonzero((d >= lo) & (d < hi))
    span = plan.spans(lo, hi)["tokens"]
    if grouped:
        assert span == (tokens[0], tokens[-1] + 1)
    else:
        assert span is None


@pytest.mark.parametrize("grouped", [True, False])
def test_a_holder_plan_sends_consecutive_tokens_as_a_range(grouped):
    """compact_part: a holder's plan pickles its tokens' positions as two numbers when they are
    consecutive (grouped by document), and unpickles to the same plan; otherwise as they are."""
    import vmp
    from vmp.inference.partition_model import compact_part

    rng = np.random.default_rng(4)
    d = np.sort(rng.integers(40, size=900)) if grouped else rng.integers(40, size=900)
    model = lda(d, rng.integers(30, size=900), np.ones(900), 3, n_documents=40, n_words=30)
    plan = vmp.Minibatch("documents", 8).prepare(Engine(model), np.random.default_rng(0))
    part = plan.part(13, 29)
    sent = pickle.dumps(compact_part(part))
    back = pickle.loads(sent)
    for a, b in zip(part["linked"]["tokens"], back["linked"]["tokens"]):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    order = part["linked"]["tokens"][0]
    assert (len(sent) < len(pickle.dumps(part)) - order.nbytes + 100) == grouped


def test_a_worker_copies_only_arrays_it_did_not_allocate():
    """Moments unpickled from a message (views of its buffer) are copied into numpy's memory for
    the same bits run to run; a local kept on the worker (numpy's already) is read in place, not
    copied for every task (at N = 10^7 those copies were half a worker's sweep)."""
    import pickle

    from vmp.inference.partitioned_worker import _in_numpy_memory

    kept = np.arange(12.0).reshape(3, 4).copy()
    received = pickle.loads(pickle.dumps(kept, protocol=5), buffers=None)
    view = np.frombuffer(kept.tobytes(), dtype=float).reshape(3, 4)
    out = _in_numpy_memory({"z": (kept, view), "mu": (received,)})
    assert out["z"][0] is kept
    assert out["z"][1] is not view and out["z"][1].flags.owndata
    np.testing.assert_array_equal(out["z"][1], view)
    assert out["mu"][0].flags.owndata


def test_a_holder_reuses_its_rows_sums_between_the_parents_and_the_bound():
    """A holder's batch evaluations of its own rows (``Context.stable``) may keep the data-plate
    sums (sum_n r_nk x_n x_n^T, sum_n r_nk x_n, sum_n r_nk) between the messages to mu and
    Lambda and the bound, as the whole model does: twice over, the same numbers as evaluations
    that keep nothing and as the reference evaluator's."""
    from vmp.inference.partition import rows_bound, rows_context

    rng = np.random.default_rng(2)
    model = factorized_mixture(rng.normal(size=(20000, 3)) + rng.integers(0, 4, size=(20000, 1)), 4)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(0))
    lo, hi = 5000, 15000
    globals_ = State(moments={k: v for k, v in state.moments.items() if k != "z"})
    local = {"z": tuple(np.ascontiguousarray(m[lo:hi]) for m in state.moments["z"])}
    natural = {"z": tuple(np.ascontiguousarray(m[lo:hi]) for m in state.natural["z"])}

    def sweep(part, stable):
        out = [part.children(globals_, part.nodes[k], rows_context("data", lo, hi, local, globals_, stable=stable))
               for k in ("mu", "Lambda")]
        ctx = rows_context("data", lo, hi, local, globals_, stable=stable)
        return out, rows_bound(part, part.model.plates["data"], ctx, natural)

    def holder(strategies=None):
        part_model = pickle.loads(partition_blob(model, {"data": (lo, hi)}))
        part_model.compile(strategies=strategies)
        return Engine(part_model)

    kept = holder()
    runs = [sweep(kept, True), sweep(kept, True), sweep(holder(), False), sweep(holder(()), True)]
    for out, bound in runs[1:]:
        for a, b in zip(runs[0][0], out):
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-9)
        assert runs[0][1] == pytest.approx(bound, rel=1e-12)


def test_rows_give_all_their_rows_as_one_read_only_array():
    x = np.arange(40.0).reshape(10, 4)
    rows = Rows(x, 0, 2, 7)
    whole = take_rows(rows, np.arange(2, 7))
    assert whole is take_rows(rows, np.arange(2, 7)) and not whole.flags.writeable
    np.testing.assert_array_equal(whole, x[2:7])
    part = take_rows(rows, np.arange(3, 5))
    assert part.flags.writeable and not np.shares_memory(part, whole)
