"""``c * P`` for a random scale c (a Gamma node): the variational Student-t and its kin.

Checked against computations written here: the closed-form expected log-density of
N(y | mu, tau lam) and its gradients (and a Monte Carlo estimate of it from numpy draws), the
same model with a known scale, and hand-written coordinate ascent for the univariate and the
multivariate t (Archambeau & Verleysen 2007; Bishop PRML 10.2). The generic rule tests cover
the product too (tests/rule_cases.py: ``*_random_scale``, ``*_product_rate``).
"""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.helpers import randomize, student_t_cavi
from vmp.graph.draws import draw
from vmp.errors import ConjugacyError, GraphError

NU = 3.0


def _data(rng, n=30):
    """Inliers around 1.0 and three gross outliers."""
    return np.r_[rng.normal(1.0, 0.5, n), [14.0, 17.0, -11.0]]


def _student(y, nu=NU, prior=(0.0, 1e-2, 1e-2, 1e-2)):
    """mu ~ N(m0, 1/p0), tau ~ Gamma(a0, b0), lam_n ~ Gamma(nu/2, nu/2), y_n ~ N(mu, 1/(tau lam_n))."""
    m0, p0, a0, b0 = prior
    with vmp.Model("t") as m:
        mu = vmp.Normal("mu", m0, p0)
        tau = vmp.Gamma("tau", a0, b0)
        with vmp.Plate("n", len(y)):
            lam = vmp.Gamma("lam", nu / 2, nu / 2)
            vmp.Normal("y", mu, tau * lam, observed=y)
    return m


def _closed_form(y, mu, tau, lam):
    """E_q[log N(y_n | mu, 1/(tau lam_n))] per n, from the moments (E[mu], E[mu^2]), (E[tau],
    E[log tau]), (E[lam_n], E[log lam_n])."""
    r = y * y - 2 * y * mu[0] + mu[1]
    return 0.5 * (tau[1] + lam[1]) - 0.5 * np.log(2 * np.pi) - 0.5 * tau[0] * lam[0] * r


def test_bound_term_is_the_closed_form_and_its_monte_carlo():
    rng = np.random.default_rng(3)
    y = _data(rng, 5)
    m = _student(y)
    randomize(m, rng)
    f = m.compile()[0]["y"]
    mo = {n: tuple(np.asarray(a, float) for a in m[n].moments) for n in ("mu", "tau", "lam")}
    ours = _closed_form(y, mo["mu"], mo["tau"], mo["lam"])
    assert f.elog(None, cached=False) == pytest.approx(ours.sum(), rel=1e-12)
    p = {n: m[n].family.parameters(m[n].natural) for n in ("mu", "tau", "lam")}
    s = 200_000
    mu = p["mu"]["mean"] + rng.standard_normal(s) / np.sqrt(p["mu"]["precision"])
    tau = rng.gamma(p["tau"]["shape"], size=s) / p["tau"]["rate"]
    lam = rng.gamma(p["lam"]["shape"], size=(s, y.size)) / p["lam"]["rate"]
    prec = tau[:, None] * lam
    logp = 0.5 * np.log(prec / (2 * np.pi)) - 0.5 * prec * (y - mu[:, None]) ** 2
    se = logp.std(0) / np.sqrt(s)
    assert np.all(np.abs(logp.mean(0) - ours) < 5 * se)


def test_messages_are_the_gradients_of_the_closed_form():
    rng = np.random.default_rng(4)
    y = _data(rng, 5)
    m = _student(y)
    randomize(m, rng)
    f = m.compile()[0]["y"]
    mo = {n: [np.asarray(a, float).copy() for a in m[n].moments] for n in ("mu", "tau", "lam")}
    h = 1e-5
    for name in ("tau", "lam"):
        msg = f.messages(m[name], None)
        for comp in (0, 1):
            grad = np.zeros_like(mo[name][comp])
            for idx in np.ndindex(grad.shape or (1,)):
                idx = idx if grad.shape else ()
                up = {k: [a.copy() for a in v] for k, v in mo.items()}
                down = {k: [a.copy() for a in v] for k, v in mo.items()}
                up[name][comp][idx] += h
                down[name][comp][idx] -= h
                grad[idx] = (_closed_form(y, *(up[k] for k in ("mu", "tau", "lam"))).sum()
                             - _closed_form(y, *(down[k] for k in ("mu", "tau", "lam"))).sum()) / (2 * h)
            np.testing.assert_allclose(np.broadcast_to(msg[comp], grad.shape), grad, rtol=1e-7, atol=1e-7)


