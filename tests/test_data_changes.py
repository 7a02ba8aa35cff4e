"""Out-of-core data that change under a fit: a memmap's or an HDF5 dataset's file truncated,
rewritten or removed between steps, or a zarr store's chunk removed or rewritten or its array
resized, is a DataError naming the node, never zeros fitted as data (HDF5, zarr) or a SIGBUS (a
memmap read past the file's end)."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

import vmp

N = 400


def _model(data):
    with vmp.Model("normal_gamma") as model:
        mu = vmp.Normal("mu", 0.0, 1e-2)
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", N):
            vmp.Normal("x", mu, tau, observed=data)
    return model


def _values() -> np.ndarray:
    return np.random.default_rng(0).normal(3.0, 2.0, size=N)


def _truncate(path):
    os.truncate(path, os.path.getsize(path) // 2)


def _rewrite(path):  # the same size, other contents
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) - 8 * N)
        fh.write(np.zeros(N).tobytes())


def _memmap(tmp_path):
    path = tmp_path / "x.f8"
    _values().tofile(path)
    return path, np.memmap(path, dtype=float, mode="r", shape=(N,))


#: a batch fit reading the data in blocks, and a minibatch fit reading its rows
FITS = pytest.mark.parametrize("options", [dict(method="batch", executor=vmp.Chunked(size=100)),
                                           dict(method="stochastic", subsample=vmp.Minibatch("data", 50))],
                               ids=["batch", "minibatch"])


def _changed_at_step_2(data, path, change, match: str, options: dict) -> None:
    """A fit of ``data`` whose source ``change(path)`` alters after step 2 stops before step 3
    with a DataError matching ``match``."""
    steps = []

    def callback(t, fit):
        steps.append(t)
        if t == 2:
            time.sleep(0.01)  # (a file system whose times count in coarse ticks)
            change(path)

    with pytest.raises(vmp.DataError, match=match):
        _model(data).fit(iterations=6, tol=0.0, callback=callback, progress=False, **options)
    assert steps == [1, 2]


@pytest.mark.parametrize("change,words", [(_truncate, "changed size"), (_rewrite, "written since"),
                                          (os.remove, "cannot be read")], ids=["truncated", "rewritten", "removed"])
@FITS
def test_a_memmap_whose_file_changes_under_a_fit_is_a_data_error(tmp_path, change, words, options):
    path, data = _memmap(tmp_path)
    _changed_at_step_2(data, path, change, f"node 'x': its data file .*{words}", options)


def test_an_hdf5_file_truncated_under_a_fit_is_a_data_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "x.h5"
    with h5py.File(path, "w") as f:
        f["x"] = _values()
    with h5py.File(path, "r") as f:
        model = _model(f["x"])
        with pytest.raises(vmp.DataError, match="node 'x': its data file .*changed size"):
            model.fit(iterations=6, tol=0.0, executor=vmp.Chunked(size=100), progress=False,
                      callback=lambda t, fit: t != 2 or _truncate(path))


def test_data_left_alone_fit_as_in_memory(tmp_path):
    _, data = _memmap(tmp_path)
    lazy = _model(data).fit(iterations=4, tol=0.0, executor=vmp.Chunked(size=100), progress=False)
    memory = _model(_values()).fit(iterations=4, tol=0.0, progress=False)
    np.testing.assert_allclose(lazy.elbo, memory.elbo, rtol=1e-12)


def _zarr(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "x.zarr"
    data = zarr.create_array(str(path), shape=(N,), chunks=(100,), dtype="f8")
    data[:] = _values()
    return path, zarr.open_array(str(path), mode="r")


def _chunk_removed(path):  # zarr reads a missing chunk as its fill value (zeros)
    os.remove(next(p for p in sorted((path / "c").iterdir())))


def _resized(path):
    import zarr

    zarr.open_array(str(path), mode="r+").resize((N // 2,))


def _chunk_rewritten(path):
    import zarr

    zarr.open_array(str(path), mode="r+")[:100] = 0.0


@pytest.mark.parametrize("change,words", [(_chunk_removed, "changed size"), (_resized, "changed size|written since"),
                                          (_chunk_rewritten, "changed size|written since")],
                         ids=["chunk removed", "resized", "chunk rewritten"])
@FITS
def test_a_zarr_store_that_changes_under_a_fit_is_a_data_error(tmp_path, change, words, options):
    path, data = _zarr(tmp_path)
    _changed_at_step_2(data, path, change, f"node 'x': its data store .*({words})", options)


def test_a_zarr_store_left_alone_fits_as_in_memory(tmp_path):
    _, data = _zarr(tmp_path)
    lazy = _model(data).fit(iterations=4, tol=0.0, executor=vmp.Chunked(size=100), progress=False)
    memory = _model(_values()).fit(iterations=4, tol=0.0, progress=False)
    np.testing.assert_allclose(lazy.elbo, memory.elbo, rtol=1e-12)
