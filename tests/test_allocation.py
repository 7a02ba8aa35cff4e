"""The allocation bound of a Poisson rate vmp.dot(theta, beta) of Gamma nodes (Poisson
factorization, Gopalan et al. 2015), against independent computations:

- the bound equals the collapsed closed form sum y log sum_k exp(E log theta_k + E log beta_k)
  - sum_k E theta_k E beta_k - log y!, written here in numpy, at random q's;
- it lies below E_q[log Poi(y | theta . beta)] (Monte Carlo), and is convex along moments;
- a batch fit stops at a fixed point of Gopalan et al.'s coordinate updates (their Figure 5,
  written here in numpy).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import vmp
from tests.helpers import randomize, set_moments

U, I, K = 4, 5, 3


def _model(y, weights=None):
    with vmp.Model("pf") as model:
        with vmp.Plate("U", U), vmp.Plate("F", K):
            theta = vmp.Gamma("theta", 0.7, 0.6)
        with vmp.Plate("I", I), vmp.Plate("F", K):
            beta = vmp.Gamma("beta", 0.5, 0.8)
        with vmp.Plate("U", U), vmp.Plate("I", I):
            vmp.Poisson("y", vmp.dot(theta, beta), observed=y, weights=weights)
    return model, theta, beta


def _data(seed=0):
    return np.random.default_rng(seed).poisson(1.5, size=(U, I))


def _collapsed(y, w, theta, beta):
    """sum_ui w_ui [y_ui logsumexp_k(E log theta_uk + E log beta_ik) - sum_k E theta_uk E beta_ik - log y_ui!]."""
    (et, elt), (eb, elb) = theta.moments, beta.moments
    s = special.logsumexp(elt[:, None, :] + elb[None, :, :], axis=-1)
    return float(np.sum(w * (y * s - et @ eb.T - special.gammaln(y + 1.0))))


def _factor(model):
    return model.compile()[0]["y"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bound_is_the_collapsed_closed_form(seed):
    y = _data(seed)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, size=(U, I))
    model, theta, beta = _model(y, w)
    randomize(model, np.random.default_rng(seed + 10))
    f = _factor(model)
    assert f.elog(f.child.factor_weights(), cached=False) == pytest.approx(_collapsed(y, w, theta, beta), rel=1e-12)
    for node in (theta, beta):  # the cached bound reuses messages; phi follows the moments
        f.messages(node, f.child.factor_weights())
    assert f.elog(f.child.factor_weights()) == pytest.approx(_collapsed(y, w, theta, beta), rel=1e-12)


def test_bound_is_below_the_expected_log_density_and_convex():
    y = _data(3)
    model, theta, beta = _model(y)
    randomize(model, np.random.default_rng(4))
    f = _factor(model)
    bound = f.elog(None, cached=False)
    rng = np.random.default_rng(5)
    t = theta.family.sample(theta.natural, rng, size=(4000,))
    b = beta.family.sample(beta.natural, rng, size=(4000,))
    rate = np.einsum("suk,sik->sui", t, b)
    mc = np.mean(np.sum(y * np.log(rate) - rate - special.gammaln(y + 1.0), axis=(1, 2)))
    assert bound < mc
    base = theta.moments
    d = [np.zeros_like(base[0]), rng.normal(size=base[1].shape)]
    values = []
    for s in (-1.0, 0.0, 1.0):
        set_moments(theta, [m + s * dm for m, dm in zip(base, d)])
        values.append(f.elog(None, cached=False))
    set_moments(theta, base)
    assert values[0] + values[2] - 2 * values[1] > 1e-6


def test_batch_fit_stops_at_a_fixed_point_of_the_coordinate_updates():
    y = _data(6)
    model, theta, beta = _model(y)
    res = model.fit(iterations=3000, tol=1e-13, seed=0, on_decrease="raise")
    assert np.all(np.diff(res.elbo) >= -1e-9 * np.abs(res.elbo[1:]))
    (et, elt), (eb, elb) = theta.moments, beta.moments
    logits = elt[:, None, :] + elb[None, :, :]
    phi = np.exp(logits - special.logsumexp(logits, axis=-1, keepdims=True))  # Gopalan Fig. 5
    np.testing.assert_allclose(theta.parameters["shape"], 0.7 + np.einsum("ui,uik->uk", y, phi), rtol=1e-5)
    np.testing.assert_allclose(theta.parameters["rate"], np.broadcast_to(0.6 + eb.sum(0), (U, K)), rtol=1e-5)
    np.testing.assert_allclose(beta.parameters["shape"], 0.5 + np.einsum("ui,uik->ik", y, phi), rtol=1e-5)
    np.testing.assert_allclose(beta.parameters["rate"], np.broadcast_to(0.8 + et.sum(0), (I, K)), rtol=1e-5)


def test_a_dot_of_gammas_needs_nodes_sharing_their_innermost_plate():
    with vmp.Model("m"):
        with vmp.Plate("U", 2), vmp.Plate("F", 2):
            theta = vmp.Gamma("theta", 1.0, 1.0)
        with vmp.Plate("I", 2):
            beta = vmp.Gamma("beta", 1.0, 1.0)
        with pytest.raises(vmp.ShapeError, match="innermost plate"):
            vmp.dot(theta, beta)
        with pytest.raises(vmp.GraphError, match="Gamma"):
            vmp.dot(theta, np.ones(2))