def test_a_known_scale_gives_the_plain_precision():
    """lam observed at 2.5 everywhere: q(mu), q(tau) are those of N(y | mu, 2.5 tau); lam with a
    prior concentrated at 1 (Gamma(1e8, 1e8)) gives those of N(y | mu, tau) to ~1e-7."""
    y = _data(np.random.default_rng(5), 10)

    def plain(c):
        with vmp.Model("p") as m:
            mu = vmp.Normal("mu", 0.0, 1e-2)
            tau = vmp.Gamma("tau", 1e-2, 1e-2)
            with vmp.Plate("n", len(y)):
                vmp.Normal("y", mu, c * tau, observed=y)
        return m

    def scaled(lam_kw):
        with vmp.Model("s") as m:
            mu = vmp.Normal("mu", 0.0, 1e-2)
            tau = vmp.Gamma("tau", 1e-2, 1e-2)
            with vmp.Plate("n", len(y)):
                lam = vmp.Gamma("lam", *lam_kw["prior"], observed=lam_kw.get("observed"))
                vmp.Normal("y", mu, tau * lam, observed=y)
        return m

    # at Gamma(1e8, 1e8) lam's prior and entropy terms are ~ log Gamma(1e8) = 1.7e9 each: their
    # difference keeps ~4e-7 absolute (2e-9 of the bound), so the bound is monotone to that
    cases = ((plain(2.5), scaled({"prior": (2.0, 1.0), "observed": np.full(len(y), 2.5)}), 1e-12, 1e-12),
             (plain(1.0), scaled({"prior": (1e8, 1e8)}), 1e-7, 1e-8))
    for reference, model, tol, monotone in cases:
        a = reference.fit(iterations=30, tol=0, init="prior")
        b = model.fit(iterations=30, tol=0, init="prior", decrease_tol=monotone)
        assert b.iterations == 30
        assert np.all(np.diff(b.elbo) >= -monotone * np.abs(b.elbo[1:]))
        for name in ("mu", "tau"):
            for u, v in zip(reference[name].natural, model[name].natural):
                np.testing.assert_allclose(v, u, rtol=tol)
    assert b.final_elbo == pytest.approx(a.final_elbo, rel=1e-6)


@pytest.mark.parametrize("sweeps", [3, 60])
def test_student_t_is_the_hand_written_coordinate_ascent(sweeps):
    y = _data(np.random.default_rng(6))
    m = _student(y)
    r = m.fit(iterations=sweeps, tol=0, init="prior")
    order = [n for n in m.compile()[1] if not m[n].observed]
    w, cov, a, b, la, lb = student_t_cavi(np.ones((len(y), 1)), y, order, sweeps, NU, 1e-2, 1e-2, 1e-2,
                                          weights="mu")
    mean, prec = w[0], 1 / cov[0, 0]
    p = {n: m[n].family.parameters(m[n].natural) for n in ("mu", "tau", "lam")}
    np.testing.assert_allclose([p["mu"]["mean"], p["mu"]["precision"]], [mean, prec], rtol=1e-10)
    np.testing.assert_allclose([p["tau"]["shape"], p["tau"]["rate"]], [a, b], rtol=1e-10)
    np.testing.assert_allclose(p["lam"]["rate"], lb, rtol=1e-10)
    np.testing.assert_allclose(p["lam"]["shape"], la, rtol=1e-10)
    assert np.all(np.diff(r.elbo) >= -1e-9 * np.abs(r.elbo[1:]))
    if sweeps > 10:
        inliers = y[:-3].mean()
        assert abs(mean - inliers) < 0.1 < 0.5 < abs(y.mean() - inliers)


def _hand_multivariate_t(x, order, sweeps, nu=NU):
    """Coordinate ascent of x_n ~ N(mu, (c_n Lambda)^-1), mu ~ N(0, I), Lambda ~ W(D + 2, I),
    c_n ~ Gamma(nu/2, nu/2) (Svensen & Bishop 2005 with one component)."""
    n, d = x.shape
    p0, n0, v0inv = np.eye(d), d + 2.0, np.eye(d)
    m, s = np.zeros(d), np.eye(d)  # q(mu) mean and covariance
    dof, v = n0, np.eye(d)
    ca, cb = np.full(n, nu / 2), np.full(n, nu / 2)
    for _ in range(sweeps):
        for name in order:
            e_lam, e_c = dof * v, ca / cb
            r = x - m
            scatter = r[:, :, None] * r[:, None, :] + s
            if name == "mu":
                prec = p0 + e_c.sum() * e_lam
                s = np.linalg.inv(prec)
                m = s @ (e_lam @ (e_c[:, None] * x).sum(0))
            elif name == "Lam":
                dof, v = n0 + n, np.linalg.inv(v0inv + np.einsum("n,nij->ij", e_c, scatter))
            else:
                ca, cb = np.full(n, nu / 2 + d / 2), nu / 2 + 0.5 * np.einsum("ij,nij->n", e_lam, scatter)
    return m, s, dof, v, ca, cb


