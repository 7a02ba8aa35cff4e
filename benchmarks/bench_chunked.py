"""Benchmark: batch VMP over data out of core, streamed in blocks of rows (``vmp.Chunked``).

A Gaussian mixture (K components, D dimensions) on N points written block by block to an HDF5
file (or a numpy memmap, or a zarr array); the priors come from a subsample, so the data are never
in memory whole. A batch fit (k-means++ initialization, sweeps, the bound each sweep) streams the
file in blocks of ``--block`` rows (the default executor of data out of core). Printed: the data
file's size, q(z)'s size (N x K natural parameters and moments, held in memory), seconds per sweep,
and the process's peak RSS above what it was before the fit (HDF5 and zarr read into buffers that
are freed; a memmap's pages count in RSS while the kernel keeps them, so its RSS is not the
process's own memory). ``--compare`` fits the same data in memory too (Serial) and prints the
largest relative difference of the natural parameters.

    python benchmarks/bench_chunked.py [--n 2000000] [--d 16] [--k 4] [--sweeps 3] [--format h5]
"""
from __future__ import annotations

import argparse
import pathlib
import resource
import shutil
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402

BLOCK = 1 << 17


def write(path: pathlib.Path, fmt: str, n: int, d: int, k: int, seed: int = 0):
    """n points of k clusters in d dimensions written ``BLOCK`` rows at a time; the open array."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=6.0, size=(k, d))
    if fmt == "h5":
        import h5py

        handle = h5py.File(path.with_suffix(".h5"), "w")
        out = handle.create_dataset("x", shape=(n, d), dtype="f8", chunks=(min(n, 1 << 14), d))
    elif fmt == "zarr":
        import zarr

        handle, out = None, zarr.create_array(store=str(path.with_suffix(".zarr")), shape=(n, d),
                                              chunks=(min(n, 1 << 16), d), dtype="f8")
    else:
        handle, out = None, np.memmap(path.with_suffix(".f8"), dtype=float, mode="w+", shape=(n, d))
    for lo in range(0, n, BLOCK):
        m = min(BLOCK, n - lo)
        out[lo:lo + m] = centers[rng.integers(k, size=m)] + rng.normal(size=(m, d))
    if handle is not None:
        handle.close()
        handle = __import__("h5py").File(path.with_suffix(".h5"), "r")
        return handle, handle["x"]
    if fmt == "memmap":
        out.flush()
        del out
        return None, np.memmap(path.with_suffix(".f8"), dtype=float, mode="r", shape=(n, d))
    return None, out


def mixture(x, k: int) -> vmp.Model:
    """The factorized mixture of models/gaussian_mixture.py (``FACTORIZED``), its priors from a subsample of
    about 20,000 rows."""
    n, d = x.shape
    sample = np.asarray(x[:: max(1, n // 20_000)])
    prec = np.linalg.inv(np.atleast_2d(np.cov(sample, rowvar=False)) + 1e-6 * np.eye(d))
    with vmp.Model("mixture") as model:
        pi = vmp.Dirichlet("pi", np.ones(k))
        with vmp.Plate("components", k):
            mu = vmp.Gaussian("mu", mean=sample.mean(0), precision=1e-2 * prec)
            lam = vmp.Wishart("Lambda", dof=float(d), scale=prec / d)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=mu[z], precision=lam[z], observed=x)
    return model


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=2_000_000)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--sweeps", type=int, default=3)
    p.add_argument("--block", type=int, default=1 << 16)
    p.add_argument("--format", choices=["h5", "zarr", "memmap"], default="h5")
    p.add_argument("--compare", action="store_true", help="also fit the data in memory and compare")
    a = p.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp()) / "x"
    handle, x = write(tmp, a.format, a.n, a.d, a.k)
    model = mixture(x, a.k)
    before = rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    result = model.fit(iterations=a.sweeps, tol=0.0, seed=0, progress=False, executor=vmp.Chunked(size=a.block))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = rss_mb()
    data_mb, qz_mb = a.n * a.d * 8 / 1e6, 2 * a.n * a.k * 8 / 1e6
    print(f"N={a.n:,} D={a.d} K={a.k} {a.format}, blocks of {a.block:,} rows, {a.sweeps} sweeps")
    print(f"data {data_mb:,.0f} MB; q(z) {qz_mb:,.0f} MB (natural parameters and moments)")
    sweep = float(np.median(result.history["step_seconds"]))
    print(f"fit {seconds:.2f} s, {cpu:.2f} CPU s (initialization, {a.sweeps} sweeps, {len(result.elbo)} bounds); "
          f"median sweep {sweep:.2f} s without its bound; final bound {result.elbo[-1]:.6e}")
    print(f"peak RSS {peak:,.0f} MB, {peak - before:,.0f} MB above the {before:,.0f} MB before the fit")
    if a.compare:
        memory = mixture(np.asarray(x[:]), a.k).fit(iterations=a.sweeps, tol=0.0, seed=0, progress=False)
        worst = max(float(np.max(np.abs(u - v)) / np.max(np.abs(v))) for name in memory.state.natural
                    for u, v in zip(result.state.natural[name], memory.state.natural[name]))
        print(f"in memory (Serial): largest relative difference of the natural parameters {worst:.1e}")
    if handle is not None:
        handle.close()
    del x, model, result
    shutil.rmtree(tmp.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
