"""``C @ x`` for a Gaussian node C over a plate of its rows: y_t ~ N(C x_t, R^-1).

- the factor against its closed form written here from the q's parameters,
  E[(y - C x)^T R (y - C x)] = tr(E[R] E[y y^T]) - 2 E[y]^T E[R] E[C] E[x]
  + sum_i E[R_ii] tr(E[c_i c_i^T] E[x x^T]) + sum_{i != k} E[R_ik] E[c_i]^T E[x x^T] E[c_k],
  and E[log|R|] from the Wishart's digammas (a full Wishart R over a chain; Gamma r_i per output
  over plain Gaussians with a latent y);
- observed rows (a point C) give the constant map's fit (``A @ x`` with a constant matrix): q(x),
  q(R) and the bound to 1e-12, the bound shifted by the rows' log prior;
- an update of q(C) is the block-coordinate update of the rows written here (each row's Gaussian
  given q(x), E[R] and the other rows' means, in order), and repeated updates reach the Gaussian
  posterior mean of the stacked rows;
- bad input names the node.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import vmp
from tests.helpers import randomize
from tests.rule_cases import gaussian_chain_random_map, gaussian_random_map_ard
from vmp.graph.compiled import CompiledFactor
from vmp.graph.draws import draw
from vmp.inference.engine import Engine


def _second(node) -> tuple[np.ndarray, np.ndarray]:
    """E[v], E[v v^T] of a Gaussian node (or a chain's steps) from its parameters."""
    p = node.parameters
    cov = p["covariance"] if "covariance" in p else np.linalg.inv(p["precision"])
    return p["mean"], cov + p["mean"][..., :, None] * p["mean"][..., None, :]


def _wishart(node) -> tuple[np.ndarray, float]:
    """E[R] = nu W and E[log|R|] = sum_i psi((nu + 1 - i) / 2) + P log 2 + log|W|."""
    p = node.parameters
    nu, w = float(p["dof"]), p["scale"]
    dim = len(w)
    return nu * w, float(np.sum(special.digamma((nu + 1 - np.arange(1, dim + 1)) / 2)) + dim * np.log(2)
                         + np.linalg.slogdet(w)[1])


def _closed_form(ey, eyy, er, elogdet, c1, c2, x1, x2) -> np.ndarray:
    """The expected log-density per element (leading axes), rows independent under q."""
    dim = er.shape[-1]
    off = 1.0 - np.eye(dim)
    quad = (np.einsum("...ik,...ik->...", er, eyy)
            - 2 * np.einsum("...i,...ik,kj,...j->...", ey, er, c1, x1)
            + np.einsum("...i,ijl,...jl->...", np.diagonal(er, axis1=-2, axis2=-1), c2, x2)
            + np.einsum("...ik,ik,ij,...jl,kl->...", er, off, c1, x2, c1))
    return -0.5 * quad + 0.5 * elogdet - 0.5 * dim * np.log(2 * np.pi)


def test_the_factor_is_its_closed_form_under_a_full_wishart():
    model, child = gaussian_chain_random_map()
    randomize(model, np.random.default_rng(3))
    y = model[child]
    er, elogdet = _wishart(model["R"])
    c1, c2 = _second(model["C"])
    x1, x2 = _second(model["x"])
    ours = CompiledFactor(y).elog(y.factor_weights(), per_element=True, cached=False)
    data = np.asarray(y.data, float)
    expected = _closed_form(data, data[:, :, None] * data[:, None, :], er, elogdet, c1, c2, x1, x2)
    seen = np.array([True, True, False, True])
    np.testing.assert_allclose(ours[seen], expected[seen], rtol=1e-12, atol=1e-12)
    assert np.all(ours[~seen] == 0.0)


def test_the_factor_is_its_closed_form_with_gamma_precisions_per_output():
    model, child = gaussian_random_map_ard()
    randomize(model, np.random.default_rng(4))
    y = model[child]
    p = model["r"].parameters
    er = np.diag(p["shape"] / p["rate"])
    elogdet = float(np.sum(special.digamma(p["shape"]) - np.log(p["rate"])))
    c1, c2 = _second(model["C"])
    x1, x2 = _second(model["x"])
    ey, eyy = _second(y)
    ours = CompiledFactor(y).elog(None, per_element=True, cached=False)
    np.testing.assert_allclose(ours, _closed_form(ey, eyy, er, elogdet, c1, c2, x1, x2), rtol=1e-12, atol=1e-12)


def _lds(y, c, r, *, rows: bool):
    """x a chain with known dynamics, y_t ~ N(C x_t, R^-1): C constant (``A @ x``) or observed
    rows over the plate "out" (``C @ x``, the random map's path at a point); R a constant
    precision matrix or, with r=None, a Wishart node."""
    steps, dim = y.shape
    with vmp.Model("lds") as model:
        prec = vmp.Wishart("R", dim + 2.0, np.eye(dim) / (dim + 2.0)) if r is None else r
        if rows:
            with vmp.Plate("out", dim):
                c = vmp.Gaussian("C", np.zeros(2), np.eye(2), observed=c)
        with vmp.Plate("time", steps):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.array([[0.9, 0.2], [-0.1, 0.7]]),
                                        10.0 * np.eye(2))
            vmp.Gaussian("y", c @ x, prec, observed=y)
    return model


