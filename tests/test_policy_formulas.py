"""The message-weighting policies against the formulas of their papers, on count likelihoods.

- SVI+ (Paisley et al., Definition 1): after one step with rho = 1 the global q is
  eta + N/|S| sum_{n in S} (1 + eps_n - mean(eps)) E[t(x_n)], with the weights the policy drew;
- annealing (Mandt et al., section 2.2) in a stochastic fit: the locals' update and the globals'
  data terms are divided by T; its fixed point, written out for a Poisson mixture;
- global tempering (Mandt et al., eq. (9)) in a stochastic fit: q(T) from the expected log
  likelihood of all the data, with the Poisson's -log y! in it, and the globals weighted E_q[1/T].
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import digamma, gammaln, logsumexp, softmax

import vmp

Y = np.array([0, 3, 1, 7, 2, 0, 4, 2, 9, 11, 6, 1])


class _Recorded(vmp.SVIPlus):
    """SVI+ that keeps the rows and global weights of each step."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def weights(self, t, rows, rng, st):
        local, glob = super().weights(t, rows, rng, st)
        self.seen.append((np.array(rows), glob))
        return local, glob


@pytest.mark.parametrize("size,effective", [(8, 2.0), (8, 8.0)], ids=["noisy", "plain"])
def test_svi_plus_step_is_definition_1(size, effective):
    a, b = 2.0, 0.5
    exposure = np.linspace(0.5, 2.0, Y.size)
    with vmp.Model("m") as model:
        lam = vmp.Gamma("lam", a, b)
        with vmp.Plate("N", Y.size):
            vmp.Poisson("y", lam, exposure=exposure, observed=Y)
    policy = _Recorded(effective=effective, redraws=0)
    model.fit(method="stochastic", subsample=vmp.Minibatch("N", size), step=vmp.Constant(1.0), iterations=1,
              seed=3, policies=[policy], evaluate_every=0)
    (rows, w), = policy.seen
    if effective >= size:
        assert w is None
        w = np.ones(size)
    else:
        assert w.mean() == pytest.approx(1.0, abs=1e-12) and w.std() > 0.5
    scale = Y.size / size
    assert lam.parameters["shape"] == pytest.approx(a + scale * np.sum(w * Y[rows]), rel=1e-12)
    assert lam.parameters["rate"] == pytest.approx(b + scale * np.sum(w * exposure[rows]), rel=1e-12)


def _poisson_mixture():
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.poisson(1.0, 8), rng.poisson(7.0, 8)])
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.array([1.0, 2.0]))
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", 2.0, 0.5)
        with vmp.Plate("N", y.size):
            z = vmp.Categorical("z", pi)
            vmp.Poisson("y", lam[z], observed=y)
    return model, y


def test_stochastic_annealing_reaches_the_tempered_fixed_point():
    """q(z_n) ∝ exp{(E[log pi_k] + y_n E[log lam_k] - E[lam_k]) / T}; q(pi) = Dir(alpha0 + sum_n r_n / T),
    q(lam_k) = Gamma(a + sum_n r_nk y_n / T, b + sum_n r_nk / T), with full minibatches and rho = 1."""
    model, y = _poisson_mixture()
    temp = 2.5
    model.fit(method="stochastic", subsample=vmp.Minibatch("N", y.size), step=vmp.Constant(1.0), iterations=300,
              seed=1, policies=[vmp.Annealing(lambda t: temp)], evaluate_every=0)
    alpha = model["pi"].parameters["alpha"]
    a, b = model["lam"].parameters["shape"], model["lam"].parameters["rate"]
    e_log_pi = digamma(alpha) - digamma(alpha.sum())
    r = softmax((e_log_pi + y[:, None] * (digamma(a) - np.log(b)) - a / b) / temp, axis=1)
    np.testing.assert_allclose(alpha, [1.0, 2.0] + r.sum(0) / temp, rtol=1e-10)
    np.testing.assert_allclose(a, 2.0 + r.T @ y / temp, rtol=1e-10)
    np.testing.assert_allclose(b, 0.5 + r.sum(0) / temp, rtol=1e-10)
    assert np.max(np.abs(r - softmax(e_log_pi + y[:, None] * (digamma(a) - np.log(b)) - a / b, axis=1))) > 0.05


def test_stochastic_global_tempering_is_eq_9_with_the_whole_log_likelihood():
    """r_m ∝ pi_m exp{D / T_m - log C(T_m)}, D = sum_n E[log Poi(y_n | lam)] (with -log y_n!), and
    q(lam) = Gamma(a + E[1/T] sum y, b + E[1/T] N), at the fixed point of full minibatches, rho = 1."""
    temps, log_c, prior = np.array([1.0, 2.0, 5.0]), np.array([0.0, 17.0, 27.5]), np.array([0.5, 0.3, 0.2])
    with vmp.Model("m") as model:
        lam = vmp.Gamma("lam", 2.0, 0.5)
        with vmp.Plate("N", Y.size):
            vmp.Poisson("y", lam, observed=Y)
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("N", Y.size), step=vmp.Constant(1.0),
                    iterations=100, seed=1, evaluate_every=0,
                    policies=[vmp.Tempering(temps, log_partition=log_c, prior=prior)])
    a, b = lam.parameters["shape"], lam.parameters["rate"]
    d = np.sum(Y * (digamma(a) - np.log(b)) - a / b - gammaln(Y + 1))
    r = softmax(d / temps + np.log(prior) - log_c)
    w = r @ (1 / temps)
    assert a == pytest.approx(2.0 + w * Y.sum(), rel=1e-10)
    assert b == pytest.approx(0.5 + w * Y.size, rel=1e-10)
    assert res.history["temperature"][-1] == pytest.approx(1 / w, rel=1e-10)
    assert np.all(r > 0.05), (r, "q(T) not at a corner: the test sees every term of eq. (9)")


