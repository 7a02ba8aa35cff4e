"""The factorial mixture model (binary Z_nk ~ Bernoulli(pi_k), x_n ~ N(sum_k Z_nk mu_k, 1/tau))
against brute-force enumeration of the 2^K configurations of each Z_n.

With mu and tau fixed, the only hidden node is Z and everything is a finite sum:
- the bound of any factorized q equals sum_Z q(Z) log p(x, Z) + H[q] enumerated;
- the fitted q is a fixed point of the coordinate update q(z_nk) prop. to
  exp E_{q(Z_n,-k)}[log p(x_n, Z_n)], enumerated over the other components;
- with the mu_k on disjoint pixels the likelihood factorizes over k, the exact posterior is a
  product, and q equals it: the bound is the exact log evidence.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special

import vmp

PI = np.array([0.3, 0.5, 0.2])
TAU = 2.0


def _model(x, mu, pi=PI, tau=TAU):
    n, d = x.shape
    with vmp.Model("fmm") as model:
        with vmp.Plate("N", n), vmp.Plate("K", len(pi)):
            z = vmp.Bernoulli("z", pi)
        with vmp.Plate("N", n), vmp.Plate("D", d):
            vmp.Normal("x", vmp.dot(z, mu.T), tau, observed=x)
    return model


def _configs(k):
    return np.array(list(itertools.product([0, 1], repeat=k)), float)  # (2^K, K)


def _log_joint(x, mu, pi=PI, tau=TAU):
    """log p(x_n, Z) for every n and every configuration Z: (N, 2^K)."""
    z = _configs(len(pi))
    prior = z @ np.log(pi) + (1 - z) @ np.log1p(-pi)
    mean = z @ mu  # (2^K, D)
    sq = ((x[:, None, :] - mean[None]) ** 2).sum(-1)
    d = x.shape[1]
    return prior[None] + 0.5 * d * np.log(tau / (2 * np.pi)) - 0.5 * tau * sq


def _q_configs(q):
    """q(Z_n) for each configuration under the factorized q(z_nk) = q_nk: (N, 2^K)."""
    z = _configs(q.shape[1])
    return np.exp(special.xlogy(z[None], q[:, None]) + special.xlog1py(1 - z[None], -q[:, None])).prod(-1)


def _enumerated_bound(q, x, mu):
    h = -(special.xlogy(q, q) + special.xlog1py(1 - q, -q)).sum()
    return float((_q_configs(q) * _log_joint(x, mu)).sum() + h)


def _data(rng, mu, n=5):
    z = (rng.random((n, len(PI))) < PI).astype(float)
    return z @ mu + rng.normal(size=(n, mu.shape[1])) / np.sqrt(TAU)


def test_bound_and_fixed_point_equal_enumeration():
    rng = np.random.default_rng(0)
    mu = rng.normal(size=(3, 4))
    x = _data(rng, mu)
    model = _model(x, mu)
    res = model.fit(iterations=200, tol=0.0, seed=0)
    assert np.all(np.diff(res.elbo) >= -1e-10 * np.abs(res.elbo[1:]))
    q = model["z"].mean
    assert res.elbo[-1] == pytest.approx(_enumerated_bound(q, x, mu), rel=1e-10)
    # the coordinate update of each z_nk from the others, by enumeration
    lj, z = _log_joint(x, mu), _configs(3)
    for k in range(3):
        rest = np.delete(np.arange(3), k)
        w = np.exp(special.xlogy(z[None, :, rest], q[:, None, rest])
                   + special.xlog1py(1 - z[None, :, rest], -q[:, None, rest])).prod(-1)
        e1 = (w * lj * (z[:, k] == 1)).sum(1)
        e0 = (w * lj * (z[:, k] == 0)).sum(1)
        np.testing.assert_allclose(q[:, k], special.expit(e1 - e0), rtol=1e-8, atol=1e-12)
    assert res.elbo[-1] < special.logsumexp(lj, axis=1).sum()


def test_components_on_disjoint_pixels_give_the_exact_posterior():
    rng = np.random.default_rng(1)
    mu = np.zeros((3, 6))
    mu[0, :2], mu[1, 2:4], mu[2, 4:] = [1.5, -1.0], [2.0, 0.5], [-1.0, 1.0]
    x = _data(rng, mu, n=4)
    model = _model(x, mu)
    res = model.fit(iterations=20, tol=0.0, seed=0)
    lj = _log_joint(x, mu)
    assert res.elbo[-1] == pytest.approx(special.logsumexp(lj, axis=1).sum(), rel=1e-10)
    post = np.exp(lj - special.logsumexp(lj, axis=1, keepdims=True))
    np.testing.assert_allclose(model["z"].mean, post @ _configs(3), rtol=1e-8)


def test_a_bernoulli_in_dot_is_refused_against_a_gaussian():
    with vmp.Model("m"), vmp.Plate("N", 2), pytest.raises(vmp.GraphError, match="Bernoulli argument"):
        z = vmp.Bernoulli("z", 0.5)
        g = vmp.Gaussian("g", np.zeros(2), np.eye(2))
        vmp.dot(z, g)


def _local_step(rng, mu, n=30):
    """A minibatch local step (12 of ``n`` rows, local_tol 1e-13) given q(mu) of means near
    ``mu`` and precision 5: (engine, state, z, the draw's rows, the step's Context, mean, prec)."""
    from vmp.inference import steps
    from vmp.inference.engine import Engine
    from vmp.inference.state import State
    from vmp.inference.subsample import Minibatch

    k, d = mu.shape
    x = _data(rng, mu, n=n)
    with vmp.Model("fmm") as model:
        with vmp.Plate("N", n), vmp.Plate("K", k):
            z = vmp.Bernoulli("z", PI)
        with vmp.Plate("D", d), vmp.Plate("K", k):
            m = vmp.Normal("mu", 0.0, 0.5)
        with vmp.Plate("N", n), vmp.Plate("D", d):
            vmp.Normal("x", vmp.dot(z, m), TAU, observed=x)
    engine = Engine(model)
    mean, prec = mu.T + 0.3 * rng.normal(size=(d, k)), np.full((d, k), 5.0)
    eta = m.family.natural_from(mean=mean, precision=prec)
    state = State().updated({"mu": (eta, m.family.moments(eta))})
    plan = Minibatch("N", 12, local_tol=1e-13, local_iterations=1000).prepare(engine, rng)
    draw = plan.draw(engine, rng)
    ctx, _, _ = steps.local_step(engine, plan, state, draw.ctx)
    return engine, state, z, x[draw.rows], draw.rows, ctx, mean, prec


def test_minibatch_local_step_updates_the_components_one_at_a_time():
    """A minibatch's local step updates z_n1..z_nK one slice at a time from the prior, as batch
    coordinate ascent does (``steps.complete``): given the same q(mu) both reach the same q(z)
    (the z_n are independent given mu, so the per-datapoint stopping does not matter), to 1e-9:
    the loop judges the first pass's change from q before it (a sliced target writes its
    moments as it goes; read after it, the change was 0 and the loop stopped after one pass,
    1.2e-6 away)."""
    from vmp.inference import steps

    rng = np.random.default_rng(3)
    engine, state, z, _, rows, ctx, _, _ = _local_step(rng, rng.normal(size=(3, 4)) * 2)
    reference = steps.complete(engine, state, [z], iterations=1000, tol=1e-13).moments["z"][0]
    np.testing.assert_allclose(ctx.overrides["z"][0], reference[rows], atol=1e-9)
    assert np.ptp(reference) > 0.5


def test_minibatch_local_step_equals_a_numpy_coordinate_ascent():
    """K = 3 coupled bits with overlapping components (mu_3 = mu_1 + mu_2 / 5: the bits explain
    one another, so a row needs tens of sweeps): the local step's q(z) equals a per-row
    coordinate ascent in numpy, logit q_nk = logit pi_k + tau sum_d (x_nd E[mu_kd] - E[mu_kd^2] / 2
    - E[mu_kd] sum_(j != k) q_nj E[mu_jd]), k = 1..K in turn from q = pi, to 1e-12."""
    rng = np.random.default_rng(3)
    mu = 0.6 * rng.normal(size=(3, 4))
    mu[2] = mu[0] + 0.2 * mu[1]
    _, _, _, obs, _, ctx, mean, prec = _local_step(rng, mu)
    e_mu, e_mu2 = mean.T, (mean ** 2 + 1.0 / prec).T
    q = np.tile(PI, (len(obs), 1))
    for sweep in range(1000):
        before = q.copy()
        for k in range(3):
            others = q @ e_mu - q[:, [k]] * e_mu[k]
            q[:, k] = special.expit(special.logit(PI[k]) + TAU * (obs @ e_mu[k] - 0.5 * e_mu2[k].sum()
                                                                  - others @ e_mu[k]))
        if np.abs(q - before).max() < 1e-15:
            break
    assert sweep > 20 and ((q > 0.05) & (q < 0.95)).mean() > 0.2
    np.testing.assert_allclose(ctx.overrides["z"][0], q, atol=1e-12)
