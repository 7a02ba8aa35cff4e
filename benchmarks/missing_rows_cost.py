"""CPU per batch sweep of a Gaussian mixture whose data have one NaN coordinate in a fraction of
the rows (models.gaussian_mixture on NaN data): the cost of a partially observed node against
the same data with no NaN. Run with OMP_NUM_THREADS=1; the CPU time (time.process_time) of
``--sweeps`` sweeps, the least of ``--repeats`` fits, divided by the sweeps; then the same from
fits of 1 and 2 * sweeps + 1 sweeps split into a cost per further sweep and a fixed cost (compiling,
initialization, the first sweep's setup).

    python benchmarks/missing_rows_cost.py [--n 20000] [--fractions 0 0.01 0.5]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import gaussian_mixture  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.0, 0.01, 0.5])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    truth = 4.0 * rng.normal(size=(args.k, args.d))
    x = truth[rng.integers(args.k, size=args.n)] + rng.normal(size=(args.n, args.d))
    draw, column = rng.random(args.n), rng.integers(args.d, size=args.n)
    for fraction in args.fractions:
        rows = draw < fraction
        data = x.copy()
        data[rows, column[rows]] = np.nan
        gaussian_mixture(data, args.k).fit(seed=0, iterations=1)
        short, usual, long = (_least(data, args, sweeps) for sweeps in (1, args.sweeps, 2 * args.sweeps + 1))
        further = (long - short) / (2 * args.sweeps)
        print(f"{int(rows.sum()):6d} partial rows of {args.n}: {1e3 * usual / args.sweeps:.2f} ms CPU per sweep; "
              f"{1e3 * further:.2f} ms per further sweep, {1e3 * (short - further):.1f} ms fixed")


def _least(data: np.ndarray, args, sweeps: int) -> float:
    """The least CPU seconds of ``args.repeats`` fits of ``sweeps`` sweeps (the model built before)."""
    cpu = []
    for _ in range(args.repeats):
        model = gaussian_mixture(data, args.k)
        tick = time.process_time()
        model.fit(seed=0, iterations=sweeps, tol=0)
        cpu.append(time.process_time() - tick)
    return min(cpu)


if __name__ == "__main__":
    main()
