"""Linear regression with a constant design matrix (``vmp.dot(w, X)``) against closed forms:
Bayesian linear regression with known noise precision (posterior and exact evidence), and the
mean-field normal-gamma fixed point with unknown precision (Bishop PRML section 10.3)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp


def _data(n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, x @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=n)


@pytest.mark.parametrize("side", ["left", "right"])
def test_known_noise_precision_is_the_closed_form(side):
    x, y = _data()
    n, d = x.shape
    m0, p0, tau = np.full(d, 0.2), 0.5 * np.eye(d) + 0.1, 4.0
    with vmp.Model("blr") as model:
        w = vmp.Gaussian("w", m0, p0)
        with vmp.Plate("N", n):
            vmp.Normal("y", vmp.dot(w, x) if side == "right" else vmp.dot(x, w), tau, observed=y)
    res = model.fit(iterations=5)
    prec = p0 + tau * x.T @ x
    assert np.allclose(w.parameters["precision"], prec, rtol=1e-12)
    assert np.allclose(w.mean, np.linalg.solve(prec, p0 @ m0 + tau * x.T @ y), rtol=1e-10)
    evidence = stats.multivariate_normal(x @ m0, x @ np.linalg.inv(p0) @ x.T + np.eye(n) / tau).logpdf(y)
    assert res.final_elbo == pytest.approx(evidence, rel=1e-11)


def test_unknown_noise_precision_is_the_normal_gamma_fixed_point():
    x, y = _data(seed=1)
    n, d = x.shape
    a0, b0, p0 = 2.0, 1.0, np.eye(d)
    with vmp.Model("blr") as model:
        w = vmp.Gaussian("w", np.zeros(d), p0)
        tau = vmp.Gamma("tau", a0, b0)
        with vmp.Plate("N", n):
            vmp.Normal("y", vmp.dot(w, x), tau, observed=y)
    model.fit(iterations=300, tol=-1.0)  # no early stop: the fixed point to machine precision
    e_tau = a0 / b0
    for _ in range(500):
        prec = p0 + e_tau * x.T @ x
        cov = np.linalg.inv(prec)
        mean = cov @ (e_tau * x.T @ y)
        rate = b0 + 0.5 * (np.sum((y - x @ mean) ** 2) + np.trace(x.T @ x @ cov))
        e_tau = (a0 + n / 2) / rate
    assert tau.parameters["shape"] == pytest.approx(a0 + n / 2)
    assert tau.parameters["rate"] == pytest.approx(rate, rel=1e-9)
    assert np.allclose(w.mean, mean, rtol=1e-9)


def test_constant_dot_errors_name_the_dot():
    with vmp.Model("bad"):
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        with vmp.Plate("N", 4):
            with pytest.raises(vmp.ShapeError, match=r"dot\(w, const\)"):
                vmp.dot(w, np.ones((5, 3)))
            with pytest.raises(vmp.GraphError, match="at least one"):
                vmp.dot(np.ones(3), np.ones(3))
