"""Streams read from where the data are: every source gives the chunks (and so the bits) of
the same rows given as numpy arrays."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.errors import DataError, OptionError

ROWS = 25


def _model(n=ROWS):
    with vmp.Model("regression-free") as m:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2) * 0.1)
        with vmp.Plate("data", n):
            vmp.Gaussian("x", mu, np.eye(2) * 2.0, observed=np.zeros((n, 2)))
            vmp.Categorical("c", [0.2, 0.8], observed=np.zeros(n, int))
    return m


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(90, 2)), rng.integers(0, 2, 90)


def _reference(x):
    stream = _model().stream("data")
    for lo in range(0, len(x), ROWS):
        stream.update({"x": x[lo:lo + ROWS], "c": np.zeros(len(x[lo:lo + ROWS]), int)})
    return stream.posterior["mu"]


def _same(stream, want):
    assert stream.chunks == 4
    for a, b in zip(stream.posterior["mu"], want):
        assert np.array_equal(a, b)


def _run(source, **read):
    stream = _model().stream("data")
    stream.run(source, ROWS, **read)
    return stream


def test_arrays_and_iterators(data):
    x, _ = data
    c = np.zeros(len(x), int)
    want = _reference(x)
    _same(_run({"x": x, "c": c}), want)
    _same(_run(iter([{"x": x[lo:lo + ROWS], "c": c[lo:lo + ROWS]} for lo in range(0, 90, ROWS)])), want)
    # the closed form: precision 0.1 + 2 N, mean (2 sum x) / precision
    np.testing.assert_allclose(want[0], 2.0 * x.sum(0), rtol=1e-12)


def test_hdf5_and_zarr_blocks(data, tmp_path):
    h5py = pytest.importorskip("h5py", reason="h5py is the dev extra's HDF5 reader")
    zarr = pytest.importorskip("zarr", reason="zarr is the dev extra's chunked-array reader")
    x, _ = data
    c = np.zeros(len(x), int)
    want = _reference(x)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        _same(_run({"x": f["x"], "c": c}), want)
    z = zarr.create_array(str(tmp_path / "x.zarr"), shape=x.shape, chunks=(30, 2), dtype=float)
    z[:] = x
    _same(_run({"x": zarr.open_array(str(tmp_path / "x.zarr"), mode="r"), "c": c}), want)


def test_csv_and_parquet_files(data, tmp_path):
    x, labels = data
    want = _reference(x)
    csv = tmp_path / "x.csv"
    np.savetxt(csv, np.column_stack([x, np.zeros(len(x))]), delimiter=",", header="a,b,c", comments="")
    _same(_run(csv, columns={"x": ["a", "b"], "c": "c"}), want)
    bare = tmp_path / "x.txt"
    np.savetxt(bare, np.column_stack([x, np.zeros(len(x))]))
    _same(_run(bare, columns={"x": [0, 1], "c": 2}), want)
    pa = pytest.importorskip("pyarrow", reason="pyarrow reads Parquet row groups (the parquet extra)")
    import pyarrow.parquet as pq

    table = pa.table({"a": x[:, 0], "b": x[:, 1], "c": np.zeros(len(x), np.int64)})
    pq.write_table(table, tmp_path / "x.parquet", row_group_size=30)
    _same(_run(tmp_path / "x.parquet", columns={"x": ["a", "b"], "c": "c"}), want)


def test_bad_sources(data, tmp_path):
    x, _ = data
    stream = _model().stream("data")
    with pytest.raises(OptionError, match="rows="):
        stream.run({"x": x, "c": np.zeros(90, int)}, 0)
    with pytest.raises(DataError, match="different numbers of rows"):
        stream.run({"x": x, "c": np.zeros(80, int)}, ROWS)
    with pytest.raises(DataError, match="one observed node"):
        stream.run(x, ROWS)
    with pytest.raises(DataError, match="not found"):
        stream.run(tmp_path / "none.csv", ROWS)
    csv = tmp_path / "x.csv"
    np.savetxt(csv, np.column_stack([x, np.full(len(x), 0.5)]), delimiter=",", header="a,b,c", comments="")
    with pytest.raises(OptionError, match="columns="):
        stream.run(csv, ROWS)
    with pytest.raises(DataError, match="no column 'd'"):
        stream.run(csv, ROWS, columns={"x": ["a", "d"], "c": "c"})
    with pytest.raises(DataError, match="whole numbers"):
        stream.run(csv, ROWS, columns={"x": ["a", "b"], "c": "c"})
    assert stream.chunks == 0


def test_lazy_chunks_stay_in_the_file(data, tmp_path):
    """``lazy=True``: a chunk of an HDF5 dataset is a Block of its rows, fitted by the Chunked
    executor from the file, with the bits of the numpy chunks."""
    h5py = pytest.importorskip("h5py", reason="h5py is the dev extra's HDF5 reader")
    from vmp.graph.data import Block

    x, _ = data
    c = np.zeros(len(x), int)
    want = _reference(x)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        stream = _model().stream("data")
        first = next(stream.read({"x": f["x"], "c": c}, ROWS, lazy=True))
        assert isinstance(first["x"], Block) and first["x"].shape == (ROWS, 2)
        assert np.array_equal(first["x"][[0, 3]], x[[0, 3]]) and np.array_equal(first["x"][2:5], x[2:5])
        stream.run({"x": f["x"], "c": c}, ROWS, lazy=True)
        assert stream.chunks == 4
    for a, b in zip(stream.posterior["mu"], want):
        np.testing.assert_allclose(a, b, rtol=1e-13)