@pytest.mark.parametrize("sweeps", [2, 40])
def test_multivariate_t_is_the_hand_written_coordinate_ascent(sweeps):
    rng = np.random.default_rng(8)
    x = np.r_[rng.normal(size=(25, 2)) @ np.array([[1.0, 0.4], [0.0, 0.7]]), [[9.0, -8.0], [-7.0, 12.0]]]
    with vmp.Model("mt") as model:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        lam = vmp.Wishart("Lam", 4.0, np.eye(2))
        with vmp.Plate("n", len(x)):
            c = vmp.Gamma("c", NU / 2, NU / 2)
            vmp.Gaussian("x", mu, c * lam, observed=x)
    r = model.fit(iterations=sweeps, tol=0, init="prior")
    order = [k for k in model.compile()[1] if not model[k].observed]
    m, s, dof, v, ca, cb = _hand_multivariate_t(x, order, sweeps)
    np.testing.assert_allclose(mu.mean, m, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.linalg.inv(mu.family.parameters(mu.natural)["precision"]), s, rtol=1e-10)
    pl = lam.family.parameters(lam.natural)
    np.testing.assert_allclose(pl["dof"], dof, rtol=1e-12)
    np.testing.assert_allclose(pl["scale"], v, rtol=1e-10)
    pc = c.family.parameters(c.natural)
    np.testing.assert_allclose(pc["rate"], cb, rtol=1e-10)
    np.testing.assert_allclose(pc["shape"], ca, rtol=1e-12)
    assert np.all(np.diff(r.elbo) >= -1e-9 * np.abs(r.elbo[1:]))


def test_draws_and_predictive_read_the_product():
    y = _data(np.random.default_rng(9), 8)
    m = _student(y)
    m.fit(iterations=20, tol=0)
    pred = m.predict("y")
    p = {n: m[n].family.parameters(m[n].natural) for n in ("mu", "tau", "lam")}
    e_inv = (p["tau"]["rate"] / (p["tau"]["shape"] - 1)) * (p["lam"]["rate"] / (p["lam"]["shape"] - 1))
    np.testing.assert_allclose(pred.variance, 1 / p["mu"]["precision"] + e_inv, rtol=1e-12)
    memo: dict = {}
    values = draw(m["y"].parents["precision"], 50_000, np.random.default_rng(0), memo)
    assert values.shape == (50_000, len(y))
    np.testing.assert_allclose(values, memo["tau"][:, None] * memo["lam"])
    mean = p["tau"]["shape"] / p["tau"]["rate"] * p["lam"]["shape"] / p["lam"]["rate"]
    assert np.all(np.abs(values.mean(0) - mean) < 5 * values.std(0) / np.sqrt(50_000))
    assert "scaled by lam" in m.render().source


@pytest.mark.parametrize("build,words", [
    (lambda: vmp.Normal("y", 0.0, vmp.Normal("a", 0.0, 1.0) * vmp.Normal("b", 0.0, 1.0), observed=[1.0]),
     ["'a' * 'b'", "'a' (Normal)"]),
    (lambda: vmp.Gaussian("y", np.zeros(2), vmp.Wishart("A", 3.0, np.eye(2)) * vmp.Wishart("B", 3.0, np.eye(2)),
                          observed=[[1.0, 0.0]]),
     ["'A' * 'B'", "Gamma node"]),
    (lambda: vmp.Normal("y", 0.0, vmp.Wishart("A", 3.0, np.eye(2)) * vmp.Gamma("c", 1.0, 1.0), observed=[1.0]),
     ["'y'", "A*c", "Wishart", "'precision'"]),
    (lambda: vmp.Normal("y", 0.0, vmp.Gamma("t", 1.0, 1.0) * vmp.Dirichlet("p", np.ones(2)), observed=[1.0]),
     ["'t' * 'p'", "'p' (Dirichlet)"]),
    (lambda: vmp.Normal("y", 0.0, vmp.Gamma("t", 1.0, 1.0) / vmp.Gamma("s", 1.0, 1.0), observed=[1.0]),
     ["'t' / 's'", "ratio"]),
])
def test_declaration_errors_name_the_nodes(build, words):
    with vmp.Model("bad"), vmp.Plate("n", 1):
        with pytest.raises((GraphError, ConjugacyError)) as err:
            build()
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_a_node_on_both_sides_is_refused():
    with vmp.Model("bad"):
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with pytest.raises(GraphError, match="'tau'.*both sides"):
            tau * tau
        with pytest.raises(GraphError, match="both sides"):
            (2.0 * tau) * tau


