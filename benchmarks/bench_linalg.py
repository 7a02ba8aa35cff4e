"""Benchmark: batched positive-definite algebra (vmp/families/_linalg.py) against numpy.linalg.

For stacks of B matrices of order D, times the inverse, the log-determinant and a solve through
the column loop vectorized over the stack (``Cholesky`` on its vectorized path) and through
numpy.linalg (one LAPACK call per matrix: inv, cholesky + log diagonal, solve), and prints
numpy's time over ours (> 1: the vectorized path is faster). The anchor, numpy.linalg, is
timed in the same run, interleaved with ours; each figure is the fastest of --repeat.
The vectorized path is used for B >= VECTOR_BATCH, D <= VECTOR_ORDER and B D^2 <= VECTOR_MAX;
this table is what those thresholds come from. Times are CPU time (process_time), as the
machine may be shared.

    python benchmarks/bench_linalg.py [--batches 8 32 128 9724] [--orders 2 5 10 16 24]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", type=int, nargs="+", default=[32, 128, 256, 610, 9724, 100_000])
    p.add_argument("--orders", type=int, nargs="+", default=[2, 5, 8, 10, 12, 16])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)

    from _bench import best_cpu

    from vmp.families import _linalg

    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}; thresholds: VECTOR_BATCH={_linalg.VECTOR_BATCH}, "
          f"VECTOR_ORDER={_linalg.VECTOR_ORDER}, VECTOR_MAX={_linalg.VECTOR_MAX}; "
          f"ratio = numpy.linalg time / vectorized time; load average {os.getloadavg()[0]:.2f}")
    head = f"{'B':>7} {'D':>3} {'inv ms':>8} {'np ms':>8} {'ratio':>6} {'logdet ms':>9} {'np ms':>8} " \
           f"{'ratio':>6} {'solve ms':>8} {'np ms':>8} {'ratio':>6} {'used':>5}"
    print(head)
    print("-" * len(head))
    for d in args.orders:
        for b in args.batches:
            if b * d * d > 2e7:
                continue
            g = rng.normal(size=(b, d, d))
            a = g @ np.swapaxes(g, -1, -2) / d + 0.1 * np.eye(d)
            v = rng.normal(size=(b, d))

            rows = []
            for kind, ref in (("inv", lambda: np.linalg.inv(a)),
                              ("logdet", lambda: np.linalg.slogdet(a)[1]),
                              ("solve", lambda: np.linalg.solve(a, v[..., None]))):
                call = {"inv": lambda: _linalg.Cholesky(a, vectorize=True).inv(),
                        "logdet": lambda: _linalg.Cholesky(a, vectorize=True).logdet(),
                        "solve": lambda: _linalg.Cholesky(a, vectorize=True).solve(v)}[kind]
                rows.append((best_cpu(call, args.repeat), best_cpu(ref, args.repeat)))
            used = "vec" if _linalg.vectorized(a.shape) else "lapack"
            cells = " ".join(f"{o * 1e3:>8.3f} {r * 1e3:>8.3f} {r / o:>6.2f}" for o, r in rows)
            print(f"{b:>7} {d:>3} {cells} {used:>5}")


if __name__ == "__main__":
    main()
