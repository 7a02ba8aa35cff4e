"""Missing data against independent computations: masked entries of a node with children are
inferred (exact evidence of linear-Gaussian models), and latent elements whose descendants are
all masked drop out (the posterior and bound equal those with the rows deleted)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import vmp


def test_masked_parent_is_inferred_with_the_exact_evidence():
    """x_n ~ N(0, 1), y_n ~ N(x_n, 1); x_1 missing. The fill value used to be conditioned on
    (bound -7.2847); the exact evidence is -6.6313 and E[x_1 | y] = y_1 / 2 = 1.0."""
    y, x = np.array([0.3, 2.0, -0.7]), np.array([0.5, 0.0, -1.0])
    mask = np.array([True, False, True])
    with vmp.Model("m") as model:
        with vmp.Plate("N", 3):
            xn = vmp.Normal("x", 0.0, 1.0, observed=x, mask=mask)
            vmp.Normal("y", xn, 1.0, observed=y)
    res = model.fit(iterations=10)
    evidence = (stats.norm(0, 1).logpdf(x[mask]).sum() + stats.norm(x[mask], 1).logpdf(y[mask]).sum()
                + stats.norm(0, np.sqrt(2)).logpdf(y[1]))
    assert evidence == pytest.approx(-6.6313, abs=1e-4)
    assert res.final_elbo == pytest.approx(evidence, rel=1e-12)
    assert np.allclose(xn.mean, [0.5, 1.0, -1.0])
    assert model.missing() == ["x: 1 of 3 masked entries inferred"]
    assert xn.parameters["variance"][1] == pytest.approx(0.5)


def test_masked_gaussian_vectors_with_a_random_mean_match_the_joint_gaussian():
    """mu ~ N(0, I), x_n ~ N(mu, L^-1) with rows of x missing, y_n ~ N(x_n, I): the evidence of
    the observed x rows and all y is one multivariate normal density; q(mu) x q(x) is not exact,
    so the bound is below it, and with mu known it is exact."""
    rng = np.random.default_rng(4)
    n, d = 5, 2
    lam = np.array([[2.0, 0.3], [0.3, 1.0]])
    x, y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    mask = np.array([True, False, True, False, True])
    m0 = np.array([0.5, -0.2])
    with vmp.Model("m") as model:
        with vmp.Plate("N", n):
            xn = vmp.Gaussian("x", m0, lam, observed=x, mask=mask)
            vmp.Gaussian("y", xn, np.eye(d), observed=y)
    res = model.fit(iterations=10)
    cov_x = np.linalg.inv(lam)
    evidence = (stats.multivariate_normal(m0, cov_x).logpdf(x[mask]).sum()
                + stats.multivariate_normal(np.zeros(d), np.eye(d)).logpdf(y[mask] - x[mask]).sum()
                + stats.multivariate_normal(m0, cov_x + np.eye(d)).logpdf(y[~mask]).sum())
    assert res.final_elbo == pytest.approx(evidence, rel=1e-12)
    post = np.linalg.solve(lam + np.eye(d), lam @ m0 + y[1])
    assert np.allclose(xn.mean[1], post) and np.allclose(xn.mean[0], x[0])


def _mixture(x, mask=None):
    with vmp.Model("mix") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 0.01)
            tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("N", len(x)):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], tau[z], observed=x, mask=mask)
    return model


def test_masked_mixture_rows_equal_deleted_rows():
    """10 of 40 rows masked: their z_n are barren and integrate out; q(pi) has sum(alpha) 32,
    not 42, and the bound equals the bound with the rows deleted."""
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(-3, 1, 20), rng.normal(3, 1, 20)]
    mask = np.ones(40, bool)
    mask[rng.choice(40, 10, replace=False)] = False
    masked, deleted = _mixture(x, mask), _mixture(x[mask])
    a, b = masked.fit(iterations=300, seed=0), deleted.fit(iterations=300, seed=0)
    assert masked["pi"].parameters["alpha"].sum() == pytest.approx(32.0)
    assert a.final_elbo == pytest.approx(b.final_elbo, rel=1e-10)
    for name in ("pi", "mu", "tau"):
        for key, value in masked[name].parameters.items():
            assert np.allclose(value, deleted[name].parameters[key], rtol=1e-8), (name, key)
    assert np.array_equal(masked["z"].barren, ~mask)
    assert masked.missing() == ["z: 10 of 40 elements barren (pruned: no observed descendant)"]
    assert deleted.missing() == []
    assert "missing data: z: 10 of 40 elements barren" in a.summary(masked)
    assert "missing data" not in b.summary(deleted)
    import vmp.render

    assert "10 barren pruned" in vmp.render.diagram(masked).source


def _chain(y, mask=None):
    with vmp.Model("chain") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", len(y)):
            xn = vmp.Normal("x", mu, 1.0)
            vmp.Normal("y", xn, 1.0, observed=y, mask=mask)
    return model


def test_barren_latent_chain_drops_out():
    """mu ~ N(0, 1), x_n ~ N(mu, 1) hidden, y_n ~ N(x_n, 1) with rows masked: the masked rows'
    x_n are barren, so q(mu) and the bound equal those with the rows deleted, and q(mu) is the
    mean-field fixed point of the kept rows (precision 1 + n, mean sum(y) / (2 + n))."""
    y = np.array([0.4, -1.0, 2.5, 0.7, 3.0])
    mask = np.array([True, False, True, True, False])
    masked, deleted = _chain(y, mask), _chain(y[mask])
    a = masked.fit(iterations=500, tol=1e-15)
    b = deleted.fit(iterations=500, tol=1e-15)
    n = mask.sum()
    mu = masked["mu"]
    assert mu.parameters["precision"] == pytest.approx(1.0 + n, rel=1e-12)
    assert mu.mean == pytest.approx(y[mask].sum() / (2.0 + n), rel=1e-6)
    assert a.final_elbo == pytest.approx(b.final_elbo, rel=1e-10)
    assert np.array_equal(masked["x"].barren, ~mask)


def _semi_supervised(n: int):
    """Labels observed for 4 of n points (the rest masked), clusters at -3 and +3."""
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, n)
    labels[:4] = [0, 1, 0, 1]
    x = np.where(labels == 0, -3.0, 3.0) + rng.normal(size=n)
    known = np.zeros(n, bool)
    known[:4] = True
    with vmp.Model("semi") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 0.01)
            tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("N", n):
            z = vmp.Categorical("z", pi, observed=np.where(known, labels, 0), mask=known)
            vmp.Normal("x", mu[z], tau[z], observed=x)
    return model, labels


@pytest.mark.parametrize("init", ["prior", None])
def test_semi_supervised_mixture_recovers_the_clusters(init):
    """The masked z_n are inferred (they used to sit at component 0 with E[mu] = (0.03, 2.56));
    the clusters at -3 and +3 are found and the observed labels stay."""
    model, labels = _semi_supervised(100)
    model.fit(iterations=200, init=init)
    z = model["z"]
    assert np.allclose(model["mu"].mean, [-3.0, 3.0], atol=0.3)
    assert np.mean(z.mean.argmax(1) == labels) > 0.97
    assert np.array_equal(z.mean[:4], np.eye(2)[labels[:4]])


def test_semi_supervised_mixture_with_minibatches():
    """Stochastic VMP: the local q(z) of a minibatch is pinned at the observed labels too."""
    model, _ = _semi_supervised(200)
    model.fit(method="stochastic", subsample=vmp.Minibatch("N", 50), iterations=200, init="prior")
    assert np.allclose(model["mu"].mean, [-3.0, 3.0], atol=0.3)
