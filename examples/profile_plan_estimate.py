"""Profile: what a precompiled plan for batch sweeps could save, before building one.

A plan recorded after one sweep and replayed on the next (same structure, data, weights and
schedule) would skip the engine's bookkeeping: memo keys and identity checks, Context copies,
the executor's closure, isinstance chains and dict lookups. It would not skip the arithmetic
(sparse products, contractions, the factorizations' column loops, the relative change, the
bound's inner products) nor the numpy calls that do it. This script fits a model for
--iterations sweeps and prints, per sweep:

- the CPU time of a fit (fastest of --repeat, no profiler) and cProfile's function calls;
- the own time of the bookkeeping functions (``BOOKKEEPING``) and of the functions that mix
  such decisions with arithmetic (``MIXED``), under the profiler;
- what those cost without the profiler, as a range between two estimates: the profiled own time
  minus the profiler's cost per call times their calls, and the profiled own time scaled by
  real / profiled (the profiler inflates small calls more than arithmetic, so this overstates
  the bookkeeping; for the few calls of the mixed functions it is the lower one);
  the profiled figures are the least of --repeat profiled fits.

    python examples/profile_plan_estimate.py [--model small|movielens] [--k 5] [--iterations 100]

Run with OMP_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "examples"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from _bench import limit_threads  # noqa: E402

#: (module under vmp/, function): work a replayed plan would not do (module "~": builtins)
BOOKKEEPING = {
    ("graph/compiled.py", f) for f in ("_stamp", "_same", "_data_key", "<genexpr>", "_remember", "_constant_key",
                                       "held", "standing", "messages", "_evaluate", "_held", "_pair", "value",
                                       "_weight", "_kept", "element_weight", "_reads_of", "_rests_of")
} | {
    ("graph/leaves.py", f) for f in ("stamp_of", "moments_of", "restricted", "memoizable", "value", "source",
                                     "stamp", "shapes", "to_node")
} | {
    ("inference/engine.py", f) for f in ("at", "message", "children", "target", "_summed_messages",
                                         "_at_optimum", "factor_weight", "own_multiplicity", "coordinate",
                                         "coupled_plate")
} | {("inference/executor.py", "*"), ("inference/observed.py", "*"), ("dataclasses.py", "*")} | {
    ("~", f) for f in ("<built-in method builtins.isinstance>", "<method 'get' of 'dict' objects>",
                       "<built-in method builtins.any>", "<built-in method builtins.all>",
                       "<built-in method builtins.id>", "<built-in method builtins.len>",
                       "<built-in method builtins.getattr>")
}
#: functions that decide (fused product or contraction, keys, letters) and compute in one body
MIXED = {("graph/compiled.py", f) for f in ("_fused", "_product", "_sum_messages", "elog", "_reduce_plates",
                                            "_materialize")} | {
    ("factors/terms.py", f) for f in ("contract_to", "contract", "inner_product", "compact", "accumulate")}


def _model(args):
    from vmp.models import matrix_factorization

    if args.model == "movielens":
        from bench_bmf_movielens import DEFAULT, load

        users, items, ratings = load(pathlib.Path(args.path or DEFAULT))
    else:
        rng = np.random.default_rng(1)
        m, r = (10, 30) if args.model == "tiny" else (300, 3000)
        users, items, ratings = rng.integers(0, m, r), rng.integers(0, m, r), rng.normal(3.0, 1.0, r)
    return matrix_factorization(users, items, ratings, n_factors=args.k)


def _where(path: str) -> str:
    if path == "~":
        return path
    return path.split("/vmp/")[-1] if "/vmp/" in path else path.split("/")[-1]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=("tiny", "small", "movielens"), default="small",
                   help="tiny: 10 x 10, 30 ratings (no arithmetic to speak of); small: 300 x 300, 3,000")
    p.add_argument("--path", default=None, help="MovieLens ratings.csv")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--top", type=int, default=0, help="functions to list by own time")
    p.add_argument("--targets", action="store_true",
                   help="also profile one target per hidden node and one bound at the fitted state")
    args = p.parse_args(argv)
    limits = limit_threads(1)
    model = _model(args)
    n = args.iterations

    def fit():
        model.fit(iterations=n, tol=0, seed=0, progress=False)

    fit()
    real = float("inf")
    for _ in range(args.repeat):
        t = time.process_time()
        fit()
        real = min(real, (time.process_time() - t) / n)
    profiled, calls, sums, rows = float("inf"), 0.0, None, []
    for _ in range(args.repeat):  # the least of each figure over --repeat profiled fits
        profile = cProfile.Profile()
        t = time.process_time()
        profile.enable()
        fit()
        profile.disable()
        profiled = min(profiled, (time.process_time() - t) / n)
        stats = pstats.Stats(profile).stats
        calls = sum(e[1] for e in stats.values()) / n
        got = {"bookkeeping": [0.0, 0.0], "mixed": [0.0, 0.0]}
        rows = []
        for (path, _, fn), e in stats.items():
            where = _where(path)
            rows.append((e[2] / n, e[1] / n, where, fn))
            group = ("bookkeeping" if (where, fn) in BOOKKEEPING or (where, "*") in BOOKKEEPING
                     else "mixed" if (where, fn) in MIXED else None)
            if group:
                got[group][0] += e[2] / n
                got[group][1] += e[1] / n
        sums = got if sums is None else {g: [min(sums[g][0], got[g][0]), got[g][1]] for g in got}
    per_call = max(profiled - real, 0.0) / calls
    print(f"{args.model}, K={args.k}, {n} sweeps (BLAS: {limits}): {real * 1e3:.3f} ms CPU per sweep "
          f"(fastest of {args.repeat}); under cProfile {profiled * 1e3:.3f} ms, {calls:.0f} calls per sweep, "
          f"{per_call * 1e6:.2f} us of profiler per call")
    for group, (own, count) in sums.items():
        low, high = sorted((max(own - count * per_call, 0.0), own * real / profiled))
        print(f"  {group:<11} {count:6.0f} calls, {own * 1e3:.3f} ms profiled -> {low * 1e3:.3f}-{high * 1e3:.3f} ms "
              f"per sweep without the profiler")
    for own, count, where, fn in sorted(rows, reverse=True)[:args.top]:
        print(f"  {own * 1e6:8.1f} us {count:7.1f} calls  {where} {fn}")
    if args.targets:
        _targets(model)


def _targets(model) -> None:
    """Function calls of one target per hidden node and of one bound at the fitted state
    (memos hot), and how many of them are bookkeeping."""
    from vmp.inference.engine import Engine

    engine, state = Engine(model), model.state
    calls = [(f"target {node.name}", lambda node=node: engine.target(state, node)) for node in engine.hidden]
    for label, f in calls + [("bound", lambda: engine.elbo(state))]:
        f()
        profile = cProfile.Profile()
        profile.enable()
        f()
        profile.disable()
        stats = pstats.Stats(profile).stats
        total = sum(e[1] for e in stats.values())
        kept = sum(e[1] for (path, _, fn), e in stats.items()
                   if (_where(path), fn) in BOOKKEEPING or (_where(path), "*") in BOOKKEEPING)
        print(f"  {label:<12} {total:5d} calls, {kept:5d} of them bookkeeping")


if __name__ == "__main__":
    main()
