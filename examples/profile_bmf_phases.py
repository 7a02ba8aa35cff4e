"""Where a default fit's sweep goes: CPU time (time.process_time) per phase of
``model.fit`` for matrix factorization on MovieLens, per sweep, fastest of --repeat fits.

The phases are the loop's own methods and the engine's, wrapped for the run: the targets (the
messages, with the sparse products inside them), the domain check and moments of each update,
the relative change, the bound every sweep (elog and entropy inside it) and initialization
(with its first bound), amortized over the sweeps. Run with OMP_NUM_THREADS=1.

    python examples/profile_bmf_phases.py [path/to/ratings.csv] [--k 10] [--iterations 10]
"""
from __future__ import annotations

import argparse
import collections
import functools
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench_bmf_movielens import DEFAULT, load  # noqa: E402

SPENT: dict = collections.defaultdict(float)
ORDER = ["targets (messages)", "  of which sparse products", "domain check and moments", "  of which the domain check",
         "relative change", "bound", "  of which entropies", "initialization (with the first bound)", "whole fit"]


def _timed(owner, name: str, label: str, static: bool = False) -> None:
    f = getattr(owner, name)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        c0 = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - c0

    setattr(owner, name, staticmethod(wrapper) if static else wrapper)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", default=str(DEFAULT))
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    from vmp.graph import compiled
    from vmp.inference import engine, loop, steps
    from vmp.models import matrix_factorization

    _timed(loop.Fit, "__init__", "initialization (with the first bound)")
    _timed(loop.Fit, "_valid_targets", "targets (messages)")
    _timed(compiled.CompiledFactor, "_product", "  of which sparse products")
    _timed(loop.Fit, "_apply", "domain check and moments")
    _timed(engine.Engine, "check_domain", "  of which the domain check", static=True)
    _timed(steps, "relative_change", "relative change")
    _timed(loop.Fit, "evaluate", "bound")
    _timed(engine.Engine, "entropy", "  of which entropies")
    users, items, ratings = load(pathlib.Path(args.path))
    model = matrix_factorization(users, items, ratings, n_factors=args.k)
    model.fit(iterations=args.iterations, tol=0, seed=0, progress=False)
    best: dict = {}
    for _ in range(args.repeat):
        SPENT.clear()
        c0 = time.process_time()
        model.fit(iterations=args.iterations, tol=0, seed=0, progress=False)
        run = dict(SPENT, **{"whole fit": time.process_time() - c0})
        best = run if not best else {k: min(v, best[k]) for k, v in run.items()}
    print(f"MovieLens, K={args.k}, {args.iterations} sweeps, CPU ms per sweep (fastest of {args.repeat} fits):")
    for label in ORDER:
        print(f"  {label:<40} {best.get(label, 0.0) / args.iterations * 1e3:7.2f}")


if __name__ == "__main__":
    main()
