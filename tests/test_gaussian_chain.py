"""The Gaussian Markov chain against a hand-written Kalman filter and RTS smoother.

With every parameter constant, q(x) after one update is the exact posterior p(x | y), so its
means and covariances must be the Rauch-Tung-Striebel smoother's (covariance form, written here
from the textbook recursions, Sarkka 2013 algorithms 4.1 and 8.2) and the bound must be the exact
log-likelihood by the prediction-error decomposition, sum_t log N(y_t; C m_t|t-1, C P_t|t-1 C^T + R)
(Harvey 1989 eq. (3.4.7)), with missing steps (no update) and several chains of different lengths.
"""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.families.gaussian_chain import GaussianMarkovChain as Family


def kalman(y, seen, a, q, c, r, m0, p0):
    """Filter and RTS smoother for x_{t+1} = A x_t + N(0, Q), y_t = C x_t + N(0, R) (covariances
    Q, R, P0), steps with seen[t] False skipped; returns smoothed means, covariances,
    Cov(x_t, x_{t+1}) and the log-likelihood of the seen steps (``kalman.filtered``: the filtered
    means and covariances of the last call)."""
    steps, d = len(y), len(m0)
    mf, pf = np.zeros((steps, d)), np.zeros((steps, d, d))
    mp, pp = np.zeros((steps, d)), np.zeros((steps, d, d))
    loglik = 0.0
    for t in range(steps):
        mp[t], pp[t] = (m0, p0) if t == 0 else (a @ mf[t - 1], a @ pf[t - 1] @ a.T + q)
        mf[t], pf[t] = mp[t], pp[t]
        if seen[t]:
            s = c @ pp[t] @ c.T + r
            e = y[t] - c @ mp[t]
            gain = pp[t] @ c.T @ np.linalg.inv(s)
            mf[t] = mp[t] + gain @ e
            pf[t] = pp[t] - gain @ s @ gain.T
            loglik += -0.5 * (len(e) * np.log(2 * np.pi) + np.linalg.slogdet(s)[1] + e @ np.linalg.solve(s, e))
    kalman.filtered = (mf.copy(), pf.copy())
    ms, ps, cross = mf.copy(), pf.copy(), np.zeros((steps, d, d))
    for t in range(steps - 2, -1, -1):
        j = pf[t] @ a.T @ np.linalg.inv(pp[t + 1])
        ms[t] = mf[t] + j @ (ms[t + 1] - mp[t + 1])
        ps[t] = pf[t] + j @ (ps[t + 1] - pp[t + 1]) @ j.T
        cross[t] = j @ ps[t + 1]
    return ms, ps, cross, loglik


def _system(rng, d=2, m=3):
    a = np.array([[0.95, 0.2], [-0.1, 0.8]])
    w = rng.normal(size=(d, d))
    q = 0.1 * (w @ w.T + np.eye(d))
    c = rng.normal(size=(m, d))
    v = rng.normal(size=(m, m))
    r = 0.3 * (v @ v.T + np.eye(m))
    return a, q, c, r, np.array([0.5, -1.0]), np.diag([2.0, 0.5])


def _simulate(rng, a, q, c, r, m0, p0, steps):
    x = np.empty((steps, len(m0)))
    x[0] = rng.multivariate_normal(m0, p0)
    for t in range(1, steps):
        x[t] = rng.multivariate_normal(a @ x[t - 1], q)
    return x, x @ c.T + rng.multivariate_normal(np.zeros(len(r)), r, size=steps)


def _vector_model(y, seen, lengths, a, q, c, r, m0, p0):
    s, steps = seen.shape
    with vmp.Model("lds") as model:
        with vmp.Plate("sequences", s), vmp.Plate("time", steps):
            x = vmp.GaussianMarkovChain("x", m0, np.linalg.inv(p0), a, np.linalg.inv(q), lengths=lengths)
            vmp.Gaussian("y", c @ x, np.linalg.inv(r), observed=y, mask=seen, weights=seen.astype(float))
    return model


