"""``model.set_data`` gives the factors the new data's own terms (a Poisson's base measure
-log y!, its all-zeros form): the bound after set_data is the bound of a model declared with
those data (same size, and a resized plate)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp


def _poisson(y):
    with vmp.Model("counts") as m:
        rate = vmp.Gamma("rate", 1.5, 0.5)
        with vmp.Plate("data", len(y)):
            vmp.Poisson("x", rate, observed=y)
    return m


@pytest.mark.parametrize("first", ["zeros", "other counts", "resized"])
def test_set_data_bound_is_the_declared_models(first):
    y = np.random.default_rng(0).poisson(3.0, 20)
    start = {"zeros": np.zeros(20, int), "other counts": y[::-1] + 1, "resized": np.ones(7, int)}[first]
    model = _poisson(start)
    model.set_data("x", y)
    got = model.fit()
    want = _poisson(y).fit()
    np.testing.assert_allclose(model.state.natural["rate"], (-20.5, 0.5 + y.sum()), rtol=1e-14)
    assert got.final_elbo == pytest.approx(want.final_elbo, rel=1e-13)
