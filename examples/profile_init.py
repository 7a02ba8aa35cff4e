"""Profile: a fit's one-time initialization on MovieLens (matrix factorization, structured q).

Prints, in CPU milliseconds (process_time; median and least of --repeat):
- ``initialize`` alone (the prior messages and moments, the symmetry breaking), called back to
  back on one engine: hot caches;
- in context: ``Fit(...)`` (initialize plus the first bound) and each of 10 sweeps, one fit of
  10 sweeps after another, as the benchmark's fits run: the caches hold the previous fit.

    OMP_NUM_THREADS=1 python examples/profile_init.py [path/to/ratings.csv] [--k 5] [--repeat 30]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from bench_bmf_movielens import DEFAULT, load  # noqa: E402


def cpu_ms(f, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return 1e3 * float(np.median(times)), 1e3 * min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(DEFAULT))
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    from _bench import limit_threads
    threads = limit_threads(1)

    from vmp.inference.engine import Engine
    from vmp.inference.init import initialize
    from vmp.inference.loop import Fit
    from vmp.inference.subsample import BatchPlan
    from vmp.models import matrix_factorization

    users, items, ratings = load(pathlib.Path(args.path))
    model = matrix_factorization(users, items, ratings, n_factors=args.k)
    model.fit(iterations=10, tol=0, seed=0)
    engine = Engine(model, None)
    plan = BatchPlan(engine, None)
    hot = cpu_ms(lambda: initialize(engine, np.random.default_rng(0), None, plan), args.repeat)
    prior = cpu_ms(lambda: initialize(engine, np.random.default_rng(0), "prior", plan), args.repeat)
    rows = []
    for _ in range(args.repeat // 2):
        t = [time.process_time()]
        fit = Fit(model, iterations=10, tol=0, seed=0)
        t.append(time.process_time())
        for _ in range(10):
            fit.step()
            t.append(time.process_time())
        rows.append(np.diff(t) * 1e3)
    m = np.median(rows, axis=0)
    print(f"MovieLens K={args.k}, BLAS threads: {threads}")
    print(f"initialize alone (hot): {hot[0]:.2f} ms (least {hot[1]:.2f}); at init='prior' {prior[0]:.2f} ms")
    print(f"in context: Fit(...) {m[0]:.2f} ms, then sweeps " + " ".join(f"{x:.2f}" for x in m[1:])
          + f" ms (median of {len(rows)} fits)")


if __name__ == "__main__":
    main()
