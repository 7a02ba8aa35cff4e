"""CPU per stochastic step of a Gaussian mixture whose data have NaN coordinates (a fraction of
all coordinates, at random), against the same data with none: the cost of a partially observed
node's local step (x's masked coordinates and z iterated per drawn row, docs/reference.md,
"Missing data"). A default ``fit(method="stochastic", subsample=Minibatch("data", 200))``
with its diagnostics; CPU time (time.process_time) of ``--steps`` steps, the least of
``--repeats`` fits, divided by the steps; run with OMP_NUM_THREADS=1.

    python benchmarks/minibatch_missing_cost.py [--n 100000] [--fractions 0 0.01 0.2]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import vmp  # noqa: E402
from models import gaussian_mixture  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.01, 0.2])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    truth = 4.0 * rng.normal(size=(args.k, args.d))
    x = truth[rng.integers(args.k, size=args.n)] + rng.normal(size=(args.n, args.d))
    draw = rng.random(x.shape)
    for fraction in args.fractions:
        data = np.where(draw < fraction, np.nan, x)
        partial = int(np.isnan(data).any(axis=1).sum())
        cpu = []
        for _ in range(args.repeats):
            model = gaussian_mixture(data, args.k)
            tick = time.process_time()
            model.fit(method="stochastic", subsample=vmp.Minibatch("data", args.batch), iterations=args.steps,
                      seed=0, progress=False)
            cpu.append(time.process_time() - tick)
        print(f"{fraction:5.2f} of the coordinates NaN ({partial} partial rows of {args.n}): "
              f"{1e3 * min(cpu) / args.steps:.2f} ms CPU per step")


if __name__ == "__main__":
    main()
