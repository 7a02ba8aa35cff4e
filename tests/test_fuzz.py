"""The fuzzer (tests/fuzzing.py) over a CI-sized, derandomized sample: random models,
parameters, data and options through the public API end in a fit, a reported divergence or a
vmp error; never in a raw Python/numpy/scipy error, a silent NaN or a batch bound that
decreased. ``benchmarks/fuzz.py`` runs a larger sample."""
from __future__ import annotations

import collections

from hypothesis import HealthCheck, given, settings

from tests.fuzzing import DEFECTS, run, scenarios

EXAMPLES = 300
#: a CI-sized sample tries invalid values more often than the script's (tests/fuzzing.py FLAWS)
FLAWS = (0, 10, 25)


def test_the_fuzzer_finds_no_defect():
    counts: collections.Counter = collections.Counter()
    defects: list = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(scenarios(FLAWS))
    def play(scenario):
        outcome = run(scenario)
        counts[outcome.kind] += 1
        if outcome.kind in DEFECTS:
            defects.append(f"{outcome.kind}: {scenario!r}: {outcome.detail[:300]}")

    play()
    assert defects == [], "\n".join(defects[:10])
    assert sum(counts.values()) == EXAMPLES
    assert counts["fit"] >= EXAMPLES // 5 and counts["refused"] >= EXAMPLES // 5, counts
