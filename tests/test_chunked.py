"""Batch VMP over data streamed in blocks of rows (vmp/inference/executor_chunked.py): the answers
of the in-memory fit on the mixture, LDA and matrix factorization; data out of core read one block
at a time, never whole; peak memory well below the data array's size; the default executor of a
model whose data are out of core."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import vmp
from models import lda, matrix_factorization
from tests.helpers import factorized_mixture
from vmp.inference.engine import Engine

pytestmark = pytest.mark.filterwarnings("ignore::vmp.DivergenceWarning")


def blobs(n, d=2, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=5.0, size=(k, d))
    return centers[rng.integers(k, size=n)] + rng.normal(size=(n, d))


def topics(docs=60, seed=0):
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(30, 0.1), size=3)
    counts = np.stack([rng.multinomial(40, rng.dirichlet(np.full(3, 0.2)) @ beta) for _ in range(docs)])
    d, w = np.nonzero(counts)
    return lda(d, w, counts[d, w], 3, n_words=30)


def ratings(seed=0, m=30, n=20, k=2, r=400):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.3 * rng.normal(size=r)
    return matrix_factorization(rows, cols, y, k, n_users=m, n_items=n)


def worst_relative(a, b) -> float:
    """max over nodes and components of max|a - b| / max|b|."""
    assert a.natural.keys() == b.natural.keys()
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)), initial=0.0) / max(np.max(np.abs(y)), 1e-300))
               for k in a.natural for x, y in zip(a.natural[k], b.natural[k]))


class Reads:
    """Out-of-core data that count what is read: any object with shape, dtype and __getitem__."""

    def __init__(self, x):
        self.x, self.shape, self.dtype, self.ndim = x, x.shape, x.dtype, x.ndim
        self.most = self.total = 0

    def __len__(self):
        return self.shape[0]

    def _read(self, rows: int) -> None:
        self.most, self.total = max(self.most, rows), self.total + rows

    def __getitem__(self, index):
        out = np.array(self.x[index])
        self._read(out.shape[0] if out.ndim == self.ndim else 1)
        return out

    def __array__(self, dtype=None, copy=None):
        self._read(self.shape[0])
        return np.array(self.x, dtype=dtype)


CASES = {"mixture": lambda: factorized_mixture(blobs(700), 3), "lda": topics, "mf": ratings}


@pytest.mark.parametrize("name", sorted(CASES))
def test_blocks_give_the_answer_of_the_whole_data(name):
    """Blocks of 97 rows (none of the sizes divides it) against one pass over all rows: the same
    natural parameters and bounds within 1e-10 relative (only the order of the additions differs)."""
    serial = CASES[name]().fit(iterations=8, seed=2, progress=False)
    executor = vmp.Chunked(size=97)
    chunked = CASES[name]().fit(iterations=8, seed=2, progress=False, executor=executor)
    assert len(executor.blocks()) > 2
    assert worst_relative(chunked.state, serial.state) < 1e-10
    np.testing.assert_allclose(chunked.elbo, serial.elbo, rtol=1e-10)


def test_one_block_gives_the_bits_of_serial():
    """A block covering the whole plate evaluates exactly what Serial does (the bound aside, which
    Serial takes from the cached derivatives of the sweep)."""
    x = blobs(500)
    serial = factorized_mixture(x, 3).fit(iterations=6, seed=0, progress=False)
    chunked = factorized_mixture(x, 3).fit(iterations=6, seed=0, progress=False, executor=vmp.Chunked(size=500))
    assert worst_relative(chunked.state, serial.state) == 0.0


def test_data_out_of_core_are_read_a_block_at_a_time(monkeypatch):
    """A batch fit (k-means++ initialization, sweeps, bounds) on out-of-core data reads no more
    than one block of rows at once, each row once per sweep or so, and gets the answers of the
    data in memory."""
    monkeypatch.setattr(vmp.inference.init, "MAX_INTERMEDIATE", 1024)  # k-means++ blocks of 128 rows of D = 2
    x = blobs(1000)
    reads = Reads(x)
    model = factorized_mixture(x, 3)
    model["x"]._set_data(reads, None)
    reads.most = reads.total = 0  # the declaration's check of the data reads them by blocks too
    lazy = model.fit(iterations=5, seed=1, progress=False, executor=vmp.Chunked(size=128))
    assert reads.most == 128 and reads.total >= 5 * len(x)
    memory = factorized_mixture(x, 3).fit(iterations=5, seed=1, progress=False)
    assert worst_relative(lazy.state, memory.state) < 1e-10


def test_memmap_hdf5_and_zarr_batch_fits_match_memory(tmp_path):
    h5py = pytest.importorskip("h5py")
    zarr = pytest.importorskip("zarr")
    x = blobs(2000)
    mm = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
    mm[:] = x
    mm.flush()
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=x.shape, chunks=(300, 2), dtype="f8")
    z[:] = x
    memory = factorized_mixture(x, 3).fit(iterations=6, seed=3, progress=False)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        sources = {"memmap": np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape), "hdf5": f["x"],
                   "zarr": z}
        for label, data in sources.items():
            model = factorized_mixture(x, 3)
            model["x"]._set_data(data, None)
            result = model.fit(iterations=6, seed=3, progress=False, executor=vmp.Chunked(size=300))
            assert worst_relative(result.state, memory.state) < 1e-10, label
            np.testing.assert_allclose(result.elbo, memory.elbo, rtol=1e-10, err_msg=label)


def _gaussian(x):
    d = x.shape[1]
    with vmp.Model("gaussian") as model:
        mu = vmp.Gaussian("mu", mean=np.zeros(d), precision=1e-2 * np.eye(d))
        lam = vmp.Wishart("Lambda", dof=d, scale=np.eye(d) / d)
        with vmp.Plate("data", len(x)):
            vmp.Gaussian("x", mean=mu, precision=lam, observed=x)
    return model


def test_peak_memory_is_well_below_the_data(tmp_path):
    """tracemalloc's peak over a batch fit from HDF5 (N = 30,000, D = 40: 9.6 MB of data) stays
    below a third of the array's size (blocks of 1,000 rows: 0.3 MB each, and the chunked
    contractions' intermediates); in memory the same fit's data alone is the array."""
    h5py = pytest.importorskip("h5py")
    x = np.random.default_rng(0).normal(size=(30_000, 40))
    _gaussian(x[:400]).fit(iterations=2, progress=False)  # imports and caches before measuring
    model = _gaussian(x)
    reference = _gaussian(x).fit(iterations=3, progress=False)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    size = x.nbytes
    del x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        model["x"]._set_data(f["x"], None)
        tracemalloc.start()
        try:
            result = model.fit(iterations=3, progress=False, executor=vmp.Chunked(size=1000))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    print(f"peak {peak:,} bytes of {size:,}")
    assert peak < size / 3, (peak, size)
    assert worst_relative(result.state, reference.state) < 1e-10


def test_the_default_executor_streams_only_data_out_of_core(tmp_path):
    x = blobs(50)
    assert isinstance(Engine(factorized_mixture(x, 3)).executor, vmp.Serial)
    model = factorized_mixture(x, 3)
    model["x"]._set_data(Reads(x), None)
    assert isinstance(Engine(model).executor, vmp.Chunked)


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_a_block_size_must_be_a_positive_integer(size):
    with pytest.raises(vmp.VMPError, match="Chunked: size="):
        vmp.Chunked(size=size)


def test_minibatch_steps_run_as_serial():
    """Evaluations already restricted to rows (a minibatch) are not split: the same bits."""
    options = dict(method="stochastic", subsample=vmp.Minibatch("data", 40), iterations=6, evaluate_every=3, seed=1,
                   progress=False)
    serial = factorized_mixture(blobs(600), 3).fit(**options)
    chunked = factorized_mixture(blobs(600), 3).fit(executor=vmp.Chunked(size=64), **options)
    assert worst_relative(chunked.state, serial.state) == 0.0
    np.testing.assert_array_equal(chunked.elbo, serial.elbo)


class NotWhole(Reads):
    def __array__(self, dtype=None, copy=None):
        raise AssertionError("the whole array was read into memory")


def test_the_mixture_builder_keeps_data_out_of_core(tmp_path):
    """``factorized_mixture(h5py dataset or Reads)`` keeps the data where they are (it read them
    whole into memory: the node held an ndarray), reads its prior's mean and covariance by
    blocks, and fits as the data in memory do; NaN entries still make missing coordinates."""
    h5py = pytest.importorskip("h5py")
    x = blobs(3000)
    memory = factorized_mixture(x, 3).fit(iterations=6, seed=3, progress=False)
    reads = NotWhole(x)
    model = factorized_mixture(reads, 3)
    assert model["x"].data is reads
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        model = factorized_mixture(f["x"], 3)
        assert isinstance(model["x"].data, h5py.Dataset)
        result = model.fit(iterations=6, seed=3, progress=False)
    assert worst_relative(result.state, memory.state) < 1e-10
    np.testing.assert_allclose(result.elbo, memory.elbo, rtol=1e-10)
    holes = x.copy()
    holes[5, 1] = np.nan
    assert factorized_mixture(Reads(holes), 3).missing() == ["x: 1 masked coordinates in 1 of 3000 elements inferred"]


def test_a_chains_time_plate_is_never_the_default_split():
    """An HMM with more steps than sequences: the largest data plate is the chains' time plate,
    whose blocks would cut the forward-backward recursion (the bound was 4 to 18 nats off and
    the fit stopped on a decrease); the default splits the sequences, as ``plate="sequences"``."""
    from models import hmm
    rng = np.random.default_rng(0)
    seqs = [np.cumsum(rng.normal(size=(40, 2)), axis=0) * 0.3 for _ in range(6)]
    serial, chunked = hmm(seqs, 3, emission="gaussian"), hmm(seqs, 3, emission="gaussian")
    a = serial.fit(seed=0, iterations=15, tol=0)
    b = chunked.fit(seed=0, iterations=15, tol=0, executor=vmp.Chunked(size=4))
    assert np.allclose(b.history["evaluations"]["elbo"], a.history["evaluations"]["elbo"], rtol=1e-12, atol=0)
    with pytest.raises(vmp.GraphError, match="Chunked: 'z' is one \w+ along plate 'time'"):
        hmm(seqs, 3, emission="gaussian").fit(seed=0, iterations=2, executor=vmp.Chunked(size=4, plate="time"))


def test_one_chain_out_of_core_runs_whole(tmp_path):
    """A single Markov chain (no plate of whole chains) with emissions in a memmap: the default
    executor does not stream them (Chunked has no plate to split: 'no observed node on a plate
    to partition'); the fit is that of the data in memory."""
    rng = np.random.default_rng(0)
    y = rng.normal(size=40) + 3.0 * (rng.random(40) < 0.5)
    stored = np.lib.format.open_memmap(tmp_path / "y.npy", mode="w+", dtype=float, shape=y.shape)
    stored[:] = y
    stored.flush()

    def chain(data):
        with vmp.Model("chain") as model:
            pi0 = vmp.Dirichlet("pi0", alpha=np.ones(2))
            with vmp.Plate("from", 2):
                a = vmp.Dirichlet("A", alpha=np.ones(2))
                mu = vmp.Normal("mu", mean=0.0, precision=0.1)
            with vmp.Plate("time", 40):
                z = vmp.CategoricalMarkovChain("z", initial=pi0, transition=a)
                vmp.Normal("y", mean=mu[z], precision=1.0, observed=data)
        return model

    a = chain(np.load(tmp_path / "y.npy", mmap_mode="r")).fit(iterations=4, tol=0, seed=0)
    b = chain(y).fit(iterations=4, tol=0, seed=0)
    np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-12)