def test_a_scale_outside_the_child_plates_is_refused():
    with vmp.Model("bad"):
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("m", 2):
            s = vmp.Gamma("s", 1.0, 1.0)
        with vmp.Plate("n", 3):
            with pytest.raises(GraphError, match="'y'.*'tau\\*s'.*\\['m'\\]"):
                vmp.Normal("y", 0.0, tau * s, observed=np.ones(3))



def test_the_folded_message_to_a_per_point_scale_is_the_reference_one():
    """Above ``folded.MIN_SIZE`` lam's message, three terms reading y, is one product over y's
    statistics with nothing but the data plate in its shape (an n x 1 result laid out as n):
    the same q as through the reference evaluator alone, to 1e-12 (a Student-t over 40,000
    points failed there)."""
    from vmp.graph import folded

    y = _data(np.random.default_rng(10), n=folded.MIN_SIZE + 100)
    fast = _student(y)
    fast.fit(iterations=5, tol=0, init="prior")
    plain = _student(y)
    plain.compile(strategies=())
    plain.fit(iterations=5, tol=0, init="prior")
    for name in ("mu", "tau", "lam"):
        for a, b in zip(fast[name].natural, plain[name].natural):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_large_multivariate_t_reduces_its_plate_sums_as_the_reference():
    """33,000 points (more than DIRECT = 32,768): the data-plate sums sum_n E[c_n] x_n x_n^T,
    sum_n E[c_n] x_n and sum_n E[c_n] (a number: no component axis) come from
    folded.reduction; through the reference evaluator alone, the same q and bound to 1e-10."""
    x = np.random.default_rng(11).standard_t(3.0, size=(33_000, 2))

    def fit(strategies=None):
        with vmp.Model("mt") as model:
            vmp.Gaussian("mu", np.zeros(2), np.eye(2))
            vmp.Wishart("Lam", 4.0, np.eye(2))
            with vmp.Plate("n", len(x)):
                c = vmp.Gamma("c", NU / 2, NU / 2)
                vmp.Gaussian("x", model["mu"], c * model["Lam"], observed=x)
        model.compile(strategies=strategies)
        return model, model.fit(iterations=4, tol=0, init="prior").final_elbo

    fast, fast_bound = fit()
    plain, plain_bound = fit(())
    assert fast_bound == pytest.approx(plain_bound, rel=1e-10)
    for name in ("mu", "Lam", "c"):
        for a, b in zip(fast[name].natural, plain[name].natural):
            np.testing.assert_allclose(a, b, rtol=1e-10)


def test_a_constant_scales_a_product_as_it_scales_a_side():
    """2 * (tau * lam), (tau * lam) / 0.5 and (2 * tau) * lam: one model, the same q."""
    y = _data(np.random.default_rng(12), 6)
    fits = []
    for write in (lambda t, l: 2.0 * (t * l), lambda t, l: (t * l) / 0.5, lambda t, l: (2.0 * t) * l):
        with vmp.Model("c") as m:
            mu = vmp.Normal("mu", 0.0, 1e-2)
            tau = vmp.Gamma("tau", 1.0, 1.0)
            with vmp.Plate("n", len(y)):
                vmp.Normal("y", mu, write(tau, vmp.Gamma("lam", 1.5, 1.5)), observed=y)
        fits.append((m, m.fit(iterations=10, tol=0, init="prior").final_elbo))
    (a, bound), *others = fits
    for b, other in others:
        assert other == pytest.approx(bound, rel=1e-13)
        for name in ("mu", "tau", "lam"):
            for u, v in zip(a[name].natural, b[name].natural):
                np.testing.assert_allclose(v, u, rtol=1e-12)
    with vmp.Model("bad"):
        tau, lam = vmp.Gamma("tau", 1.0, 1.0), vmp.Gamma("lam", 1.0, 1.0)
        with pytest.raises(GraphError, match="positive finite"):
            (tau * lam) * -1.0