def test_q_is_the_rts_smoother_and_the_bound_the_exact_log_likelihood():
    """Three sequences of lengths 9, 5 and 7 padded to 9, a 3-D observation of a 2-D state through
    C @ x with missing steps: smoothed means, covariances and cross-covariances to 1e-10, and the
    bound to 1e-10 of the log-likelihood."""
    rng = np.random.default_rng(0)
    a, q, c, r, m0, p0 = _system(rng)
    lengths, steps = np.array([9, 5, 7]), 9
    y = np.zeros((3, steps, 3))
    seen = np.arange(steps) < lengths[:, None]
    seen[0, [2, 3]] = seen[2, 0] = False
    for i, n in enumerate(lengths):
        y[i, :n] = _simulate(rng, a, q, c, r, m0, p0, n)[1]
    model = _vector_model(y, seen, lengths, a, q, c, r, m0, p0)
    model.fit(iterations=2)
    p = model["x"].parameters
    total = 0.0
    for i, n in enumerate(lengths):
        ms, ps, cross, loglik = kalman(y[i, :n], seen[i, :n], a, q, c, r, m0, p0)
        np.testing.assert_allclose(p["mean"][i, :n], ms, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p["covariance"][i, :n], ps, rtol=0, atol=1e-10)
        np.testing.assert_allclose(p["cross_covariance"][i, :n - 1], cross[:n - 1], rtol=0, atol=1e-10)
        total += loglik
    assert model.elbo() == pytest.approx(total, rel=0, abs=1e-10)


def test_scalar_observations_through_dot():
    """y_t ~ N(c . x_t, 1/r) for a constant c: the same as the vector model with C = c^T."""
    rng = np.random.default_rng(1)
    a, q, c, r, m0, p0 = _system(rng, m=1)
    steps = 12
    y = _simulate(rng, a, q, c, r, m0, p0, steps)[1][:, 0]
    seen = np.ones(steps, bool)
    seen[[4, 5, 9]] = False
    with vmp.Model("lds") as model:
        with vmp.Plate("time", steps):
            x = vmp.GaussianMarkovChain("x", m0, np.linalg.inv(p0), a, np.linalg.inv(q))
            vmp.Normal("y", vmp.dot(x, c[0]), 1.0 / r[0, 0], observed=y, mask=seen)
    model.fit(iterations=2)
    ms, ps, _, loglik = kalman(y[:, None], seen, a, q, c, r, m0, p0)
    np.testing.assert_allclose(model["x"].mean, ms, rtol=0, atol=1e-10)
    assert model.elbo() == pytest.approx(loglik, rel=0, abs=1e-10)


def test_a_padded_step_adds_exactly_nothing():
    """The bound of sequences padded into one plate is the sum of their bounds fitted alone."""
    rng = np.random.default_rng(2)
    a, q, c, r, m0, p0 = _system(rng)
    y1, y2 = (_simulate(rng, a, q, c, r, m0, p0, n)[1] for n in (6, 3))
    padded = np.zeros((2, 6, 3))
    padded[0], padded[1, :3] = y1, y2
    seen = np.arange(6) < np.array([6, 3])[:, None]
    both = _vector_model(padded, seen, [6, 3], a, q, c, r, m0, p0)
    both.fit(iterations=2)
    alone = []
    for y in (y1, y2):
        model = _vector_model(y[None], np.ones((1, len(y)), bool), None, a, q, c, r, m0, p0)
        model.fit(iterations=2)
        alone.append(model.elbo())
    assert both.elbo() == pytest.approx(sum(alone), rel=0, abs=1e-10)
    np.testing.assert_allclose(both["x"].mean[1, 3:], 0.0, atol=1e-14)  # standard normal padding


def test_time_varying_transition_and_inputs():
    """x_{t+1} = A_t x_t + B u_t + N(0, Q): the smoother on the shifted system (the inputs as a
    known offset A_t m + B u_t in a hand-written filter over each step)."""
    rng = np.random.default_rng(3)
    steps = 8
    a_t = 0.6 * rng.normal(size=(steps, 2, 2))
    b, u = rng.normal(size=(2, 1)), rng.normal(size=(steps, 1))
    _, q, c, r, m0, p0 = _system(rng)
    y = rng.normal(size=(steps, 3))
    with vmp.Model("lds") as model:
        with vmp.Plate("time", steps):
            x = vmp.GaussianMarkovChain("x", m0, np.linalg.inv(p0), a_t, np.linalg.inv(q), inputs=(b, u))
            vmp.Gaussian("y", c @ x, np.linalg.inv(r), observed=y)
    model.fit(iterations=2)
    mf, pf, mp, pp, loglik = [], [], [], [], 0.0
    for t in range(steps):
        m, p = (m0, p0) if t == 0 else (a_t[t - 1] @ mf[-1] + b @ u[t - 1], a_t[t - 1] @ pf[-1] @ a_t[t - 1].T + q)
        mp.append(m), pp.append(p)
        s = c @ p @ c.T + r
        e = y[t] - c @ m
        k = p @ c.T @ np.linalg.inv(s)
        mf.append(m + k @ e), pf.append(p - k @ s @ k.T)
        loglik += -0.5 * (3 * np.log(2 * np.pi) + np.linalg.slogdet(s)[1] + e @ np.linalg.solve(s, e))
    ms = [mf[-1]]
    for t in range(steps - 2, -1, -1):
        j = pf[t] @ a_t[t].T @ np.linalg.inv(pp[t + 1])
        ms.insert(0, mf[t] + j @ (ms[0] - mp[t + 1]))
    np.testing.assert_allclose(model["x"].mean, np.array(ms), rtol=0, atol=1e-10)
    assert model.elbo() == pytest.approx(loglik, rel=0, abs=1e-10)


