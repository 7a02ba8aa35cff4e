"""GaussianWishart, NormalGamma and StickBreaking nodes: exact posteriors and evidence against the
closed forms (Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution", eqs.
(250)-(266) and (85)-(95)), gathered and in plates; declaration errors; the scaling glue."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import vmp
from vmp.families._linalg import multigammaln


def _normal_wishart_evidence(x, m0, beta0, nu0, w0_inv):
    """log p(X) and the posterior (m, beta, nu, W^-1) of N points under N(mu | m0, (beta0 L)^-1) W(L | nu0, W0)."""
    n, d = x.shape
    xbar = x.mean(0)
    scatter = (x - xbar).T @ (x - xbar)
    beta, nu = beta0 + n, nu0 + n
    m = (beta0 * m0 + n * xbar) / beta
    w_inv = w0_inv + scatter + beta0 * n / beta * np.outer(xbar - m0, xbar - m0)
    log_z = (-0.5 * n * d * np.log(np.pi) + multigammaln(0.5 * nu, d) - multigammaln(0.5 * nu0, d)
             + 0.5 * nu0 * np.linalg.slogdet(w0_inv)[1] - 0.5 * nu * np.linalg.slogdet(w_inv)[1]
             + 0.5 * d * (np.log(beta0) - np.log(beta)))
    return log_z, (m, beta, nu, w_inv)


def _normal_gamma_evidence(x, m0, beta0, a0, b0):
    n = x.size
    xbar = x.mean()
    beta, a = beta0 + n, a0 + 0.5 * n
    m = (beta0 * m0 + n * xbar) / beta
    b = b0 + 0.5 * np.sum((x - xbar) ** 2) + beta0 * n * (xbar - m0) ** 2 / (2 * beta)
    log_z = (special.gammaln(a) - special.gammaln(a0) + a0 * np.log(b0) - a * np.log(b)
             + 0.5 * (np.log(beta0) - np.log(beta)) - 0.5 * n * np.log(2 * np.pi))
    return log_z, (m, beta, a, b)


def test_gathered_gaussian_wishart_is_the_exact_posterior_and_evidence():
    """Two groups of points, each reading its own (mu_g, Lambda_g) through a gather: one update
    gives each group's exact Normal-Wishart posterior, and the bound is the log evidence."""
    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 1, 0, 1], 6)
    x = rng.normal(size=(groups.size, 3)) + 2.0 * groups[:, None]
    m0, beta0, nu0 = np.array([0.5, 0.0, -0.5]), 0.3, 4.5
    w0 = np.array([[1.0, 0.2, 0.0], [0.2, 2.0, 0.1], [0.0, 0.1, 0.5]])
    with vmp.Model("groups") as model:
        with vmp.Plate("groups", 2):
            theta = vmp.GaussianWishart("theta", m0, beta0, nu0, w0)
        with vmp.Plate("data", groups.size):
            vmp.Gaussian("x", theta[groups], observed=x)
    result = model.fit(iterations=3, tol=0.0, progress=False)
    total = 0.0
    p = model["theta"].parameters
    for g in range(2):
        log_z, (m, beta, nu, w_inv) = _normal_wishart_evidence(x[groups == g], m0, beta0, nu0, np.linalg.inv(w0))
        total += log_z
        np.testing.assert_allclose(p["mean"][g], m, rtol=1e-12)
        np.testing.assert_allclose(p["beta"][g], beta, rtol=1e-12)
        np.testing.assert_allclose(p["dof"][g], nu, rtol=1e-12)
        np.testing.assert_allclose(np.linalg.inv(p["scale"][g]), w_inv, rtol=1e-10)
    np.testing.assert_allclose(result.elbo[-1], total, rtol=1e-12)


def test_normal_gamma_in_plates_is_the_exact_posterior_and_evidence():
    """A plate of three NormalGamma (mu_j, tau_j), each observed through its own column of points."""
    rng = np.random.default_rng(1)
    y = rng.normal([0.0, 3.0, -1.0], [1.0, 0.3, 2.0], size=(8, 3))
    m0, beta0, a0, b0 = np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.0, 0.1]), 2.0, np.array([1.0, 0.5, 3.0])
    with vmp.Model("columns") as model:
        with vmp.Plate("columns", 3):
            theta = vmp.NormalGamma("theta", m0, beta0, a0, b0)
        with vmp.Plate("rows", 8), vmp.Plate("columns", 3):
            vmp.Normal("y", theta, observed=y)
    result = model.fit(iterations=3, tol=0.0, progress=False)
    p = model["theta"].parameters
    total = 0.0
    for j in range(3):
        log_z, (m, beta, a, b) = _normal_gamma_evidence(y[:, j], m0[j], beta0[j], a0, b0[j])
        total += log_z
        np.testing.assert_allclose([p["mean"][j], p["beta"][j], p["shape"][j], p["rate"][j]], [m, beta, a, b],
                                   rtol=1e-12)
    np.testing.assert_allclose(result.elbo[-1], total, rtol=1e-12)


