"""Tempering's per-datapoint normalizer log C_n(T) on data with missing coordinates: the tempered
joint weights x_n's masked coordinates as latent, so C_n integrates every coordinate of x_n, as
for a complete row (Mandt et al. eq. (3)); a row with none observed is not in the model (barren)
and adds nothing."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

import vmp
from tests.helpers import factorized_mixture
from tests.helpers import randomize
from vmp.inference.engine import Engine
from vmp.inference.init import initialize
from vmp.inference.tempered import log_normalizers

TEMPS = np.array([1.0, 2.0, 5.0])


def _normalizers(model, state, rows):
    engine = Engine(model)
    plan = vmp.Minibatch("data", rows.size).prepare(engine, np.random.default_rng(0))
    return log_normalizers(engine, plan, replace(plan.context(rows), state=state), TEMPS)


def test_a_row_with_missing_coordinates_has_the_complete_rows_normalizer():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 3))
    complete = factorized_mixture(x, 3)
    Engine(complete)
    randomize(complete, np.random.default_rng(1))
    globals_ = {k: v for k, v in complete.state.natural.items() if k in ("pi", "mu", "Lambda")}
    data = x.copy()
    data[[1, 4], 0] = np.nan
    data[7, 1:] = np.nan
    data[9] = np.nan  # barren
    rows = np.array([1, 4, 7, 9, 10])
    want = _normalizers(complete, complete.state, rows)
    model = factorized_mixture(data, 3)
    state = initialize(Engine(model), np.random.default_rng(0))
    state = state.updated({k: (v, complete.state.moments[k]) for k, v in globals_.items()})
    got = _normalizers(model, state, rows)
    np.testing.assert_allclose(got[[0, 1, 2, 4]], want[[0, 1, 2, 4]], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[3], 0.0, atol=1e-12)