@pytest.mark.parametrize("learned_r", [False, True])
def test_point_rows_give_the_constant_map(learned_r):
    rng = np.random.default_rng(0)
    c = rng.normal(size=(3, 2))
    v = rng.normal(size=(3, 3))
    r = None if learned_r else np.linalg.inv(0.3 * (v @ v.T + np.eye(3)))
    y = rng.normal(size=(40, 3))
    constant, rows = _lds(y, c, r, rows=False), _lds(y, c, r, rows=True)
    for model in (constant, rows):
        model.fit(iterations=6, tol=0)
    for key in ("mean", "covariance", "cross_covariance"):
        np.testing.assert_allclose(rows["x"].parameters[key], constant["x"].parameters[key], rtol=0, atol=1e-12)
    if learned_r:
        np.testing.assert_allclose(rows["R"].parameters["scale"], constant["R"].parameters["scale"], rtol=1e-12)
    prior = stats.multivariate_normal(np.zeros(2), np.eye(2)).logpdf(c).sum()
    assert rows.elbo() == pytest.approx(constant.elbo() + prior, rel=0, abs=1e-10)


def _learned_rows(steps: int = 30, iterations: int = 3):
    rng = np.random.default_rng(5)
    a = np.array([[0.9, 0.2], [-0.1, 0.7]])
    x = np.zeros((steps, 2))
    x[0] = rng.normal(size=2)
    for t in range(1, steps):
        x[t] = a @ x[t - 1] + 0.5 * rng.normal(size=2)
    y = x @ (3.0 * rng.normal(size=(3, 2))).T + 0.3 * rng.normal(size=(steps, 3))
    prior_mean = rng.normal(size=(3, 2))
    prior_prec = np.array([np.eye(2) * (1 + i) + 0.3 for i in range(3)])
    with vmp.Model("rows") as model:
        r = vmp.Wishart("R", 6.0, np.array([[1.0, 0.6, 0.2], [0.6, 1.0, -0.4], [0.2, -0.4, 1.0]]) / 6.0)
        with vmp.Plate("out", 3):
            c = vmp.Gaussian("C", prior_mean, prior_prec)
        with vmp.Plate("time", steps):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), a, 4.0 * np.eye(2))
            vmp.Gaussian("y", c @ x, r, observed=y)
    model.fit(iterations=iterations, tol=0, init={"C": rng.normal(size=(3, 2))})
    return model, prior_mean, prior_prec


def _given_q(model) -> tuple:
    """E[R], E[x_t], E[x_t x_t^T] and the data y of the fitted model."""
    return (_wishart(model["R"])[0],) + _second(model["x"]) + (np.asarray(model["y"].data, float),)


def test_an_update_of_the_rows_is_their_block_coordinate_update():
    """Row i given q(x), E[R] and the current means m_k of the other rows (rows before i already
    updated): Lambda_i = Lambda0_i + E[R_ii] sum_t E[x_t x_t^T],
    eta_i = Lambda0_i m0_i + sum_t (sum_k E[R_ik] y_tk E[x_t] - sum_{k != i} E[R_ik] E[x_t x_t^T] m_k)."""
    model, m0, l0 = _learned_rows()
    er, x1, x2, y = _given_q(model)
    means = model["C"].parameters["mean"].copy()
    precisions = np.empty((3, 2, 2))
    for i in range(3):
        precisions[i] = l0[i] + er[i, i] * x2.sum(0)
        eta = l0[i] @ m0[i] + np.einsum("k,tk,tj->j", er[i], y, x1)
        eta -= sum(er[i, k] * x2.sum(0) @ means[k] for k in range(3) if k != i)
        means[i] = np.linalg.solve(precisions[i], eta)
    natural, _ = Engine(model).coordinate(model.state, model["C"])
    found = model["C"].family.parameters(natural)
    np.testing.assert_allclose(found["precision"], precisions, rtol=1e-12)
    np.testing.assert_allclose(found["mean"], means, rtol=0, atol=1e-12)


def test_repeated_updates_of_the_rows_reach_the_stacked_posterior_mean():
    """The stacked rows' Gaussian given q(x) and E[R]: precision blocks (i, k)
    E[R_ik] sum_t E[x_t x_t^T] + [i = k] Lambda0_i, linear term Lambda0_i m0_i + sum_t sum_k
    E[R_ik] y_tk E[x_t]; the mean-field fixed point has its mean."""
    model, m0, l0 = _learned_rows()
    er, x1, x2, y = _given_q(model)
    big = np.kron(er, x2.sum(0))
    eta = np.concatenate([l0[i] @ m0[i] + np.einsum("k,tk,tj->j", er[i], y, x1) for i in range(3)])
    for i in range(3):
        big[2 * i:2 * i + 2, 2 * i:2 * i + 2] += l0[i]
    stacked = np.linalg.solve(big, eta).reshape(3, 2)
    engine, state = Engine(model), model.state
    for _ in range(300):
        natural, moments = engine.coordinate(state, model["C"])
        state = state.updated({"C": (natural, moments)})
    np.testing.assert_allclose(model["C"].family.parameters(natural)["mean"], stacked, rtol=0, atol=1e-10)


