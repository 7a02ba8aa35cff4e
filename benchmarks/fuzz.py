"""Fuzz vmp's public API with random models, parameters, data and options (tests/fuzzing.py)
and print how each example ended: a fit, a divergence reported, a vmp error, or a defect (a raw
Python/numpy/scipy error, a silent NaN, a batch bound that decreased), with the defects listed.

    python benchmarks/fuzz.py --examples 2000 [--seed 0]
"""
from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.fuzzing import DEFECTS, run, scenarios  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=40, help="defects to list")
    parser.add_argument("--trace", action="store_true", help="print the traceback of every raw error")
    args = parser.parse_args()
    counts: collections.Counter = collections.Counter()
    defects: dict = {}
    start = time.perf_counter()

    @seed(args.seed)  # (the same examples for the same --seed)
    @settings(max_examples=args.examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios())
    def play(scenario):
        outcome = run(scenario, trace=args.trace)
        counts[outcome.kind] += 1
        if outcome.kind in DEFECTS:
            key = (scenario.label, outcome.kind, outcome.detail.split(":")[0][:80])
            defects.setdefault(key, (scenario, outcome))

    play()
    total = sum(counts.values())
    print(f"{total} examples in {time.perf_counter() - start:.0f} s: " +
          ", ".join(f"{k} {counts[k]}" for k in ("fit", "diverged", "refused", *DEFECTS)))
    for (label, kind, _), (scenario, outcome) in list(defects.items())[:args.show]:
        print(f"- {kind}: {scenario!r}\n    {outcome.detail[:300]}")
    return 1 if any(counts[k] for k in DEFECTS) else 0


if __name__ == "__main__":
    raise SystemExit(main())