def test_stick_breaking_weights_from_counts():
    """Observed categories under stick-breaking weights: q(v_k) = Beta(1 + N_k, alpha + sum_{i>k} N_i)
    (Blei & Jordan eqs. (18)-(19)); with v_K = 1 the K-th count only lengthens the earlier sticks."""
    z = np.array([0, 0, 1, 3, 3, 3, 2, 0])
    counts = np.bincount(z, minlength=4).astype(float)
    after = counts[::-1].cumsum()[::-1] - counts
    for closed in (False, True):
        with vmp.Model("sticks") as model:
            pi = vmp.StickBreaking("pi", 0.7, 4, last_stick_one=closed)
            with vmp.Plate("data", z.size):
                vmp.Categorical("z", pi, observed=z)
        model.fit(iterations=2, tol=0.0, progress=False)
        p = model["pi"].parameters
        sticks = slice(0, 3 if closed else 4)
        np.testing.assert_allclose(p["alpha"][sticks], 1.0 + counts[sticks], rtol=1e-12)
        np.testing.assert_allclose(p["beta"][sticks], 0.7 + after[sticks], rtol=1e-12)
        mean = model["pi"].mean
        assert np.isclose(mean.sum(), 1.0) == closed


def test_a_gamma_concentration_gets_blei_and_jordans_update():
    """alpha ~ Gamma(s1, s2): q(alpha) = Gamma(s1 + K, s2 - sum_k E[log(1 - v_k)]) (Blei & Jordan section 4;
    K - 1 sticks when v_K = 1)."""
    z = np.array([0, 1, 1, 2, 0, 0, 4])
    for closed, sticks in ((False, 5), (True, 4)):
        with vmp.Model("hyper") as model:
            alpha = vmp.Gamma("alpha", 2.0, 3.0)
            pi = vmp.StickBreaking("pi", alpha, 5, last_stick_one=closed)
            with vmp.Plate("data", z.size):
                vmp.Categorical("z", pi, observed=z)
        model.fit(iterations=300, tol=0.0, progress=False)  # to the fixed point of the pair
        log_w = model["pi"].moments[1]
        p = model["alpha"].parameters
        np.testing.assert_allclose(p["shape"], 2.0 + sticks, rtol=1e-12)
        np.testing.assert_allclose(p["rate"], 3.0 - log_w[:sticks].sum(), rtol=1e-12)


@pytest.mark.parametrize("build, error, words", [
    (lambda: vmp.GaussianWishart("t", np.zeros(2), 1.0, 0.5, np.eye(2)), vmp.HyperparameterError, ["'t'", "dof"]),
    (lambda: vmp.GaussianWishart("t", np.zeros(2), 0.0, 3.0, np.eye(2)), vmp.HyperparameterError, ["'t'", "beta"]),
    (lambda: vmp.GaussianWishart("t", np.zeros(2), -1.0, 3.0, np.eye(2)), vmp.HyperparameterError, ["'t'", "beta"]),
    (lambda: vmp.GaussianWishart("t", np.zeros(2), 1.0, 3.0, -np.eye(2)), vmp.HyperparameterError, ["'t'", "scale"]),
    (lambda: vmp.GaussianWishart("t", np.zeros(3), 1.0, 3.0, np.eye(2)), vmp.ShapeError, ["'t'", "mean"]),
    (lambda: vmp.NormalGamma("t", 0.0, 0.0, 1.0, 1.0), vmp.HyperparameterError, ["'t'", "beta"]),
    (lambda: vmp.NormalGamma("t", 0.0, 1.0, -1.0, 1.0), vmp.HyperparameterError, ["'t'", "shape"]),
    (lambda: vmp.NormalGamma("t", 0.0, 1.0, 1.0, 0.0), vmp.HyperparameterError, ["'t'", "rate"]),
])
def test_joint_declaration_errors(build, error, words):
    with vmp.Model("m"), pytest.raises(error) as info:
        build()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_stick_breaking_declaration_errors():
    with vmp.Model("m"):
        for bad in (1, 0, -3, 2.5, True, "4"):
            with pytest.raises(vmp.HyperparameterError, match="'pi'.*truncation"):
                vmp.StickBreaking("pi", 1.0, bad)
        for bad in (0.0, -1.0, np.inf, np.nan):
            with pytest.raises(vmp.HyperparameterError, match="'pi'.*concentration"):
                vmp.StickBreaking("pi", bad, 5)
        with vmp.Plate("K", 2):
            lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with pytest.raises(vmp.ConjugacyError, match="'pi'.*Wishart"):
            vmp.StickBreaking("pi", lam, 5)