def test_the_smoother_stays_symmetric_and_positive_definite_over_long_chains():
    """10^5 steps of a slowly mixing 2-D system: every Schur complement positive definite, the
    covariances exactly symmetric, and the last steps' means the short chain's where the start
    has been forgotten."""
    rng = np.random.default_rng(4)
    a, q, c, r, m0, p0 = _system(rng)
    steps = 100_000
    x = rng.normal(size=(steps, 2)) * 0.1
    natural = _data_natural(a, q, c, r, m0, p0, x @ c.T)
    p = Family.parameters(natural)
    assert Family.valid(natural).all()
    cov = p["covariance"]
    np.testing.assert_array_equal(cov, np.swapaxes(cov, -1, -2))
    assert np.all(np.linalg.eigvalsh(cov)[..., 0] > 0)
    tail = _data_natural(a, q, c, r, m0, p0, (x @ c.T)[-400:])
    np.testing.assert_allclose(Family.parameters(tail)["mean"][-10:], p["mean"][-10:], atol=1e-9)


def _data_natural(a, q, c, r, m0, p0, y):
    """The chain's natural parameters for constant dynamics and observations y (T x M): the prior
    (``families.gaussian_chain.directed``) plus each step's C^T R^-1 y_t and -1/2 C^T R^-1 C."""
    from vmp.families.gaussian_chain import directed

    steps, d = len(y), len(m0)
    ri = np.linalg.inv(r)
    h, j, k, g, l_next = directed(m0, np.linalg.inv(p0), np.broadcast_to(a, (steps, d, d)), np.zeros((steps, d)),
                                  np.broadcast_to(np.linalg.inv(q), (steps, d, d)))
    return h + y @ ri @ c, j - 0.5 * c.T @ ri @ c, k, g, l_next


def test_declaration_errors():
    with vmp.Model("m"), vmp.Plate("time", 5):
        with pytest.raises(vmp.ShapeError, match="'x'.*transition"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(3), np.eye(2))
        with pytest.raises(vmp.HyperparameterError, match="'x'.*noise"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), -np.eye(2))
        with pytest.raises(vmp.HyperparameterError, match="'x'.*precision"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]), np.eye(2), np.eye(2))
        with pytest.raises(vmp.ShapeError, match="'x'.*dimension"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(3), np.eye(2), np.eye(2))
        with pytest.raises(vmp.ShapeError, match="'x'.*inputs"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2), inputs=(np.ones((2, 1)),
                                                                                              np.ones((4, 1))))
        with pytest.raises(vmp.ShapeError, match="'x'.*control"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2), inputs=(np.ones((3, 1)),
                                                                                              np.ones((5, 1))))
        with pytest.raises(vmp.DataError, match="'x'.*lengths"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2), lengths=6)
        with pytest.raises(vmp.GraphError, match="'x'.*observed"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2), observed=np.zeros((5, 2)))
        with vmp.Plate("rows", 3):
            a = vmp.Gaussian("A", np.zeros(2), np.eye(2))
        with pytest.raises(vmp.ShapeError, match="'x'.*rows"):
            vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), a, np.eye(2))
        with pytest.raises(vmp.ShapeError, match="x.*M x 2"):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2))
            vmp.Gaussian("y", np.ones((3, 3)) @ x, np.eye(3))
    with vmp.Model("m"), pytest.raises(vmp.GraphError, match="'x'.*time"):
        vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2))
