"""Posterior predictives, imputation, set_data and draws from q, each against an independent
computation: closed forms written here with numpy, conjugate posteriors, Monte Carlo."""
import numpy as np
import pytest
from scipy import stats

import vmp
from vmp.models import linear_regression, matrix_factorization
from tests.helpers import factorized_mixture


def _regression(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ np.array([1.0, -2.0, 0.5])[:d] + 0.5 * rng.normal(size=n)
    return x, y


def _blr(x, y, tau, p=1.0):
    """Bayesian linear regression with known noise precision: S = (pI + tau X^T X)^-1, m = tau S X^T y."""
    s = np.linalg.inv(p * np.eye(x.shape[1]) + tau * x.T @ x)
    return tau * s @ x.T @ y, s


def test_linear_gaussian_predictive_is_the_closed_form():
    x, y = _regression()
    model = linear_regression(x, y, noise_precision=4.0, prior_precision=1.0)
    model.fit(iterations=20, seed=0)
    m, s = _blr(x, y, 4.0)
    pred = model.predict("y")
    assert pred.method == "exact"
    np.testing.assert_allclose(pred.mean, x @ m, atol=1e-10)
    np.testing.assert_allclose(pred.variance, np.einsum("ni,ij,nj->n", x, s, x) + 1 / 4.0, rtol=1e-10)
    np.testing.assert_allclose(pred.to_scipy().logpdf(y), stats.norm(x @ m, np.sqrt(pred.variance)).logpdf(y))
    np.testing.assert_allclose(pred.interval(0.9), stats.norm(x @ m, np.sqrt(pred.variance)).interval(0.9))
    draws = pred.sample(20000, 1)
    assert draws.shape == (20000, 40)
    z = (draws.mean(0) - pred.mean) / np.sqrt(pred.variance / 20000)
    assert np.abs(z).max() < 5


def test_gamma_noise_predictive_matches_monte_carlo_from_q():
    x, y = _regression()
    model = linear_regression(x, y, prior_precision=1.0)
    model.fit(iterations=200, tol=1e-12, seed=0)
    w, tau = model["w"].parameters, model["tau"].parameters
    rng = np.random.default_rng(2)
    k = 200_000
    ws = rng.multivariate_normal(w["mean"], w["covariance"], size=k)
    taus = rng.gamma(tau["shape"], 1 / tau["rate"], size=k)
    ys = ws @ x[:5].T + rng.normal(size=(k, 5)) / np.sqrt(taus)[:, None]
    pred = model.predict("y")
    assert pred.method == "moment-matched"
    np.testing.assert_allclose(pred.mean[:5], ys.mean(0), atol=5 * ys.std(0).max() / np.sqrt(k))
    np.testing.assert_allclose(pred.variance[:5], ys.var(0), rtol=0.02)
    # law of total variance written out: x^T S x + E[1/tau] = x^T S x + b / (a - 1)
    exact = np.einsum("ni,ij,nj->n", x, w["covariance"], x) + tau["rate"] / (tau["shape"] - 1)
    np.testing.assert_allclose(pred.variance, exact, rtol=1e-10)
    assert pred.to_scipy().var()[:5] == pytest.approx(pred.variance[:5])


def test_known_mean_gamma_precision_gives_the_exact_student_t():
    rng = np.random.default_rng(3)
    data = rng.normal(1.0, 2.0, size=30)
    with vmp.Model("t") as model:
        tau = vmp.Gamma("tau", 2.0, 3.0)
        with vmp.Plate("data", 30):
            vmp.Normal("x", mean=1.0, precision=tau, observed=data)
    model.fit(iterations=5, seed=0)
    a, b = 2.0 + 15, 3.0 + 0.5 * np.sum((data - 1.0) ** 2)  # conjugate posterior
    pred = model.predict("x")
    assert pred.method == "exact"
    grid = np.linspace(-5, 7, 9)
    want = stats.t(2 * a, loc=1.0, scale=np.sqrt(b / a)).logpdf(grid)
    np.testing.assert_allclose(pred.to_scipy(0).logpdf(grid), want, rtol=1e-10)


def test_known_mean_wishart_precision_gives_the_exact_multivariate_t():
    rng = np.random.default_rng(4)
    data = rng.multivariate_normal([0, 1], [[2, 0.5], [0.5, 1]], size=25)
    v0 = np.eye(2) / 3
    with vmp.Model("mvt") as model:
        lam = vmp.Wishart("Lambda", dof=4.0, scale=v0)
        with vmp.Plate("data", 25):
            vmp.Gaussian("x", mean=np.array([0.0, 1.0]), precision=lam, observed=data)
    model.fit(iterations=5, seed=0)
    r = data - [0, 1]
    n, v_inv = 4.0 + 25, np.linalg.inv(v0) + r.T @ r
    nu = n - 2 + 1
    pred = model.predict("x")
    assert pred.method == "exact"
    want = stats.multivariate_t([0, 1], v_inv / nu, df=nu)
    pts = rng.normal(size=(6, 2))
    np.testing.assert_allclose(pred.to_scipy(0).logpdf(pts), want.logpdf(pts), rtol=1e-10)
    np.testing.assert_allclose(pred.covariance[0], v_inv / (n - 3), rtol=1e-10)


def test_mixture_predictive_moments_match_its_own_ancestral_draws():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal((3, 0), 1, size=(40, 2)), rng.normal((0, 3), 1, size=(40, 2))])
    model = factorized_mixture(x, 2)
    model.fit(iterations=50, seed=0)
    pred = model.predict("x")
    assert pred.method == "moment-matched"
    draws = pred.sample(10000, 6)
    np.testing.assert_allclose(draws.mean(0)[:4], pred.mean[:4], atol=0.06)
    np.testing.assert_allclose(np.var(draws, 0)[:4], pred.variance[:4], rtol=0.05)


