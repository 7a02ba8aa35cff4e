"""Per-coordinate masks on Gaussian vectors: the masked coordinates of an element are latent,
q(x_m | x_o = data). Checked against scipy's marginal densities (exact cases), hand-coded
coordinate ascent of the same mean-field factorization in numpy (random mean; a Bayesian
Gaussian mixture with Wishart precisions), the exact evidence as an upper bound, and finite
differences of the bound around the pinned update."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import vmp
from tests.helpers import factorized_mixture

LOG2PI = np.log(2 * np.pi)


def _pd(rng, d, ridge=1.0):
    a = rng.normal(size=(d, d))
    return a @ a.T + ridge * np.eye(d)


def _mask(rng, n, d, p=0.35):
    seen = rng.random((n, d)) > p
    seen[~seen.any(1), 0] = True  # no row entirely missing (those are barren: tests/test_missing.py)
    return seen


def _logdet(a):
    return np.linalg.slogdet(a)[1]


# ----- exact: known mean and precision --------------------------------------------------------
def test_known_mean_and_precision_give_the_conditional_and_the_marginal_density():
    """x_n ~ N(m0, L^-1) with coordinates missing: q(x_m) is the conditional Gaussian
    N(m0_m - L_mm^-1 L_mo (x_o - m0_o), L_mm^-1) and the bound is sum_n log N(x_o | m0_o, S_oo)."""
    rng = np.random.default_rng(0)
    n, d = 8, 4
    m0, lam = rng.normal(size=d), _pd(rng, d)
    x, seen = rng.normal(size=(n, d)), _mask(rng, n, d, 0.45)
    seen[0] = True
    with vmp.Model() as model:
        with vmp.Plate("data", n):
            node = vmp.Gaussian("x", m0, lam, observed=np.where(seen, x, np.nan), mask=seen)
    res = model.fit(iterations=2)
    cov = np.linalg.inv(lam)
    exact = sum(stats.multivariate_normal(m0[o], cov[np.ix_(o, o)]).logpdf(x[i, o]) for i, o in enumerate(seen))
    assert res.final_elbo == pytest.approx(exact, abs=1e-10)
    p = node.parameters
    for i, o in enumerate(seen):
        m = ~o
        mean = m0[m] - np.linalg.solve(lam[np.ix_(m, m)], lam[np.ix_(m, o)] @ (x[i, o] - m0[o])) if m.any() else []
        assert np.allclose(node.mean[i, m], mean, atol=1e-12) and np.array_equal(node.mean[i, o], x[i, o])
        assert np.allclose(p["covariance"][i][np.ix_(m, m)], np.linalg.inv(lam[np.ix_(m, m)]), atol=1e-12)
        assert np.all(p["covariance"][i][o] == 0) and np.all(p["covariance"][i][:, o] == 0)


def test_impute_and_draws_read_the_conditional():
    """``impute`` gives the masked coordinates' conditional means and variances; draws keep the
    observed coordinates at the data and have the conditional mean elsewhere (Monte Carlo)."""
    rng = np.random.default_rng(7)
    n, d = 4, 3
    m0, lam = rng.normal(size=d), _pd(rng, d)
    x, seen = rng.normal(size=(n, d)), _mask(rng, n, d, 0.5)
    with vmp.Model() as model:
        with vmp.Plate("data", n):
            node = vmp.Gaussian("x", m0, lam, observed=np.where(seen, x, np.nan), mask=seen)
    model.fit(iterations=2)
    imp = model.impute("x")
    mean, var = [], []
    for i, o in enumerate(seen):
        m = ~o
        if m.any():
            c = np.linalg.inv(lam[np.ix_(m, m)])
            mean.extend(m0[m] - c @ lam[np.ix_(m, o)] @ (x[i, o] - m0[o]))
            var.extend(np.diag(c))
    assert np.allclose(imp.mean, mean, atol=1e-12) and np.allclose(imp.variance, var, atol=1e-12)
    draws = node.sample(20000, rng=0)
    assert np.array_equal(draws[:, seen], np.broadcast_to(x[seen], (20000, seen.sum())))
    err = np.abs(draws[:, ~seen].mean(0) - mean) / np.sqrt(np.array(var) / 20000)
    assert err.max() < 4.5


def test_a_partially_observed_parent_with_observed_children_has_the_exact_evidence():
    """x_n ~ N(m0, L^-1) partly observed, y_n ~ N(x_n, I) observed: the only latent variables are
    the x_n,m, so q is exact and the bound is log p(x_o, y), one multivariate normal per row."""
    rng = np.random.default_rng(1)
    n, d = 6, 3
    m0, lam = rng.normal(size=d), _pd(rng, d)
    x, y, seen = rng.normal(size=(n, d)), rng.normal(size=(n, d)), _mask(rng, n, d)
    with vmp.Model() as model:
        with vmp.Plate("data", n):
            xn = vmp.Gaussian("x", m0, lam, observed=np.where(seen, x, 0.0), mask=seen)
            vmp.Gaussian("y", xn, np.eye(d), observed=y)
    res = model.fit(iterations=2)
    s = np.linalg.inv(lam)
    joint = np.block([[s, s], [s, s + np.eye(d)]])
    exact = 0.0
    for i, o in enumerate(seen):
        keep = np.concatenate([o, np.ones(d, bool)])
        exact += stats.multivariate_normal(np.concatenate([m0, m0])[keep], joint[np.ix_(keep, keep)]).logpdf(
            np.concatenate([x[i], y[i]])[keep])
    assert res.final_elbo == pytest.approx(exact, abs=1e-10)


# ----- a random mean: mean field against hand-coded coordinate ascent ------------------------------
def _random_mean(n=10, d=3, seed=2):
    rng = np.random.default_rng(seed)
    m0, p0, lam = rng.normal(size=d), _pd(rng, d, 0.5), _pd(rng, d)
    x, seen = rng.normal(size=(n, d)) + 1.0, _mask(rng, n, d)
    return m0, p0, lam, x, seen


def _hand_random_mean(m0, p0, lam, x, seen, sweeps):
    """CAVI of q(mu) prod_n q(x_n,m), mu first (vmp's schedule), from q(x_n,m) at its prior
    given E[mu] = m0 (``init="prior"``), and the bound at the end."""
    n, d = x.shape
    ex = np.where(seen, x, 0.0)
    cov_x = np.zeros((n, d, d))
    s_mu = np.linalg.inv(p0 + n * lam)

    def impute(m_mu):
        for i, o in enumerate(seen):
            m = ~o
            if m.any():
                c = np.linalg.inv(lam[np.ix_(m, m)])
                cov_x[i][np.ix_(m, m)] = c
                ex[i, m] = m_mu[m] - c @ lam[np.ix_(m, o)] @ (x[i, o] - m_mu[o])

    impute(m0)
    for _ in range(sweeps):
        m_mu = s_mu @ (p0 @ m0 + lam @ ex.sum(0))
        impute(m_mu)
    e_mumu = s_mu + np.outer(m_mu, m_mu)
    bound = 0.5 * _logdet(p0) - 0.5 * d * LOG2PI - 0.5 * np.trace(
        p0 @ (e_mumu - np.outer(m0, m_mu) - np.outer(m_mu, m0) + np.outer(m0, m0)))
    bound += 0.5 * _logdet(2 * np.pi * np.e * s_mu)
    for i, o in enumerate(seen):
        exx = cov_x[i] + np.outer(ex[i], ex[i])
        bound += 0.5 * _logdet(lam) - 0.5 * d * LOG2PI - 0.5 * np.trace(
            lam @ (exx - np.outer(ex[i], m_mu) - np.outer(m_mu, ex[i]) + e_mumu))
        m = ~o
        if m.any():
            bound += 0.5 * _logdet(2 * np.pi * np.e * cov_x[i][np.ix_(m, m)])
    return m_mu, s_mu, ex, bound


def _random_mean_model(m0, p0, lam, x, seen):
    with vmp.Model() as model:
        mu = vmp.Gaussian("mu", m0, p0)
        with vmp.Plate("data", len(x)):
            vmp.Gaussian("x", mu, lam, observed=np.where(seen, x, np.nan), mask=seen)
    return model, mu


def test_random_mean_matches_hand_coded_mean_field_sweep_by_sweep():
    m0, p0, lam, x, seen = _random_mean()
    model, mu = _random_mean_model(m0, p0, lam, x, seen)
    fit = model.batch(init="prior")
    for sweeps in (1, 2, 5):
        fit.run(sweeps - fit.state.step)
        model.state = fit.state
        m_mu, s_mu, ex, bound = _hand_random_mean(m0, p0, lam, x, seen, sweeps)
        assert np.allclose(mu.mean, m_mu, atol=1e-12, rtol=0)
        assert np.allclose(mu.parameters["covariance"], s_mu, atol=1e-12, rtol=0)
        assert np.allclose(model["x"].mean, ex, atol=1e-12, rtol=0)
        assert model.elbo() == pytest.approx(bound, abs=1e-9)


def test_random_mean_bound_rises_and_stays_below_the_exact_evidence():
    """The observed coordinates of all rows are one multivariate normal: Cov = C0[a, b] + [n = n']
    S[a, b] (C0 = P0^-1, S = L^-1). Mean field is not exact here: the bound is strictly below."""
    m0, p0, lam, x, seen = _random_mean()
    model, _ = _random_mean_model(m0, p0, lam, x, seen)
    res = model.fit(iterations=200, tol=1e-13, init="prior")
    elbo = np.array(res.to_dict()["elbo"])
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:]))
    rows, cols = np.nonzero(seen)
    c0, s = np.linalg.inv(p0), np.linalg.inv(lam)
    cov = c0[np.ix_(cols, cols)] + (rows[:, None] == rows[None, :]) * s[np.ix_(cols, cols)]
    evidence = stats.multivariate_normal(m0[cols], cov).logpdf(x[rows, cols])
    assert res.final_elbo < evidence - 1e-3
    assert res.final_elbo == pytest.approx(_hand_random_mean(m0, p0, lam, x, seen, 400)[3], abs=1e-8)


def test_the_pinned_update_is_a_stationary_point_of_the_bound():
    """Finite differences of the bound in q(x_n,m)'s free natural parameters (eta_1[m],
    eta_2[m, m]) vanish right after x's update: the pinned moments and entropy are the gradient
    of the same bound the update maximizes."""
    m0, p0, lam, x, seen = _random_mean(n=5)
    model, _ = _random_mean_model(m0, p0, lam, x, seen)
    res = model.fit(iterations=3, init="prior", tol=0.0)
    state = res.state
    row = int(np.nonzero(~seen.all(1))[0][0])
    m = np.nonzero(~seen[row])[0]
    nat = state.natural["x"]
    h = 1e-5

    def bound(k, which, step):
        new = tuple(a.copy() for a in nat)
        if which == 0:
            new[0][row, m[k]] += step
        else:
            new[1][row, m[k], m[k]] += step
        model.state = state.updated({"x": (new, vmp.families.Gaussian.moments(new))})
        return model.elbo()

    for k in range(len(m)):
        for which in (0, 1):
            grad = (bound(k, which, h) - bound(k, which, -h)) / (2 * h)
            assert abs(grad) < 1e-6
    assert bound(0, 1, -0.1) < bound(0, 1, 0.0)  # not flat


# ----- the mixture -------------------------------------------------------------------------------
def _mixture_data(n=90, d=3, missing=0.15, seed=3):
    rng = np.random.default_rng(seed)
    centers = 6.0 * np.eye(d)
    labels = rng.integers(d, size=n)
    x = centers[labels] + rng.normal(size=(n, d))
    seen = _mask(rng, n, d, missing)
    return x, seen, centers


def _hand_mixture_sweep(q, x, seen, prior):
    """One sweep of CAVI for q(pi) prod q(mu_k) q(Lambda_k) prod q(z_n) q(x_n,m) in vmp's order
    (pi, mu, Lambda, z, x), and the bound after it."""
    alpha0, m0, p0, nu0, w0 = prior
    n, d = x.shape
    k = len(q["alpha"])
    ex, cx, r = q["ex"], q["cx"], q["r"]
    exx = cx + ex[:, :, None] * ex[:, None, :]
    alpha = alpha0 + r.sum(0)
    el = q["nu"][:, None, None] * q["w"]
    mm, sm = np.empty((k, d)), np.empty((k, d, d))
    for j in range(k):
        pj = p0 + r[:, j].sum() * el[j]
        sm[j] = np.linalg.inv(pj)
        mm[j] = sm[j] @ (p0 @ m0 + el[j] @ (r[:, j] @ ex))
    emumu = sm + mm[:, :, None] * mm[:, None, :]

    def spread(j):
        return (exx - ex[:, :, None] * mm[j][None, None, :] - mm[j][None, :, None] * ex[:, None, :]
                + emumu[j][None])

    nu, w = nu0 + r.sum(0), np.empty((k, d, d))
    for j in range(k):
        w[j] = np.linalg.inv(np.linalg.inv(w0) + np.einsum("n,nab->ab", r[:, j], spread(j)))
    el = nu[:, None, None] * w
    elogdet = np.array([special.digamma((nu[j] + 1 - np.arange(1, d + 1)) / 2).sum() + d * np.log(2)
                        + _logdet(w[j]) for j in range(k)])
    elogpi = special.digamma(alpha) - special.digamma(alpha.sum())
    ell = np.stack([0.5 * elogdet[j] - 0.5 * d * LOG2PI - 0.5 * np.einsum("ab,nba->n", el[j], spread(j))
                    for j in range(k)], 1)
    logr = elogpi + ell
    r = np.exp(logr - special.logsumexp(logr, 1, keepdims=True))
    ex, cx = np.where(seen, x, 0.0), np.zeros((n, d, d))
    lbar, hbar = np.einsum("nk,kab->nab", r, el), np.einsum("nk,kab,kb->na", r, el, mm)
    for i, o in enumerate(seen):
        mis = ~o
        if mis.any():
            c = np.linalg.inv(lbar[i][np.ix_(mis, mis)])
            cx[i][np.ix_(mis, mis)] = c
            ex[i, mis] = c @ (hbar[i, mis] - lbar[i][np.ix_(mis, o)] @ x[i, o])
    new = dict(alpha=alpha, m=mm, s=sm, nu=nu, w=w, r=r, ex=ex, cx=cx)
    exx = cx + ex[:, :, None] * ex[:, None, :]
    ell = np.stack([0.5 * elogdet[j] - 0.5 * d * LOG2PI - 0.5 * np.einsum("ab,nba->n", el[j], spread(j))
                    for j in range(k)], 1)
    bound = (r * ell).sum() + (r * elogpi).sum() - (r * np.log(np.where(r > 0, r, 1))).sum()
    bound += special.gammaln(alpha0.sum()) - special.gammaln(alpha0).sum() + ((alpha0 - 1) * elogpi).sum()
    bound += stats.dirichlet(alpha).entropy()
    for j in range(k):
        dm = emumu[j] - np.outer(m0, mm[j]) - np.outer(mm[j], m0) + np.outer(m0, m0)
        bound += 0.5 * _logdet(p0) - 0.5 * d * LOG2PI - 0.5 * np.trace(p0 @ dm)
        bound += 0.5 * _logdet(2 * np.pi * np.e * sm[j])
        bound += (0.5 * (nu0 - d - 1) * elogdet[j] - 0.5 * np.trace(np.linalg.solve(w0, el[j]))
                  - 0.5 * nu0 * d * np.log(2) - 0.5 * nu0 * _logdet(w0) - special.multigammaln(nu0 / 2, d))
        bound += stats.wishart(nu[j], w[j]).entropy()
    for i, o in enumerate(seen):
        if (~o).any():
            bound += 0.5 * _logdet(2 * np.pi * np.e * cx[i][np.ix_(~o, ~o)])
    return new, bound


def _read(model):
    px, pl = model["x"].parameters, model["Lambda"].parameters
    return dict(alpha=model["pi"].parameters["alpha"], m=model["mu"].mean, s=model["mu"].parameters["covariance"],
                nu=pl["dof"], w=pl["scale"], r=model["z"].parameters["probabilities"], ex=model["x"].mean,
                cx=px["covariance"])


def test_mixture_with_missing_coordinates_matches_hand_coded_mean_field():
    """A sweep of vmp from its state after 4 sweeps equals the hand-coded sweep from the same q,
    and so does the bound after it (the builder's documented priors: m0 and S from the observed
    entries, P0 = 0.01 S^-1, nu0 = D, W0 = S^-1 / D)."""
    x, seen, _ = _mixture_data()
    model = factorized_mixture(np.where(seen, x, np.nan), 3)
    fit = model.batch(seed=0)
    fit.run(4)
    model.state = fit.state
    q = _read(model)
    fit.step()
    model.state = fit.state
    d = x.shape[1]
    data = np.ma.masked_array(x, ~seen)
    cov = np.ma.cov(data, rowvar=False, allow_masked=True).filled() + 1e-6 * np.eye(d)
    prec = np.linalg.inv(cov)
    prior = (np.ones(3), data.mean(0).filled(), 1e-2 * prec, float(d), prec / d)
    new, bound = _hand_mixture_sweep(q, x, seen, prior)
    got = _read(model)
    for key in ("alpha", "m", "s", "nu", "w", "r", "ex", "cx"):
        assert np.allclose(got[key], new[key], rtol=1e-9, atol=1e-10), key
    assert model.elbo() == pytest.approx(bound, rel=1e-11)


def test_mixture_with_nan_recovers_the_clusters_and_never_lowers_the_bound():
    x, seen, centers = _mixture_data(n=150)
    model = factorized_mixture(np.where(seen, x, np.nan), 3)
    res = model.fit(iterations=200, seed=0)
    means = model["mu"].mean
    assert np.max(np.min(np.linalg.norm(means[:, None] - centers[None], axis=-1), axis=0)) < 0.5
    elbo = np.array(res.to_dict()["elbo"])[1:]
    assert np.all(np.diff(elbo) >= -1e-9 * np.abs(elbo[1:]))
    assert model.missing() == [f"x: {int((~seen).sum())} masked coordinates in {int((~seen.all(1)).sum())} of "
                               f"150 elements inferred"]


def test_rows_with_every_coordinate_missing_are_barren():
    """Rows entirely NaN integrate out with their z_n: the converged bound and posterior equal
    those of the mixture with the rows deleted (the priors read the same observed entries)."""
    x, seen, _ = _mixture_data(n=80)
    data = np.where(seen, x, np.nan)
    gone = np.arange(80) % 9 == 4
    data[gone] = np.nan
    a, b = factorized_mixture(data, 3), factorized_mixture(data[~gone], 3)
    ra, rb = a.fit(iterations=500, tol=1e-14, seed=0), b.fit(iterations=500, tol=1e-14, seed=0)
    assert ra.final_elbo == pytest.approx(rb.final_elbo, rel=1e-10)
    order = np.argsort(a["mu"].mean[:, 0]), np.argsort(b["mu"].mean[:, 0])
    assert np.allclose(a["mu"].mean[order[0]], b["mu"].mean[order[1]], atol=1e-7)
    assert a["z"].barren is not None and np.array_equal(a["z"].barren, gone)


def test_mixture_without_nan_is_the_model_without_a_mask():
    x, _, _ = _mixture_data()
    a, b = factorized_mixture(x, 3), factorized_mixture(x, 3, mask=np.ones(x.shape, bool))
    assert a["x"].mask is None and b["x"].mask is None
    assert a.fit(iterations=20, seed=1).final_elbo == b.fit(iterations=20, seed=1).final_elbo


def test_mask_argument_and_nan_are_one_mask():
    x, seen, _ = _mixture_data()
    a = factorized_mixture(np.where(seen, x, np.nan), 3)
    b = factorized_mixture(x, 3, mask=seen)
    assert np.array_equal(a["x"].mask, b["x"].mask)
    assert a.fit(iterations=10, seed=1).final_elbo == b.fit(iterations=10, seed=1).final_elbo


def test_stochastic_fit_and_resume_on_nan_data(tmp_path):
    """SVI (Minibatch over the data plate: x's masked coordinates are locals of the minibatch)
    runs on NaN data; 10 steps, a checkpoint and 10 resumed steps give the bits of 20."""
    x, seen, centers = _mixture_data(n=120)
    data = np.where(seen, x, np.nan)
    opts = dict(method="stochastic", subsample=vmp.Minibatch("data", 30), seed=0, progress=False)
    model = factorized_mixture(data, 3)
    full = model.fit(iterations=20, **opts)
    assert np.isfinite(full.final_elbo)
    means = model["mu"].mean
    assert np.max(np.min(np.linalg.norm(means[:, None] - centers[None], axis=-1), axis=0)) < 0.7
    assert np.all(np.diff([0] + full.to_dict()["history"]["accesses"]) >= 30)  # x's drawn rows are data read
    factorized_mixture(data, 3).fit(iterations=10, checkpoint=tmp_path / "c.npz", **opts)
    rest = factorized_mixture(data, 3).fit(iterations=20, resume=tmp_path / "c.npz", **opts)
    for name, natural in full.state.natural.items():
        for a, b in zip(natural, rest.state.natural[name]):
            np.testing.assert_array_equal(a, b)


# ----- declaration errors ------------------------------------------------------------------------
def test_bad_masks_name_the_node():
    with vmp.Model():
        with vmp.Plate("data", 4):
            with pytest.raises(vmp.ShapeError, match="node 'x'.*plates \\(4,\\) or plates \\+ event \\(4, 2\\)"):
                vmp.Gaussian("x", np.zeros(2), np.eye(2), observed=np.zeros((4, 2)), mask=np.ones((4, 3), bool))
            with pytest.raises(vmp.DataError, match="node 'y'.*booleans"):
                vmp.Gaussian("y", np.zeros(2), np.eye(2), observed=np.zeros((4, 2)), mask=np.ones((4, 2)))
            with pytest.raises(vmp.ShapeError, match="node 'n'.*expected plates \\(4,\\)$"):
                vmp.Normal("n", 0.0, 1.0, observed=np.zeros(4), mask=np.ones((4, 2), bool))
    with pytest.raises(vmp.DataError, match="gaussian_mixture: data contains inf"):
        factorized_mixture(np.array([[1.0, np.inf], [0.0, 1.0]]), 2)
    with pytest.raises(vmp.ShapeError, match="gaussian_mixture: mask must have the shape"):
        factorized_mixture(np.zeros((3, 2)), 2, mask=np.ones(3, bool))


# ----- the other builders --------------------------------------------------------------------------
def test_hmm_with_missing_coordinates_recovers_the_emissions():
    """A sticky 3-state chain with 2-D Gaussian emissions, 15% of the coordinates NaN (and 2% of
    steps entirely): the state means within 0.3 of the truth; the bound never decreases."""
    from models import hmm
    from tests.test_models_recovery import markov_sequences, matched

    truth = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0]])
    seqs, _ = markov_sequences(0, lambda z, rng: truth[z] + 0.7 * rng.normal(size=(len(z), 2)), sequences=6)
    rng = np.random.default_rng(5)
    for s in seqs:
        s[rng.random(s.shape) < 0.15] = np.nan
        s[rng.random(len(s)) < 0.02] = np.nan
    model = hmm(seqs, 3)
    assert model["y"].partial
    res = model.fit(seed=0)
    estimate = model["mu"].mean
    assert np.abs(estimate[matched(estimate, truth)] - truth).max() < 0.3
    elbo = np.asarray(res.elbo)
    assert np.all(np.diff(elbo[1:]) >= -1e-9 * np.abs(elbo[2:]))


@pytest.mark.filterwarnings("ignore::vmp.ConvergenceWarning")
def test_factorial_mixture_nan_entries_are_masked_elements():
    """Each x_nd of the factorial mixture is its own element: a NaN entry is an element mask
    (integrated out), the same bits as giving the mask."""
    from models import factorial_mixture

    rng = np.random.default_rng(6)
    x = rng.normal(size=(30, 4))
    seen = rng.random(x.shape) > 0.15
    a = factorial_mixture(np.where(seen, x, np.nan), 2)
    b = factorial_mixture(x, 2, mask=seen)
    assert np.array_equal(a["x"].mask, seen)
    assert a.fit(iterations=5, seed=0).final_elbo == b.fit(iterations=5, seed=0).final_elbo


def test_set_data_with_a_coordinate_mask_infers_the_new_rows():
    """New rows with 30% of their coordinates missing, the globals kept: where the observed
    coordinates identify the cluster (oracle responsibility > 0.99), the imputed coordinates are
    within 10% of the RMSE of the oracle E[x_m | x_o] under the true mixture. (Where they do not,
    q(z_n) q(x_n,m) commits to one cluster where the oracle averages: mean field, not a defect.)"""
    x, seen, centers = _mixture_data(n=120)
    model = factorized_mixture(np.where(seen, x, np.nan), 3)
    model.fit(seed=0)
    rng = np.random.default_rng(8)
    new = centers[rng.integers(3, size=60)] + rng.normal(size=(60, 3))
    s2 = _mask(rng, 60, 3, 0.3)
    model.set_data("x", np.where(s2, new, 0.0), mask=s2)
    assert model["x"].mean.shape == (60, 3)
    imputed = model.impute("x").mean
    oracle, sure = [], []
    for i, o in enumerate(s2):
        lp = -0.5 * ((new[i, o] - centers[:, o]) ** 2).sum(1)
        r = np.exp(lp - special.logsumexp(lp))
        oracle.extend(r @ centers[:, ~o])
        sure.extend([r.max() > 0.99] * int((~o).sum()))
    sure, truth = np.array(sure), new[~s2]
    assert sure.sum() >= 10
    rmse = np.sqrt(np.mean((imputed - truth)[sure] ** 2))
    assert rmse < 1.1 * np.sqrt(np.mean((np.array(oracle) - truth)[sure] ** 2))


@pytest.mark.filterwarnings("ignore::vmp.ConvergenceWarning")
def test_chunked_sweeps_equal_serial_on_nan_data():
    """Batch VMP streamed in blocks of rows (each block's targets pinned by its own rows) gives
    Serial's q."""
    x, seen, _ = _mixture_data(n=100)
    data = np.where(seen, x, np.nan)
    a = factorized_mixture(data, 3).fit(iterations=6, seed=0)
    b = factorized_mixture(data, 3).fit(iterations=6, seed=0, executor=vmp.Chunked(size=37))
    for name, natural in a.state.natural.items():
        for u, v in zip(natural, b.state.natural[name]):
            np.testing.assert_allclose(v, u, rtol=1e-9, atol=1e-9 * np.max(np.abs(u)))
    assert b.final_elbo == pytest.approx(a.final_elbo, rel=1e-12)
