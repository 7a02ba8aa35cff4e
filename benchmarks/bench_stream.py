"""Streaming VB on a Gaussian mixture: the cost of one chunk's update, early and late in the
stream, against a batch VMP refit on every row seen so far.

A 3-component mixture in 2-D (``vmp.models.gaussian_mixture``'s defaults) receives ``--chunks``
chunks of ``--rows`` rows. Printed: the CPU time of the updates of chunks 2-6 and of the last
five (their medians: a chunk's update should cost the same whatever came before), and a batch
VMP fit of all the rows seen (the anchor: what a stream saves over refitting), with the bound of
all the rows under the stream's globals against the refit's.

    python benchmarks/bench_stream.py [--chunks 100] [--rows 1000]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from _bench import limit_threads
from vmp.models import gaussian_mixture


def data(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    return np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[z] + rng.normal(size=(n, 2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chunks", type=int, default=100)
    p.add_argument("--rows", type=int, default=1000)
    args = p.parse_args()
    print(f"BLAS: {limit_threads(1)}; load average {os.getloadavg()[0]:.2f}")
    x = data(args.chunks * args.rows)
    model = gaussian_mixture(x[:args.rows], 3)
    stream = model.stream("data")
    times = []
    for c in range(args.chunks):
        t0 = time.process_time()
        stream.update({"x": x[c * args.rows:(c + 1) * args.rows]})
        times.append(time.process_time() - t0)
    early, late = float(np.median(times[1:6])), float(np.median(times[-5:]))
    t0 = time.process_time()
    batch = gaussian_mixture(x, 3)
    refit = batch.fit()
    refit_s = time.process_time() - t0
    bound = stream.bound({"x": x})
    print(f"chunks {args.chunks} of {args.rows} rows; refit on {len(x)} rows: {refit_s:.3f} s CPU, "
          f"{refit.iterations} iterations")
    print(f"update at chunks 2-6: {early:.4f} s CPU (median)")
    print(f"update at chunk {args.chunks}: {late:.4f} s CPU (median of the last 5)")
    print(f"late / early = {late / early:.2f}x")
    print(f"bound on all rows: stream {bound:.6g}, refit {refit.final_elbo:.6g} "
          f"(relative gap {(refit.final_elbo - bound) / abs(refit.final_elbo):.2e})")
    print(f"update / refit = {late / refit_s:.4f}x")


if __name__ == "__main__":
    main()