def _declare(c_event=2, c_plate=3, r_dim=3, y_dim=3, gamma=False, inside=False):
    with vmp.Model("bad"):
        with vmp.Plate("out", c_plate):
            c = vmp.Gaussian("C", np.zeros(c_event), np.eye(c_event))
        with vmp.Plate("r_dims", r_dim):
            g = vmp.Gamma("g", 1.0, 1.0)
        r = g if gamma else vmp.Wishart("R", r_dim + 1.0, np.eye(r_dim))
        with vmp.Plate("time", 5):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2))
            if inside:
                with vmp.Plate("out", c_plate):
                    c @ x
            vmp.Gaussian("y", c @ x, r, observed=np.zeros((5, y_dim)))


@pytest.mark.parametrize("args,error,match", [
    ({"c_event": 3}, vmp.ShapeError, "'C' @ 'x'.*rows of 'C' have dimension 3.*'x' has dimension 2"),
    ({"y_dim": 4}, vmp.ShapeError, "node 'y'"),
    ({"r_dim": 4}, vmp.ShapeError, "node 'y'"),
    ({"r_dim": 4, "gamma": True}, vmp.ShapeError, "node 'y'.*'g'"),
    ({"inside": True}, vmp.GraphError, "'C' @ 'x'.*plate 'out'"),
])
def test_bad_input_names_the_node(args, error, match):
    with pytest.raises(error, match=match):
        _declare(**args)


def test_a_matrix_of_another_family_is_refused():
    with vmp.Model("bad"):
        with vmp.Plate("out", 3):
            g = vmp.Gamma("g", 1.0, 1.0)
        with vmp.Plate("time", 5):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), np.eye(2), np.eye(2))
            with pytest.raises(vmp.GraphError, match="'g' @ 'x'.*Gaussian node over a plate of its rows"):
                g @ x


def test_the_predictive_of_y_reads_the_map():
    """E[y_t] = E[C] E[x_t] and Cov[y_t] = E[(C x_t)(C x_t)^T] - E[y_t] E[y_t]^T + E[R^-1]
    (E[R^-1] = W^-1 / (nu - P - 1)), by the closed form; joint draws of C x (``draws.draw``, which
    the predictive's and the prior's samples push through the glue) within 5 standard errors of
    E[C x] and of E[(C x)(C x)^T]."""
    model, _, _ = _learned_rows(iterations=100)
    pred = model.predict("y")
    c1, c2 = _second(model["C"])
    x1, x2 = _second(model["x"])
    p = model["R"].parameters
    mean = x1 @ c1.T
    second = np.einsum("ij,tjl,kl->tik", c1, x2, c1)
    second[:, np.arange(3), np.arange(3)] = np.einsum("ijl,tjl->ti", c2, x2)
    cov = second - mean[:, :, None] * mean[:, None, :] + np.linalg.inv(p["scale"]) / (float(p["dof"]) - 4)
    np.testing.assert_allclose(pred.mean, mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pred.covariance, cov, rtol=1e-10, atol=1e-12)
    m = draw(model["y"].parents["mean"], 4000, np.random.default_rng(1), {})
    for values, expected in ((m, mean), (m[..., :, None] * m[..., None, :], second)):
        se = values.std(0) / np.sqrt(len(values))
        assert np.all(np.abs(values.mean(0) - expected) < 5 * se + 1e-12)


def test_a_forecast_reads_the_rows():
    """k steps past the end, E[y] = E[C] A^k E[x_{T-1}] (A known; C and x independent under q):
    the forecast's draws within 5 standard errors."""
    model, _, _ = _learned_rows(iterations=100)
    ahead = model.forecast(4, draws=4000, seed=2)
    a = np.array([[0.9, 0.2], [-0.1, 0.7]])
    last = model["x"].parameters["mean"][-1]
    c = model["C"].parameters["mean"]
    expected = np.array([c @ np.linalg.matrix_power(a, k) @ last for k in range(1, 5)])
    se = ahead.draws.std(0) / np.sqrt(len(ahead.draws))
    assert ahead.draws.shape == (4000, 4, 3)
    assert np.all(np.abs(ahead.mean - expected) < 5 * se)


def test_rows_are_coupled_only_under_a_full_precision():
    """Under a Wishart R the rows of C meet in E[R]'s off-diagonal and are updated one at a time;
    with Gamma precisions per output that term is zero and the rows are updated together."""
    full, child = gaussian_chain_random_map()
    assert set(full.compile()[0][child].coupled) == {"C"}
    diagonal, child = gaussian_random_map_ard()
    assert diagonal.compile()[0][child].coupled == {}