@pytest.mark.parametrize("collapsed", [False, True], ids=["mean-field", "collapsed"])
def test_local_tempering_is_eq_10_and_11_on_a_poisson_mixture(collapsed):
    """Batch local tempering at its fixed point: r_nm ∝ pi_m exp{E_q[log p(y_n, z_n | beta)] / T_m
    - log C_n(T_m)} (eq. (10)); collapsed, r_nm ∝ pi_m Z_n(T_m) / C_n(T_m) with
    Z_n(T) = sum_k exp{s (E[log pi_k] + E[log Poi(y_n | lam_k)])}; log C_n(T) = log sum_k exp{s E[log pi_k]} sum_y Poi(y | e^{E[log lam_k]})^s
    (globals plugged in), and every factor of datapoint n weighted E[1/T_n] (eq. (11)). On main
    the count's 1/y! was not raised to s in C_n: r_n was off by up to 0.3."""
    rng = np.random.default_rng(0)
    y = np.concatenate([rng.poisson(2.0, 10), rng.poisson(9.0, 10), [40]])
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.array([1.0, 1.0]))
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", [2.0, 9.0], 1.0)
        with vmp.Plate("N", y.size):
            z = vmp.Categorical("z", pi)
            vmp.Poisson("y", lam[z], observed=y)
    temps = np.array([1.0, 2.0, 4.0])
    fit = model.batch(policies=[vmp.LocalTempering(temps, collapsed=collapsed)], iterations=300, tol=0.0)
    fit.run()
    r_t = fit.state.loop.policies[0]["r"]
    alpha = pi.parameters["alpha"]
    a, b = lam.parameters["shape"], lam.parameters["rate"]
    r = z.parameters["probabilities"]
    e_log_pi, e_log_lam = digamma(alpha) - digamma(alpha.sum()), digamma(a) - np.log(b)
    per_k = e_log_pi + y[:, None] * e_log_lam - a / b - gammaln(y + 1)[:, None]
    counts = np.arange(400)
    log_c = np.stack([logsumexp(e_log_pi / t + np.array([logsumexp(stats.poisson.logpmf(counts, np.exp(e)) / t)
                                                        for e in e_log_lam])) for t in temps])
    if collapsed:
        fit_n = np.stack([logsumexp(per_k / t, axis=1) for t in temps], axis=1)
    else:
        fit_n = np.sum(r * per_k, axis=1)[:, None] / temps
    logits = fit_n - log_c + np.log(1 / 3)
    np.testing.assert_allclose(r_t, softmax(logits, axis=1), rtol=1e-9, atol=1e-12)
    w = r_t @ (1 / temps)
    np.testing.assert_allclose(r, softmax(w[:, None] * per_k, axis=1), rtol=1e-9)
    np.testing.assert_allclose(alpha, 1.0 + w @ r, rtol=1e-10)
    np.testing.assert_allclose(a, [2.0, 9.0] + (w * y) @ r, rtol=1e-10)
    np.testing.assert_allclose(b, 1.0 + w @ r, rtol=1e-10)
    assert r_t[-1, -1] > 0.9 and r_t[:, 0].max() > 0.3, "the outlier is hot, the others are not"


def test_stochastic_global_tempering_of_a_mixture_reads_the_expected_log_joint_without_entropy():
    """Eq. (9) with locals: D = sum_n sum_k r_nk (E[log pi_k] + E[log Poi(y_n | lam_k)]), the q(z_n)
    entropy not in it, r_nk ∝ exp{E[1/T] (...)}, and the globals weighted E[1/T]."""
    model, y = _poisson_mixture()
    temps, log_c, prior = np.array([1.0, 1.5, 3.0]), np.array([0.0, 12.0, 30.0]), np.array([0.4, 0.3, 0.3])
    res = model.fit(method="stochastic", subsample=vmp.Minibatch("N", y.size), step=vmp.Constant(1.0),
                    iterations=300, seed=1, evaluate_every=0,
                    policies=[vmp.Tempering(temps, log_partition=log_c, prior=prior)])
    alpha = model["pi"].parameters["alpha"]
    a, b = model["lam"].parameters["shape"], model["lam"].parameters["rate"]
    per_k = (digamma(alpha) - digamma(alpha.sum()) + y[:, None] * (digamma(a) - np.log(b)) - a / b
             - gammaln(y + 1)[:, None])
    w = 1 / res.history["temperature"][-1]
    r = softmax(w * per_k, axis=1)
    r_t = softmax(np.sum(r * per_k) / temps + np.log(prior) - log_c)
    assert w == pytest.approx(r_t @ (1 / temps), rel=1e-10)
    assert np.all(r_t[1:] > 0.05), r_t
    np.testing.assert_allclose(alpha, [1.0, 2.0] + w * r.sum(0), rtol=1e-10)
    np.testing.assert_allclose(a, 2.0 + w * r.T @ y, rtol=1e-10)
    np.testing.assert_allclose(b, 0.5 + w * r.sum(0), rtol=1e-10)
