"""A stream on a Dask cluster: each chunk's fit runs on the workers, and with ``lazy=True`` a
chunk of an HDF5 dataset is read there from the file (the driver sends no rows of it);
population VB's minibatches there give the serial fit's posterior."""
from __future__ import annotations

import numpy as np
import pytest

import vmp

distributed = pytest.importorskip("distributed", reason="the dask extra runs fits on a cluster")
h5py = pytest.importorskip("h5py", reason="h5py is the dev extra's HDF5 reader")

ROWS = 2500


def _model(n=ROWS):
    with vmp.Model("mean") as m:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2) * 0.1)
        with vmp.Plate("data", n):
            vmp.Gaussian("x", mu, np.eye(2) * 2.0, observed=np.zeros((n, 2)))
    return m


def test_chunks_are_read_on_the_workers(tmp_path):
    x = np.random.default_rng(0).normal(size=(4 * ROWS, 2))
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=50)
    client = distributed.Client(cluster)
    try:
        sent = {}
        for lazy in (False, True):
            executor = vmp.DaskExecutor(client)
            with h5py.File(tmp_path / "x.h5", "r") as f:
                stream = _model().stream("data", executor=executor)
                stream.run({"x": f["x"]}, ROWS, lazy=lazy)
            assert stream.chunks == 4
            # the closed form: precision 0.1 + 2 N, natural mean 2 sum x
            np.testing.assert_allclose(stream.posterior["mu"][0], 2.0 * x.sum(0), rtol=1e-12)
            sent[lazy] = executor.traffic["sent"]
        population = _population(x, vmp.DaskExecutor(client))
    finally:
        client.close()
        cluster.close()
    assert sent[True] <= sent[False] - 0.9 * x.nbytes, sent
    for a, b in zip(population, _population(x, None)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def _population(x, executor):
    """Population VB over the chunks of ``x`` (minibatches of 500 drawn on the executor)."""
    options = {} if executor is None else {"executor": executor}
    stream = _model().stream("data", population=5000.0, batch=500, steps=3, **options)
    for lo in range(0, len(x), ROWS):
        stream.update({"x": x[lo:lo + ROWS]})
    assert stream.step == 12
    return stream.posterior["mu"]
