"""Benchmark: the engine's per-sweep Python overhead.

Matrix factorization (K = 5, structured q) on a small random problem, 300 users x 300 items and
3,000 ratings, where the arithmetic is negligible: a batch sweep's time is the engine's own work
(messages, memo checks, the loop, the bound, the history). Prints CPU ms per sweep of a default
fit (its bound every sweep; the fastest of --repeat fits), function calls per sweep (cProfile,
one more fit) and, with --top, the modules whose own time is largest. Run with OMP_NUM_THREADS=1.

    python benchmarks/bench_overhead.py [--iterations 100] [--repeat 5] [--top 8]
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import pathlib
import pstats
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _bench import best_cpu, limit_threads  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--top", type=int, default=8, help="modules to list by own time (0: none)")
    args = p.parse_args(argv)
    limits = limit_threads(1)
    from vmp.models import matrix_factorization

    rng = np.random.default_rng(1)
    users, items = rng.integers(0, 300, 3000), rng.integers(0, 300, 3000)
    model = matrix_factorization(users, items, rng.normal(3.0, 1.0, 3000), n_factors=5)

    def fit():
        return model.fit(iterations=args.iterations, tol=0, seed=0, progress=False)

    per_sweep = best_cpu(fit, args.repeat) / args.iterations
    profile = cProfile.Profile()
    profile.enable()
    fit()
    profile.disable()
    stats = pstats.Stats(profile).stats
    calls = sum(entry[1] for entry in stats.values()) / args.iterations
    print(f"300 x 300 matrix factorization, K=5, {args.iterations} sweeps (BLAS: {limits}): "
          f"{per_sweep * 1e3:.3f} ms CPU per sweep (fastest of {args.repeat}), {calls:.0f} function calls per sweep")
    if args.top:
        own: collections.Counter = collections.Counter()
        for (path, _, _), entry in stats.items():
            own["numpy/scipy/builtins" if "vmp" not in path else path[path.rindex("vmp"):]] += entry[2]
        print("own time per sweep under the profiler (us):")
        for name, seconds in own.most_common(args.top):
            print(f"  {name:<40} {seconds / args.iterations * 1e6:8.1f}")


if __name__ == "__main__":
    main()
