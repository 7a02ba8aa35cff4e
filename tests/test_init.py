"""Initialization: every gate breaks symmetry, wherever it sits (a gate inside vmp.dot)."""
from __future__ import annotations

import numpy as np

import vmp


def _mixture_of_regressions(rng, n=80):
    x = np.c_[np.ones(n), rng.uniform(0.5, 2.0, size=n)]  # away from where the lines cross
    w_true = np.array([[1.0, 2.0], [-1.0, -2.0]])
    z = rng.integers(0, 2, n)
    y = np.einsum("nd,nd->n", x, w_true[z]) + 0.1 * rng.normal(size=n)
    with vmp.Model("mor") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("N", n):
            xn = vmp.Gaussian("x", np.zeros(2), np.eye(2), observed=x)
            zz = vmp.Categorical("z", pi)
            vmp.Normal("y", vmp.dot(w[zz], xn), 100.0, observed=y)
    return model, x, y, z


def test_gate_inside_dot_initializes_and_recovers_each_regression():
    """fit() used to crash in _break_symmetry ('Gate' object has no attribute 'observed').
    With separated components q(z) is one-hot at the truth, and q(w_k) is then the closed-form
    Bayesian linear regression on the rows of component k."""
    model, x, y, z = _mixture_of_regressions(np.random.default_rng(0))
    model.fit(iterations=200)
    r = model["z"].mean
    labels = r.argmax(1)
    assert np.all(r.max(1) > 1 - 1e-6)
    perm = np.array([labels[z == 0][0], labels[z == 1][0]])
    assert np.all(labels == perm[z])
    for k in range(2):
        rows = z == k
        prec = np.eye(2) + 100.0 * x[rows].T @ x[rows]
        mean = np.linalg.solve(prec, 100.0 * x[rows].T @ y[rows])
        q = model["w"].parameters
        assert np.allclose(q["mean"][perm[k]], mean, atol=1e-6)
        assert np.allclose(q["precision"][perm[k]], prec, rtol=1e-5)