def test_categorical_predictive_is_the_dirichlet_mean():
    data = np.array([0, 0, 1, 2, 2, 2])
    with vmp.Model("cat") as model:
        pi = vmp.Dirichlet("pi", alpha=np.ones(3))
        with vmp.Plate("data", 6):
            vmp.Categorical("c", pi, observed=data)
    model.fit(iterations=3, seed=0)
    pred = model.predict("c")
    np.testing.assert_allclose(pred.mean[0], np.array([3, 2, 4]) / 9)
    assert pred.to_scipy(0).pmf([1, 0, 0]) == pytest.approx(3 / 9)


def test_imputed_masked_targets_are_the_posterior_from_the_observed_rows():
    x, y = _regression()
    mask = np.ones(40, bool)
    mask[[3, 17, 30]] = False
    model = linear_regression(x, np.where(mask, y, 0.0), noise_precision=4.0, prior_precision=1.0)
    model["y"]._set_data(np.where(mask, y, 0.0), mask)
    model._compiled = None
    model.fit(iterations=20, seed=0)
    m, s = _blr(x[mask], y[mask], 4.0)
    out = model.impute("y")
    rows = x[~mask]
    np.testing.assert_allclose(out.mean, rows @ m, atol=1e-10)
    np.testing.assert_allclose(out.variance, np.einsum("ni,ij,nj->n", rows, s, rows) + 0.25, rtol=1e-10)
    assert out.sample(5, 0).shape == (5, 3)


def test_imputed_entries_of_a_node_with_children_are_its_q():
    """x_n ~ N(2, 1), y_n ~ N(x_n, 1/3): a masked x_n has posterior N((2 + 3 y_n) / 4, 1/4)."""
    rng = np.random.default_rng(7)
    xs, ys = rng.normal(2, 1, 10), rng.normal(2, 1, 10)
    mask = np.arange(10) % 3 != 0
    with vmp.Model("chain") as model:
        with vmp.Plate("data", 10):
            xn = vmp.Normal("x", mean=2.0, precision=1.0, observed=np.where(mask, xs, 0.0), mask=mask)
            vmp.Normal("y", mean=xn, precision=3.0, observed=ys)
    model.fit(iterations=10, seed=0)
    out = model.impute("x")
    np.testing.assert_allclose(out.mean, (2 + 3 * ys[~mask]) / 4, rtol=1e-10)
    np.testing.assert_allclose(out.variance, 0.25, rtol=1e-10)


def test_set_data_predicts_held_out_rows_as_a_model_built_with_them():
    x, y = _regression()
    model = linear_regression(x, y, prior_precision=1.0)
    model.fit(iterations=100, seed=0)
    x_new = np.random.default_rng(8).normal(size=(7, 3))
    model.set_data("X", x_new)
    assert model.plates["data"].size == 7 and not model["y"].mask.any()
    held = model.predict("y")
    fresh = linear_regression(x_new, np.zeros(7), prior_precision=1.0)
    for name in ("w", "tau"):
        fresh[name].set_natural(model[name].natural)
    want = fresh.predict("y")
    np.testing.assert_array_equal(held.mean, want.mean)
    np.testing.assert_array_equal(held.variance, want.variance)
    model.set_data({"X": x, "y": y})
    assert model.plates["data"].size == 40 and model["y"].mask is None


