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


def _weighted(x, w, data: bool = False):
    with vmp.Model("weighted") as m:
        mu = vmp.Normal("mu", 0.0, 0.01)
        with vmp.Plate("data", len(x)):
            vmp.Normal("x", mu, 2.0, observed=x, weights=vmp.Data("counts", w) if data else w)
    return m


def test_weights_given_as_data_are_replaced_with_the_rows():
    """weights=vmp.Data: set_data gives new rows their weights (a resized plate); the posterior
    of a weighted Normal mean is the conjugate one, precision 0.01 + 2 sum w, mean 2 sum w x / that."""
    rng = np.random.default_rng(1)
    model = _weighted(rng.normal(size=5), np.ones(5), data=True)
    x, w = rng.normal(1.0, 1.0, 12), rng.integers(1, 4, 12).astype(float)
    model.set_data({"x": x, "counts": w})
    model.fit(progress=False)
    precision = 0.01 + 2.0 * w.sum()
    np.testing.assert_allclose(model["mu"].mean, 2.0 * (w @ x) / precision, rtol=1e-12)
    assert model.fit(progress=False).final_elbo == pytest.approx(_weighted(x, w).fit(progress=False).final_elbo,
                                                                 rel=1e-12)
    with pytest.raises(vmp.GraphError, match="weights"):
        model.set_data({"x": np.zeros(4)})  # new rows without their weights
