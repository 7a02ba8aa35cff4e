"""CPU per batch sweep of ``models.hmm`` (Gaussian emissions) on sequences of equal and of
different lengths, with and without NaN entries: padded steps are absent (weight 0), so only
the sequences with a NaN take a partially observed node's latent path. 200 sequences of
3-vectors from 3 states; lengths 100, or 50-100.
CPU time (time.process_time) of 20 sweeps, the least of 3 fits; run with OMP_NUM_THREADS=1.

    python benchmarks/hmm_padded_cost.py [--nan 0 0.001]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import hmm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nan", type=float, nargs="+", default=[0.0, 0.001])
    ap.add_argument("--sweeps", type=int, default=20)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    s, d, k = 200, 3, 3
    means = 3.0 * rng.normal(size=(k, d))
    for nan in args.nan:
        for label, lengths in [("all 100", np.full(s, 100)), ("50-100", rng.integers(50, 101, size=s))]:
            data = []
            for length in lengths:
                x = means[rng.integers(k, size=length)] + rng.normal(size=(length, d))
                x[rng.random(x.shape) < nan] = np.nan
                data.append(x)
            cpu = []
            for _ in range(3):
                model = hmm(data, k)
                tick = time.process_time()
                model.fit(iterations=args.sweeps, tol=0, seed=0)
                cpu.append(time.process_time() - tick)
            clamp = model["y"].clamp
            with_nan = sum(bool(np.isnan(x).any()) for x in data)
            rows = "no latent path" if clamp is None else \
                f"{s if clamp.latent() is None else clamp.latent().rows.size} of {s} sequences latent, " \
                f"{with_nan} with a NaN"
            print(f"NaN {nan}, lengths {label}: {1e3 * min(cpu) / args.sweeps:.1f} ms CPU per sweep ({rows})")


if __name__ == "__main__":
    main()