def test_set_data_errors_name_what_cannot_change():
    x, y = _regression()
    model = linear_regression(x, y, noise_precision=1.0)
    with pytest.raises(vmp.GraphError, match="set_data\\('w'\\): no observed node or vmp.Data input"):
        model.set_data("w", np.zeros(3))
    with pytest.raises(vmp.ShapeError, match="plate 'data'"):
        model.set_data({"X": x[:5], "y": y[:6]})
    with vmp.Model("mf") as mf:
        with vmp.Plate("users", 3):
            u = vmp.Gaussian("u", mean=np.zeros(2), precision=np.eye(2))
        with vmp.Plate("ratings", 4):
            vmp.Normal("r", mean=vmp.dot(u[np.array([0, 1, 2, 0])], np.ones(2)), precision=1.0,
                       observed=np.zeros(4))
    with pytest.raises(vmp.GraphError, match="gather 'u\\[ratings\\]'"):
        mf.set_data("r", np.zeros(5))


def test_node_sample_draws_from_q_reproducibly():
    x, y = _regression()
    model = linear_regression(x, y, noise_precision=4.0)
    model.fit(iterations=20, seed=0)
    draws = model["w"].sample(50000, rng=9)
    assert draws.shape == (50000, 3)
    np.testing.assert_array_equal(draws, model["w"].sample(50000, rng=9))
    p = model["w"].parameters
    np.testing.assert_allclose(draws.mean(0), p["mean"], atol=5 * np.sqrt(p["covariance"].diagonal().max() / 50000))
    np.testing.assert_allclose(np.cov(draws.T), p["covariance"], rtol=0.05, atol=1e-5)
    with pytest.raises(vmp.GraphError, match="'y' is observed"):
        model["y"].sample(3)


def test_summary_gives_sd_and_credible_intervals_of_q():
    x, y = _regression()
    model = linear_regression(x, y)
    result = model.fit(iterations=50, seed=0)
    text = result.summary(model)
    assert "sd" in text and "95% interval" in text
    p = model["tau"].parameters
    lo, hi = stats.gamma(p["shape"], scale=1 / p["rate"]).interval(0.95)
    row = next(line for line in text.splitlines() if line.startswith("tau "))
    printed = [float(v) for v in row.split("[")[-1].rstrip("]").split(",")]
    np.testing.assert_allclose(printed, [lo, hi], rtol=2e-3)
    assert float(row.split()[-3]) == pytest.approx(np.sqrt(p["shape"]) / p["rate"], rel=2e-3)


def test_to_arviz_holds_draws_from_q_and_the_predictive():
    az = pytest.importorskip("arviz", reason="ArviZ is an optional extra: pip install 'vmp[arviz]'")
    x, y = _regression()
    model = linear_regression(x, y)
    result = model.fit(iterations=50, seed=0)
    data = result.to_arviz(model, draws=4000, seed=1)
    assert isinstance(data, az.InferenceData)
    w = data.posterior["w"].values
    assert w.shape == (1, 4000, 3)
    np.testing.assert_allclose(w[0].mean(0), model["w"].mean, atol=0.02)
    assert data.posterior_predictive["y"].shape == (1, 4000, 40)
    np.testing.assert_array_equal(data.observed_data["y"].values, y)
    assert data.posterior_predictive["y"].dims[-1] == "data"
    summary = az.summary(data, var_names=["tau"], kind="stats")
    assert summary["mean"].iloc[0] == pytest.approx(float(model["tau"].mean), rel=0.03)


def test_to_arviz_keeps_the_data_of_a_partially_observed_node():
    """A mixture with NaN coordinates: its data in observed_data (NaN where masked), the draws
    of the masked coordinates in posterior (the data where observed)."""
    pytest.importorskip("arviz", reason="ArviZ is an optional extra: pip install 'vmp[arviz]'")

    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, (30, 2)), rng.normal(4, 1, (30, 2))]
    x[[1, 5, 40], [0, 1, 0]] = np.nan
    model = factorized_mixture(x, 2)
    data = model.fit(iterations=30, seed=0).to_arviz(model, draws=50, seed=1)
    np.testing.assert_array_equal(data.observed_data["x"].values, x)
    draws = data.posterior["x"].values[0]
    seen = ~np.isnan(x)
    assert np.all(draws[:, seen] == x[seen]) and np.all(np.isfinite(draws))