def test_a_joint_parent_is_mean_and_precision_together():
    with vmp.Model("m"):
        with vmp.Plate("K", 2):
            theta = vmp.GaussianWishart("theta", np.zeros(2), 1.0, 3.0, np.eye(2))
            mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        z = vmp.Categorical("z", np.full(2, 0.5))
        with pytest.raises(vmp.GraphError, match="'x'.*no precision beside it"):
            vmp.Gaussian("x", theta[z], np.eye(2))
        with pytest.raises(vmp.GraphError, match="'x'.*give a precision"):
            vmp.Gaussian("x", mu[z])
        with pytest.raises(vmp.GraphError, match="'y'.*give a precision.*NormalGamma"):
            vmp.Normal("y", theta[z])
        with pytest.raises(vmp.GraphError, match="only Gamma and Wishart"):
            2.0 * theta[z]
        with pytest.raises(vmp.GraphError, match="cannot be indexed; only random nodes can be gated"):
            (2.0 * mu)[z]


def test_scaled_gates_and_gathers_are_the_scaled_parameters():
    """c * tau[z], (c * tau)[z], tau[z] / (1/c) and a scaled gather give the q of the same model with
    c folded into the data (y' = y / sqrt(c) for a Normal with precision c tau, rate c lam for a Poisson)."""
    rng = np.random.default_rng(2)
    y = rng.normal(size=12) * np.repeat([0.5, 2.0], 6)
    rows = np.repeat([0, 1], 6)
    fits = []
    for spelling in ("gather", "scaled gather", "gate"):
        with vmp.Model("m") as model:
            with vmp.Plate("G", 2):
                tau = vmp.Gamma("tau", 2.0, 1.0)
            with vmp.Plate("N", 12):
                if spelling == "gather":
                    vmp.Normal("y", 0.0, tau[rows], observed=y * np.sqrt(2.5))
                elif spelling == "scaled gather":
                    vmp.Normal("y", 0.0, 2.5 * tau[rows], observed=y)
                else:
                    z = vmp.Categorical("z", np.eye(2)[rows], observed=rows)
                    vmp.Normal("y", 0.0, (2.5 * tau)[z], observed=y)
        model.fit(iterations=3, tol=0.0, progress=False)
        fits.append(model["tau"].parameters)
    for other in fits[1:]:
        np.testing.assert_allclose(other["shape"], fits[0]["shape"], rtol=1e-12)
        np.testing.assert_allclose(other["rate"], fits[0]["rate"], rtol=1e-12)


@pytest.mark.parametrize("family", [vmp.families.GaussianWishart, vmp.families.NormalGamma])
def test_the_marginal_of_the_mean_is_that_of_draws(family):
    """``marginal`` (the Student-t of mu that summaries' sd and intervals read) against the mean's
    draws from the joint q: quantiles within Monte Carlo error."""
    eta = family.example()
    draws = family.sample(eta, np.random.default_rng(5), size=(20000,))
    mu = draws[..., -1, :] if family is vmp.families.GaussianWishart else draws[..., 0]
    d = family.marginal(eta)
    for q in (0.1, 0.5, 0.9):
        hit = np.mean(mu <= d.ppf(q), axis=0)
        assert np.all(np.abs(hit - q) < 5 * np.sqrt(q * (1 - q) / 20000)), (q, hit)


@pytest.mark.parametrize("closed", [False, True])
def test_stick_breaking_marginals_are_the_weights_moments(closed):
    """The summaries' sd and interval of stick-breaking weights: exact mean and variance against
    Monte Carlo over independent Beta sticks, the interval holding 95% of independent draws."""
    from vmp.families import ClosedStickBreaking, StickBreaking

    family = ClosedStickBreaking if closed else StickBreaking
    a, b = np.array([3.0, 2.0, 5.0, 1.5]), np.array([4.0, 6.0, 2.0, 3.0])
    natural = family.natural_from(a, b)
    marginal = family.marginal(natural)
    v = np.random.default_rng(7).beta(a, b, size=(400_000, 4))
    if closed:
        v[:, -1] = 1.0
    pi = v * np.concatenate([np.ones((len(v), 1)), np.cumprod(1 - v, axis=1)[:, :-1]], axis=1)
    assert marginal.mean() == pytest.approx(pi.mean(0), abs=5 * pi.std(0).max() / np.sqrt(len(v)))
    assert marginal.var() == pytest.approx(pi.var(0), rel=0.01)
    lo, hi = marginal.interval(0.95)
    assert np.mean((pi >= lo) & (pi <= hi), axis=0) == pytest.approx(0.95, abs=0.01)
