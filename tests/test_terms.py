"""The contraction helper: chunking along a large axis gives the same numbers as plain einsum."""
from __future__ import annotations

import numpy as np
import pytest

from vmp.factors import terms


@pytest.mark.parametrize("subs", ["Bab,Aa,Ab,AB->", "Aa,Ab,AB->Bab", "Bab,Aa,Ab->AB", "Bab,AB->Bab"])
def test_chunked_contraction_matches_einsum(monkeypatch, subs):
    rng = np.random.default_rng(0)
    n, k, d = 1000, 4, 3
    arrays = {"Bab": rng.normal(size=(k, d, d)), "Aa": rng.normal(size=(n, d)), "Ab": rng.normal(size=(n, d)),
              "AB": rng.random((n, k))}
    ops = [arrays[s] for s in subs.split("->")[0].split(",")]
    expected = np.einsum(subs, *ops)
    monkeypatch.setattr(terms, "MAX_INTERMEDIATE", 500)
    monkeypatch.setattr(terms, "_PLANS", terms.OrderedDict())
    plan = terms._plan(subs, ops)
    got = terms.contract(subs, *ops)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    if subs != "Bab,AB->Bab":
        assert plan[1] == "A", "a large intermediate must be chunked along the data axis"


def test_contract_to_broadcasts_letters_no_input_has():
    a = np.arange(3.0)
    out = terms.contract_to([(a, "B")], "AB", (4, 3))
    assert out.shape == (4, 3) and np.all(out == a)