def test_to_arviz_without_arviz_says_how_to_install(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_arviz(name, *args, **kwargs):
        if name == "arviz":
            raise ImportError("No module named 'arviz'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_arviz)
    x, y = _regression()
    model = linear_regression(x, y, noise_precision=1.0)
    model.fit(iterations=5, seed=0)
    with pytest.raises(ImportError, match="pip install arviz"):
        model.to_arviz(draws=10)


def test_set_data_on_a_mixture_infers_the_new_locals_given_the_fitted_globals():
    rng = np.random.default_rng(10)
    x = np.concatenate([rng.normal((3, 0), 1, size=(60, 2)), rng.normal((0, 3), 1, size=(60, 2))])
    model = factorized_mixture(x, 2)
    model.fit(iterations=60, seed=0)
    x_new = rng.normal(size=(9, 2)) * 2
    model.set_data("x", x_new)
    fresh = factorized_mixture(x_new, 2)
    for name in ("pi", "mu", "Lambda"):
        fresh[name].set_natural(model[name].natural)
    fresh.infer_locals()
    assert model["z"].mean.shape == (9, 2)
    np.testing.assert_allclose(model["z"].mean, fresh["z"].mean, rtol=1e-12)
    np.testing.assert_allclose(model.predict("x").covariance, fresh.predict("x").covariance, rtol=1e-12)


@pytest.mark.parametrize("factorized", [True, False])
def test_matrix_factorization_predictive_moments_match_ancestral_draws(factorized):
    """E[u.v] and E[(u.v)^2] (Paquet eq. (7) when factorized) against draws of u and v from q."""
    rng = np.random.default_rng(11)
    users, items = rng.integers(0, 6, 40), rng.integers(0, 5, 40)
    model = vmp.models.matrix_factorization(users, items, rng.normal(size=40), 2, factorized=factorized)
    model.fit(iterations=30, seed=0)
    pred = model.predict("r")
    draws = pred.sample(60000, 12)
    np.testing.assert_allclose(draws.mean(0), pred.mean, atol=6 * np.sqrt(pred.variance.max() / 60000))
    np.testing.assert_allclose(draws.var(0), pred.variance, rtol=0.04)


def test_ard_precision_predictive_matches_ancestral_draws():
    rng = np.random.default_rng(13)
    data = rng.normal(size=(30, 3)) * [1.0, 3.0, 0.3]
    with vmp.Model("ard") as model:
        with vmp.Plate("dims", 3):
            alpha = vmp.Gamma("alpha", 2.0, 2.0)
        with vmp.Plate("data", 30):
            vmp.Gaussian("x", mean=np.zeros(3), precision=alpha, observed=data)
    model.fit(iterations=10, seed=0)
    pred = model.predict("x")
    a, b = 2.0 + 15, 2.0 + 0.5 * (data ** 2).sum(0)  # conjugate: E[1/alpha_d] = b / (a - 1)
    np.testing.assert_allclose(pred.covariance[0], np.diag(b / (a - 1)), rtol=1e-10)
    draws = pred.sample(10000, 14)  # the 30 rows share one predictive: pooled, 300,000 draws of it
    np.testing.assert_allclose(draws.reshape(-1, 3).var(0), b / (a - 1), rtol=0.03)


def test_predict_before_a_fit_names_the_node_without_q():
    x, y = _regression()
    model = linear_regression(x, y)
    with pytest.raises(vmp.GraphError, match="node 'w' has no posterior yet"):
        model.predict("y")
    with pytest.raises(vmp.GraphError, match="node 'y' has no mask"):
        model.impute("y")


def test_other_families_get_monte_carlo_moments_of_the_exact_compound():
    """x ~ Gamma(a, rate b), b ~ Gamma(c, d) under q: x is BetaPrime(a, c, scale d)."""
    rng = np.random.default_rng(15)
    with vmp.Model("compound") as model:
        b = vmp.Gamma("b", 3.0, 2.0)
        with vmp.Plate("data", 20):
            vmp.Gamma("x", 2.0, b, observed=rng.gamma(2.0, 1.0, size=20))
    model.fit(iterations=5, seed=0)
    c, d = model["b"].parameters["shape"], model["b"].parameters["rate"]
    pred = model.predict("x", draws=200_000, seed=1)
    assert pred.method == "monte-carlo"
    want = stats.betaprime(2.0, c, scale=d)
    np.testing.assert_allclose(pred.mean, want.mean(), rtol=0.02)
    np.testing.assert_allclose(pred.variance, want.var(), rtol=0.1)
    with pytest.raises(vmp.GraphError, match="no closed-form predictive"):
        pred.to_scipy()


def test_imputed_categories_of_a_node_with_children_are_its_q():
    """A masked class label c_n with a child: q(c_n) proportional to pi_k N(x_n | mu_k, 1)."""
    rng = np.random.default_rng(16)
    labels = rng.integers(0, 2, 12)
    mask = np.arange(12) % 4 != 0
    means = np.array([-2.0, 2.0])
    with vmp.Model("labels") as model:
        with vmp.Plate("data", 12):
            c = vmp.Categorical("c", np.array([0.3, 0.7]), observed=np.where(mask, labels, 0), mask=mask)
        with vmp.Plate("classes", 2):
            mu = vmp.Normal("mu", mean=means, precision=1e12)
        with vmp.Plate("data", 12):
            xs = means[labels] + rng.normal(size=12)
            vmp.Normal("x", mean=mu[c], precision=1.0, observed=xs)
    model.fit(iterations=20, seed=0)
    out = model.impute("c")
    logp = np.log([0.3, 0.7]) - 0.5 * (xs[~mask, None] - means) ** 2
    want = np.exp(logp - logp.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(out.mean, want, atol=1e-5)
    np.testing.assert_allclose(out.variance, want * (1 - want), atol=1e-5)


@pytest.mark.parametrize("options", [{}, {"factorized": True}, {"biases": True, "noise_precision": None}],
                         ids=["structured", "factorized", "biases"])
def test_set_data_gives_held_out_ratings_through_the_gathers_indices(options):
    """Held-out ratings: new rows for u[rows] and v[cols] (vmp.Data indices) resize the ratings
    plate; the predictions equal those of a model rebuilt with the held-out pairs."""
    rng = np.random.default_rng(4)
    m, n, k = 12, 9, 2
    rows, cols = rng.integers(m, size=80), rng.integers(n, size=80)
    y = np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.3 * rng.normal(size=80)
    kw = dict({"noise_precision": 4.0}, **options)
    model = matrix_factorization(rows, cols, y, k, n_users=m, n_items=n, **kw)
    model.fit(iterations=30, seed=0)
    test_rows, test_cols = rng.integers(m, size=13), rng.integers(n, size=13)
    model.set_data({"users": test_rows, "items": test_cols})
    assert model.plates["ratings"].size == 13 and not model["r"].mask.any()
    held = model.predict("r")
    fresh = matrix_factorization(test_rows, test_cols, np.zeros(13), k, n_users=m, n_items=n, **kw)
    for name, node in model.nodes.items():
        if not node.observed:
            fresh[name].set_natural(node.natural)
    want = fresh.predict("r")
    np.testing.assert_allclose(held.mean, want.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(held.variance, want.variance, rtol=1e-12)
    more_rows, more_cols, more_y = rows[:50][::-1], cols[:50], y[:50]  # new observed ratings: 50 pairs
    model.set_data({"users": more_rows, "items": more_cols, "r": more_y})
    assert model.plates["ratings"].size == 50 and model["r"].mask is None
    again = matrix_factorization(more_rows, more_cols, more_y, k, n_users=m, n_items=n, **kw)
    for name, node in model.nodes.items():
        if not node.observed:
            again[name].set_natural(node.natural)
    assert model.elbo() == pytest.approx(again.elbo(), rel=1e-12)
    from vmp.inference.engine import Engine
    for name in ("u", "v", "user_bias"):  # messages through the new rows
        if name in model.nodes:
            for a, b in zip(Engine(model).target(model.state, model[name]), Engine(again).target(again.state, again[name])):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(vmp.GraphError, match="gather 'v\\[ratings\\]'.*vmp.Data"):
        with vmp.Model("half") as half:
            with vmp.Plate("users", 3):
                u = vmp.Gaussian("u", mean=np.zeros(2), precision=np.eye(2))
            with vmp.Plate("items", 2):
                v = vmp.Gaussian("v", mean=np.zeros(2), precision=np.eye(2))
            with vmp.Plate("ratings", 4):
                vmp.Normal("r", mean=vmp.dot(u[vmp.Data("who", np.array([0, 1, 2, 0]))], v[np.array([0, 1, 1, 0])]),
                           precision=1.0, observed=np.zeros(4))
        half.set_data("who", np.array([1, 2]))
