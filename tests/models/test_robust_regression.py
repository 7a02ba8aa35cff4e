"""models.robust_regression: the Student-t regression against hand-written coordinate ascent
(Archambeau & Verleysen 2007's updates with a design matrix), and its fit to data with outliers
against the Gaussian regression's."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import linear_regression, robust_regression
from tests.helpers import student_t_cavi


def _data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    x = np.c_[np.ones(n), rng.normal(size=(n, 2))]
    y = x @ np.array([0.5, 2.0, -1.0]) + 0.3 * rng.normal(size=n)
    y[:4] += np.array([25.0, -30.0, 18.0, 40.0])  # gross outliers
    return x, y


@pytest.mark.parametrize("sweeps", [2, 50])
def test_robust_regression_is_the_hand_written_coordinate_ascent(sweeps):
    x, y = _data()
    model = robust_regression(x, y)
    res = model.fit(iterations=sweeps, tol=0, init="prior")
    order = [k for k in model.compile()[1] if not model[k].observed]
    m, s, a, b, la, lb = student_t_cavi(x, y, order, sweeps)
    np.testing.assert_allclose(model["w"].mean, m, rtol=1e-10)
    np.testing.assert_allclose(np.linalg.inv(model["w"].parameters["precision"]), s, rtol=1e-10)
    np.testing.assert_allclose([model["tau"].parameters["shape"], model["tau"].parameters["rate"]], [a, b],
                               rtol=1e-10)
    np.testing.assert_allclose(model["lam"].parameters["rate"], lb, rtol=1e-10)
    assert np.all(np.diff(res.elbo) >= -1e-9 * np.abs(res.elbo[1:]))


def test_outliers_get_small_weights_and_leave_the_fit():
    x, y = _data(1, 60)
    robust, plain = robust_regression(x, y), linear_regression(x, y)
    robust.fit()
    plain.fit()
    truth = np.array([0.5, 2.0, -1.0])
    assert np.abs(robust["w"].mean - truth).max() < 0.15 < 0.5 < np.abs(plain["w"].mean - truth).max()
    weights = robust["lam"].mean
    assert weights[:4].max() < 0.1 * np.median(weights[4:])


def test_robust_regression_checks_its_inputs():
    x, y = _data()
    with pytest.raises(vmp.HyperparameterError, match="robust_regression: dof"):
        robust_regression(x, y, dof=0.0)
    with pytest.raises(vmp.ShapeError, match="robust_regression"):
        robust_regression(x[:, 0], y)
