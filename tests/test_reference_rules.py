"""The evaluator with its strategies gives the reference evaluator's messages and bounds on
every network of the rule-case table (tests/reference_check.py). They are small: the
strategies with a size threshold do not act, so the default alone is compared."""
from __future__ import annotations

import pytest

from tests.reference_check import compare
from tests.rule_cases import CASES
from vmp.graph.strategies import DEFAULT


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_default_gives_the_reference_numbers(case):
    compare(CASES[case]()[0], [DEFAULT])
