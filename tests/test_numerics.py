"""Numerics at the edges of the allowed domains (issue 29): no NaN, no raw error, the exact
answer where one exists."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as ss

import vmp
from vmp.families import Dirichlet, Poisson


def test_the_bound_of_a_model_without_hidden_nodes_is_the_log_likelihood():
    """``model.elbo()`` of a model with every node observed is log p(data) (it raised "no
    posterior yet for []")."""
    x = np.array([0.3, -1.2, 2.0])
    with vmp.Model("m") as model:
        with vmp.Plate("d", 3):
            vmp.Normal("x", 0.5, 2.0, observed=x)
    assert model.elbo() == pytest.approx(ss.norm(0.5, 2 ** -0.5).logpdf(x).sum(), rel=1e-13)


def test_dirichlet_draws_with_concentrations_far_below_one():
    """alpha = 1e-10: every Gamma draw underflows to 0 (the draws were 0 / 0 = NaN, and the
    predictive of a Categorical child failed with "pvals contains NaNs"). The vectors are then
    one-hot with probabilities alpha / sum(alpha)."""
    a = np.array([1e-10, 2e-10, 1e-10])
    draws = Dirichlet.sample((a - 1,), np.random.default_rng(1), (40000,))
    assert np.all(np.isfinite(draws)) and np.allclose(draws.sum(-1), 1.0)
    share = (draws.argmax(-1)[:, None] == np.arange(3)).mean(0)
    assert share == pytest.approx(a / a.sum(), abs=0.01)


def test_dirichlet_draws_mixing_small_and_ordinary_concentrations_have_the_right_mean():
    a = np.array([[0.005, 0.3, 2.0], [1.0, 2.0, 3.0]])
    draws = Dirichlet.sample((a - 1,), np.random.default_rng(2), (40000,))
    sd = np.sqrt(ss.dirichlet(a[0]).var()) / np.sqrt(40000)
    assert draws.mean(0)[0] == pytest.approx(a[0] / a[0].sum(), abs=5 * sd.max())
    assert draws.mean(0)[1] == pytest.approx(a[1] / a[1].sum(), abs=0.005)


def test_predictive_of_a_categorical_under_a_nearly_degenerate_dirichlet():
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.array([1e-10, 1e-10, 2e-10]))
        with vmp.Plate("d", 3):
            vmp.Categorical("z", pi, observed=np.array([0, 1, 2]), weights=np.zeros(3))
    model.fit(iterations=3)
    draws = model.predict("z").sample(400)
    share = (draws.ravel()[:, None] == np.arange(3)).mean(0)
    assert share == pytest.approx([0.25, 0.25, 0.5], abs=0.08)  # q(pi) is the prior


def test_poisson_draws_at_rates_beyond_numpys_limit():
    """numpy refuses rates above about 9.2e18 ("lam value too large"); a Gamma shape of 1e30
    made ``model.predict`` fail."""
    lam = np.array([3.0, 1e20, 1e30])
    y = Poisson.sample((np.log(lam),), np.random.default_rng(0), (20000,))
    assert np.all(np.isfinite(y)) and np.all(y >= 0)
    assert np.all(np.abs(y.mean(0) - lam) / lam < [0.02, 1e-10, 1e-12])
    assert y[:, :2].var(0) / lam[:2] == pytest.approx(1.0, abs=0.05)  # at 1e30 float64 holds no variance
    with vmp.Model("m") as model:
        rate = vmp.Gamma("lam", 1e30, 1.0)
        with vmp.Plate("d", 3):
            vmp.Poisson("x", rate, observed=np.array([1, 2, 3]))
    model.fit(iterations=3)
    assert np.all(np.isfinite(model.predict("x").sample(4)))


@pytest.mark.parametrize("ard", [False, True])
def test_regression_bound_never_decreases_on_inputs_of_scale_1e4(ard):
    """N < D at input scale 1e4: batch VMP lowered its own bound by up to 61% (ARD); what is
    left are changes at the rounding level of the bound's terms (1e-7 relative)."""
    from vmp.models import linear_regression

    for seed in range(4):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(5, 8)) * 1e4
        y = x @ rng.normal(size=8) + rng.normal(size=5) * 1e4
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = linear_regression(x, y, ard=ard).fit(iterations=100, tol=0)
        bounds = np.asarray(result.history["evaluations"]["elbo"])
        assert np.all(np.diff(bounds) >= -1e-6 * np.abs(bounds[1:]))


def _basis_bound(x, y, q_tau):
    """The bound at q(w)'s optimum given q(tau) = Gamma(shape, rate) (prior w ~ N(0, I), tau ~
    Gamma(1, 1)), computed in the right-singular basis of x (w = V v: precision I + E[tau] S^2,
    diagonal), independently of vmp."""
    return _groups_bound([(x, y)], q_tau)


def _groups_bound(groups, q_tau, a=1.0, b=1.0):
    """``_basis_bound`` of independent weights w_g ~ N(0, I), one per group (x_g, y_g), sharing
    tau ~ Gamma(a, b): the sum of each group's terms in its own design's right-singular basis."""
    from scipy.special import digamma, gammaln

    shape, rate = q_tau
    e_tau, e_log = shape / rate, digamma(shape) - np.log(rate)
    total = (a * np.log(b) - gammaln(a) + (a - 1) * e_log - b * e_tau
             + shape - np.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape))
    for x, y in groups:
        u, s, vt = np.linalg.svd(x)
        n, d = x.shape
        s2 = np.zeros(d)
        s2[:s.size] = s * s
        lam = 1.0 + e_tau * s2
        v_mean = e_tau * np.concatenate([s * (u[:, :s.size].T @ y), np.zeros(d - s.size)]) / lam
        residual = y - u[:, :s.size] @ (s * v_mean[:s.size])
        squares = residual @ residual + np.sum(s2 / lam)
        total += (0.5 * n * (e_log - np.log(2 * np.pi)) - 0.5 * e_tau * squares
                  - 0.5 * d * np.log(2 * np.pi) - 0.5 * (v_mean @ v_mean + np.sum(1.0 / lam))
                  + 0.5 * d * (1.0 + np.log(2 * np.pi)) - 0.5 * np.sum(np.log(lam)))
    return total


def _q_tau(model):
    nat = model.state.natural["tau"]
    return nat[1] + 1.0, -nat[0]


def _regression(seed, local=False):
    """w ~ N(0, I), tau ~ Gamma(1, 1), N = 2 < D = 3 rows: design and data of scale 1e8; with
    ``local``, beside it y_n ~ N(u_n, 1), u_n ~ N(0, 1) on the same plate."""
    rng = np.random.default_rng(seed)
    design, obs = rng.normal(size=(2, 3)) * 1e8, rng.normal(size=2) * 1e8
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", 2):
            vmp.Normal("x", vmp.dot(w, design), tau, observed=obs)
            if local:
                vmp.Normal("y", vmp.Normal("u", 0.0, 1.0), 1.0, observed=rng.normal(size=2))
    return model, design, obs


def test_regression_bound_never_decreases_with_fewer_rows_than_inputs_at_scale_1e8():
    """N = 2 < D = 3, design and data of scale 1e8, prior precision 1: q(w)'s precision
    I + E[tau] X^T X has entries of 1e16 whose rounding (about 2) is above the prior's 1 in the
    null space of X. Every sweep's bound rises (it fell for 24 of 30 seeds by up to 0.4 nats,
    or the fit raised a ConvergenceError), and the last equals the bound computed in X's
    right-singular basis, where the precision is diagonal, at the same q(tau)."""
    for seed in range(5):
        model, design, obs = _regression(seed)
        result = model.fit(iterations=20, tol=0, progress=False)
        bounds = np.asarray(result.history["evaluations"]["elbo"])[1:]
        assert np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:])), seed
        nat = model.state.natural["tau"]
        assert bounds[-1] == pytest.approx(_basis_bound(design, obs, (nat[1] + 1.0, -nat[0])), rel=1e-10)


def test_an_ard_regression_with_fewer_rows_than_inputs_at_scale_1e8_has_the_entropy_of_its_precision():
    """w ~ N(0, diag(alpha)^-1), alpha_d ~ Gamma(1, 1), noise precision 1, N = 2 < D = 4 at input
    scale 1e8: q(w)'s entropy is that of Lambda = diag(E[alpha]) + X^T X by the matrix
    determinant lemma, log|Lambda| = sum_d log E[alpha_d] + log|I_N + X diag(E[alpha])^-1 X^T|
    (an N x N matrix without a null space), to 1e-12, and the bound never falls (Lambda formed as
    a dense sum, of entries 1e16, is not positive definite once rounded: a ConvergenceError)."""
    from vmp.families import Gaussian

    for seed in range(3):
        rng = np.random.default_rng(seed)
        x, y = rng.normal(size=(2, 4)) * 1e8, rng.normal(size=2) * 1e8
        with vmp.Model("ard") as model:
            with vmp.Plate("inputs", 4):
                alpha = vmp.Gamma("alpha", 1.0, 1.0)
            w = vmp.Gaussian("w", np.zeros(4), alpha)
            with vmp.Plate("data", 2):
                vmp.Normal("x", vmp.dot(w, x), 1.0, observed=y)
        result = model.fit(iterations=10, tol=0, progress=False)
        bounds = np.asarray(result.history["evaluations"]["elbo"])
        assert np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:])), seed
        e_alpha = model.state.moments["alpha"][0]
        small = np.eye(2) + (x / e_alpha) @ x.T
        logdet = np.sum(np.log(e_alpha)) + np.linalg.slogdet(small)[1]
        entropy = 2.0 * (1.0 + np.log(2 * np.pi)) - 0.5 * logdet
        assert Gaussian.entropy(model.state.natural["w"]) == pytest.approx(entropy, rel=1e-12, abs=1e-12), seed


#: a fuzzer's regression: D = 1, N = 7 rows of scale 1e8, the targets equal to the inputs
FIT_EXACTLY = np.array([1.8144525717291990e+08, -4.7820683602566227e+07, -1.0929091982108800e+07,
                        5.2308159803852893e+07, -3.1328872960146677e+07, 6.8035012347223028e+05,
                        1.7569771339969885e+08])


def _exact_fit(strategies=None):
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(1), 1.9 * np.eye(1))
        tau = vmp.Gamma("tau", 2.5907643667971967, 5.947198193990291)
        with vmp.Plate("data", 7):
            vmp.Normal("x", vmp.dot(w, FIT_EXACTLY[:, None]), tau, observed=FIT_EXACTLY)
    if strategies is not None:
        model.compile(strategies=strategies)
    return model


@pytest.mark.parametrize("strategies", [None, ("centered",)], ids=["default", "centered alone"])
def test_a_regression_that_fits_its_targets_exactly_at_scale_1e8_has_the_closed_form_bound(strategies):
    """y = x at scale 1e8: E[(y_n - x_n w)^2] = (y_n - x_n E[w])^2 + x_n^2 Var[w] is of order
    1e-1 while y_n^2 is 1e16; expanded into y^2 - 2 y x E[w] + x^2 E[w^2] it is rounding of order
    1, negative at some sweeps (q(tau)'s rate fell below its prior's), and the bound fell by a
    nat. Every sweep's bound rises, q(tau)'s rate is the prior's plus half the expected squared
    error, and the bound is the closed form written about q's mean (Bishop PRML eqs. (10.107),
    (10.108) with the Gamma and Gaussian entropies)."""
    from scipy.special import digamma, gammaln

    model = _exact_fit(strategies)
    result = model.fit(iterations=6, tol=0, progress=False)
    bounds = np.asarray(result.history["evaluations"]["elbo"])
    assert np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:]))
    lam = -2.0 * model.state.natural["w"][1][0, 0]
    m, var = model.state.natural["w"][0][0] / lam, 1.0 / lam
    rate, shape = -model.state.natural["tau"][0], model.state.natural["tau"][1] + 1.0
    x, a, b, p = FIT_EXACTLY, 2.5907643667971967, 5.947198193990291, 1.9
    squares = np.sum((x - x * m) ** 2 + x * x * var)
    assert rate == pytest.approx(b + 0.5 * squares, rel=1e-12)
    e_tau, e_log = shape / rate, digamma(shape) - np.log(rate)
    exact = (3.5 * (e_log - np.log(2 * np.pi)) - 0.5 * e_tau * squares
             + 0.5 * np.log(p / (2 * np.pi)) - 0.5 * p * (m * m + var) + 0.5 * np.log(2 * np.pi * np.e * var)
             + a * np.log(b) - gammaln(a) + (a - 1) * e_log - b * e_tau
             + shape - np.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape))
    assert model.elbo() == pytest.approx(exact, rel=1e-12)
    assert bounds[-1] == pytest.approx(exact, rel=1e-12)


def test_a_decrease_whose_diagnostic_sweep_breaks_a_precision_is_reported_not_raised():
    """N < D at input scale 1e8 (a fuzzer's example) evaluated by the reference alone (which
    forms q(w)'s precision as a dense sum): the sweep that locates the bound's decrease formed a
    precision that is not positive definite in floating point, and raised numpy's LinAlgError;
    it is reported as the decrease's cause."""
    design = np.array([[-1.2412330430390427e+08, 2.3650262696097380e+08, -4.3431463035671920e+07,
                        -3.7908486587697797e+07],
                       [1.1049039748775327e+08, -1.9556699612285640e+07, -3.0598676330359925e+07,
                        -1.0509408255994579e+08]])
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(4), 10.11694070573038 * np.eye(4))
        tau = vmp.Gamma("tau", 8.983831864758226, 4.367357387845379)
        with vmp.Plate("data", 2):
            vmp.Normal("x", vmp.dot(w, design), tau, observed=np.array([0.3910930730323781, 0.8065642803381794]))
    model.compile(strategies=())
    with pytest.warns(vmp.ElboDecreaseWarning, match="node 'w' gave a precision matrix that is not positive"):
        result = model.fit(iterations=11, tol=1e-3, progress=False)
    assert result.decrease == {"node": "w", "amount": float("inf")}


def _regression_at_scale_1e8(seed: int):
    """A fuzzer's regression (N = D = 4) whose inputs are of scale 1e8 for these seeds."""
    rng = np.random.default_rng(seed)
    design = rng.normal(size=(4, 4)) * rng.choice([1.0, 1e-6, 1e4, 1e8])
    obs = rng.normal(size=4) * rng.choice([1.0, 1e-6, 1e4, 1e8])
    a, b, prec = rng.uniform(0.05, 20, 3)
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(4), prec * np.eye(4))
        tau = vmp.Gamma("tau", a, b)
        with vmp.Plate("data", 4):
            vmp.Normal("x", vmp.dot(w, design), tau, observed=obs)
    return model


@pytest.mark.parametrize("seed,iterations", [(3, 5), (125, 0), (34, 14)])
def test_a_precision_that_rounding_breaks_is_a_divergence_not_a_linalg_error(seed, iterations):
    """Minibatches of 2 of 4 rows at input scale 1e8: the first sweep's precision is not positive
    definite once rounded (seed 3: numpy's LinAlgError from the fit), or q's covariance is not
    (seed 125: from predict's draws). Now a ConvergenceError or a reported divergence, and
    draws from a q that is positive definite."""
    model = _regression_at_scale_1e8(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 2), update="global",
                               step=vmp.RobbinsMonro(tau=10.0, kappa=1.0), iterations=iterations, seed=1,
                               progress=False)
    except vmp.ConvergenceError as err:
        assert "cannot be factored in floating point" in str(err)
        return
    if not result.diverged:
        assert np.all(np.isfinite(model.predict("x", draws=20).sample(3)))


def test_gaussian_draws_from_the_precision_have_its_inverse_as_covariance():
    """The draws E L^-T z used when Sigma = Lambda^-1 cannot be factored once formed: their
    covariance against Lambda^-1 (Monte Carlo, 200,000 draws; coordinates of scales 1 and 1e-4)."""
    from vmp.families.gaussian import Gaussian

    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 3))
    lam = a @ a.T + 0.5 * np.eye(3)
    lam[0] *= 1e4
    lam[:, 0] *= 1e4
    x = Gaussian._by_precision(-0.5 * lam, rng.standard_normal((200_000, 3)))
    cov = np.linalg.inv(lam)
    sd = np.sqrt(np.diag(cov))
    assert np.max(np.abs(np.cov(x.T) - cov) / np.outer(sd, sd)) < 0.015
    assert np.max(np.abs(x.mean(0)) / sd) < 0.015


def test_a_precision_factorized_from_its_parts_has_its_closed_form():
    """Lambda = I + B^T B with B = [[1e8, 1e8, 0]]: eigenvalues 1 + 2e16 along (1, 1, 0)/sqrt(2)
    and 1, 1 (formed, 1e16 + 1 rounds to 1e16 and Lambda is singular). From its parts
    (``_gram``): log|Lambda| = log(1 + 2e16), Sigma = I - v v^T 2e16 / (1 + 2e16), the mean
    B^T z / (1 + 2e16) for z = (3), and Var[c^T w] = c^T Sigma c along c = B's row."""
    from vmp.families import Gaussian, _gram, _linalg

    rows, z = np.array([[1e8, 1e8, 0.0]]), np.array([3.0])
    prior = (np.zeros(3), -0.5 * np.eye(3))
    natural = (rows.T @ z, -0.5 * (np.eye(3) + rows.T @ rows))
    g = _gram.factorized(natural, prior, (rows, z))
    big = 1.0 + 2e16
    v = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
    assert g.logdet() == pytest.approx(np.log(big), rel=1e-15)
    assert np.allclose(g.inv(), np.eye(3) - np.outer(v, v) * 2e16 / big, rtol=0, atol=1e-15)
    assert np.allclose(g.solve(natural[0]), rows[0] * 3.0 / big, rtol=1e-14, atol=0)
    assert g.inv_quadratic(rows) == pytest.approx(2e16 / big, rel=1e-14)
    with pytest.raises(np.linalg.LinAlgError):  # the dense factorization: what _gram replaces
        _linalg.Cholesky(-2.0 * natural[1]).logdet()
    Gaussian.factor_from_parts(natural, prior, lambda: (rows, z))
    assert Gaussian.entropy(natural) == pytest.approx(1.5 * (1 + np.log(2 * np.pi)) - 0.5 * np.log(big), rel=1e-15)
    assert np.allclose(Gaussian.moments(natural)[0], rows[0] * 3.0 / big, rtol=1e-14, atol=0)


def _monotone(result):
    bounds = np.asarray(result.history["evaluations"]["elbo"])[1:]
    return bounds, bool(np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:])))


def test_weights_read_by_two_regressions_at_scale_1e8_keep_the_bound_monotone():
    """Two data sets of one row each share w (D = 3) at scale 1e8: q(w)'s precision is the
    prior's plus the two factors' messages, each of entries 1e16. Factorized from the stack of
    both factors' rows, every sweep's bound rises (summed as dense matrices it fell by up to
    0.6 nats or the fit raised a ConvergenceError, 8 of 10 seeds) and the last is the bound of
    the stacked data computed in its right-singular basis."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        x1, y1, x2, y2 = rng.normal(size=(1, 3)) * 1e8, rng.normal(size=1) * 1e8, rng.normal(size=(1, 3)) * 1e8, \
            rng.normal(size=1) * 1e8
        with vmp.Model("two") as model:
            w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
            tau = vmp.Gamma("tau", 1.0, 1.0)
            with vmp.Plate("a", 1):
                vmp.Normal("x1", vmp.dot(w, x1), tau, observed=y1)
            with vmp.Plate("b", 1):
                vmp.Normal("x2", vmp.dot(w, x2), tau, observed=y2)
        bounds, monotone = _monotone(model.fit(iterations=15, tol=0, progress=False))
        assert monotone, seed
        want = _groups_bound([(np.concatenate([x1, x2]), np.concatenate([y1, y2]))], _q_tau(model))
        assert bounds[-1] == pytest.approx(want, rel=1e-10), seed


def _grouped(seed, layout, groups=3):
    """One regression per group (w of plate g, N = 2 < D = 3 rows each) at scale 1e8, sharing a
    noise precision held near 1 by its prior Gamma(1e4, 1e4); the rows' groups by the plate g of
    the data (``layout`` "plate"; "inner": the data's plates (n, g), g inside), by a gather
    w[group] along the rows ("gather"), or w of two plates (a, b) over the groups ("two")."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(groups, 2, 3)) * 1e8, rng.normal(size=(groups, 2)) * 1e8
    with vmp.Model("grouped") as model:
        tau = vmp.Gamma("tau", 1e4, 1e4)
        g = vmp.Plate("g", groups)
        if layout in ("plate", "gather", "inner"):
            with g:
                w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        if layout == "plate":
            with g, vmp.Plate("n", 2):
                vmp.Normal("x", vmp.dot(w, x), tau, observed=y)
        elif layout == "inner":
            with vmp.Plate("n", 2), g:
                vmp.Normal("x", vmp.dot(w, np.swapaxes(x, 0, 1)), tau, observed=y.T)
        elif layout == "gather":
            order = rng.permutation(2 * groups)  # the rows of the groups interleaved
            group = np.repeat(np.arange(groups), 2)[order]
            with vmp.Plate("n", 2 * groups):
                vmp.Normal("x", vmp.dot(w[group], x.reshape(-1, 3)[order]), tau, observed=y.reshape(-1)[order])
        else:
            with vmp.Plate("a", 1), vmp.Plate("b", groups):
                w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
                with vmp.Plate("n", 2):
                    vmp.Normal("x", vmp.dot(w, x[None]), tau, observed=y[None])
    return model, list(zip(x, y))


@pytest.mark.parametrize("layout", ["plate", "inner", "gather", "two"])
def test_weights_with_a_plate_at_scale_1e8_keep_the_bound_monotone(layout):
    """w of plate g (one regression per group): each element's precision is factorized from
    its rows, one batched QR over the plate, and its squared error read centered. Every sweep's
    bound rises (formed densely, the fit raised a ConvergenceError or its bound fell at every
    seed of every layout), and the last is the sum of the groups' bounds, each in its own
    design's right-singular basis."""
    for seed in range(3):
        model, groups = _grouped(seed, layout)
        bounds, monotone = _monotone(model.fit(iterations=12, tol=0, progress=False))
        assert monotone, seed
        assert bounds[-1] == pytest.approx(_groups_bound(groups, _q_tau(model), 1e4, 1e4), rel=1e-12), seed


def test_a_stochastic_fit_of_a_regression_at_scale_1e8_blends_the_roots():
    """Steps of rate 1/2 over every row (N = 2 < D = 3, scale 1e8): q(w) is (1 - rho) of the last
    q plus rho of the target, both ill-conditioned, blended as the stack of their roots. The fit
    does not diverge (formed densely, it diverged at 5 of 6 seeds), the bound rises at every
    step (the blend of the natural parameters toward the optimum of one node lowers its KL
    divergence to it), and at the end it is the bound at q(w)'s optimum given q(tau), in the
    design's right-singular basis."""
    for seed in range(3):
        model, design, obs = _regression(seed)
        fit = model.stochastic(subsample=vmp.Minibatch("data", 2), step=vmp.Constant(0.5), seed=0, progress=False)
        bounds = []
        for _ in range(60):
            fit.step()
            bounds.append(model.elbo())
        assert not fit.result().diverged, seed
        assert np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:])), seed
        assert bounds[-1] == pytest.approx(_groups_bound([(design, obs)], _q_tau(model)), rel=1e-10), seed


def test_a_saved_regression_at_scale_1e8_loads_with_its_factorization_in_another_process(tmp_path):
    """The fitted q(w) of a regression at scale 1e8 (N = 2 < D = 3) is factorized from its parts;
    its file stores that factor's root beside the natural parameters, so that a process which
    has not seen the fit reads the same bound, to 1e-12 (from the dense precision alone it read
    a bound 0.08 nats lower)."""
    import subprocess
    import sys

    rng = np.random.default_rng(1)
    design, obs = rng.normal(size=(2, 3)) * 1e8, rng.normal(size=2) * 1e8
    np.savez(tmp_path / "data.npz", design=design, obs=obs)
    build = (f"import numpy as np, vmp\n"
             f"d = np.load({str(tmp_path / 'data.npz')!r})\n"
             "with vmp.Model('regression') as model:\n"
             "    w = vmp.Gaussian('w', np.zeros(3), np.eye(3))\n"
             "    tau = vmp.Gamma('tau', 1.0, 1.0)\n"
             "    with vmp.Plate('data', 2):\n"
             "        vmp.Normal('x', vmp.dot(w, d['design']), tau, observed=d['obs'])\n")
    fit = build + f"model.fit(iterations=10, tol=0, progress=False).save({str(tmp_path / 'fit.npz')!r})\n" \
        "print(repr(model.elbo()))\n"
    read = build + f"vmp.load({str(tmp_path / 'fit.npz')!r}, model)\nprint(repr(model.elbo()))\n"
    run = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
           for code in (fit, read)]
    fitted, loaded = (float(out.split()[-1]) for out in run)
    assert loaded == pytest.approx(fitted, rel=1e-12)
    saved = np.load(tmp_path / "fit.npz")  # the bound in the design's singular basis, at the saved q(tau)
    nat = [saved[k] for k in saved.files if k.startswith("natural/tau/")]
    assert fitted == pytest.approx(_groups_bound([(design, obs)], (nat[1] + 1.0, -nat[0])), rel=1e-10)


def test_an_ard_regression_per_group_at_scale_1e8_has_the_entropy_of_each_precision():
    """w of plate g with an ARD prior per group (alpha of plates g x inputs), N = 2 < D = 4 rows
    of scale 1e8 per group: each q(w_g)'s entropy is that of diag(E[alpha_g]) + X_g^T X_g by the
    matrix determinant lemma, to 1e-12, and the bound never falls (formed densely: a
    ConvergenceError at 4 of 4 seeds)."""
    from vmp.families import Gaussian

    for seed in range(2):
        rng = np.random.default_rng(seed)
        x, y = rng.normal(size=(3, 2, 4)) * 1e8, rng.normal(size=(3, 2)) * 1e8
        with vmp.Model("ard") as model:
            with vmp.Plate("g", 3):
                with vmp.Plate("inputs", 4):
                    alpha = vmp.Gamma("alpha", 1.0, 1.0)
                w = vmp.Gaussian("w", np.zeros(4), alpha)
                with vmp.Plate("data", 2):
                    vmp.Normal("x", vmp.dot(w, x), 1.0, observed=y)
        bounds, monotone = _monotone(model.fit(iterations=10, tol=0, progress=False))
        assert monotone, seed
        e_alpha = model.state.moments["alpha"][0]
        small = np.eye(2) + np.einsum("gnd,gd,gmd->gnm", x, 1.0 / e_alpha, x)
        logdet = np.sum(np.log(e_alpha), axis=-1) + np.linalg.slogdet(small)[1]
        entropy = 2.0 * (1.0 + np.log(2 * np.pi)) - 0.5 * logdet
        assert Gaussian.entropy(model.state.natural["w"]) == pytest.approx(entropy, rel=1e-12, abs=1e-12), seed


def test_rows_grouped_per_element_of_a_gathered_w_round_trip_and_refuse_a_wasteful_padding():
    """A child's rows regrouped by the element of w that a gather w[group] reads (each group's
    rows in their order, zeros after) and back give the rows; groups so unequal that padding them
    to the largest would take over PADDED times the rows are not regrouped (the dense path)."""
    from vmp.graph.strategies import centered, grouping

    rng = np.random.default_rng(0)
    group = rng.integers(0, 4, size=9)
    design = rng.normal(size=(9, 2))
    with vmp.Model("g") as model:
        with vmp.Plate("g", 4):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("n", 9):
            vmp.Normal("x", vmp.dot(w[group], design), 1.0, observed=rng.normal(size=9))
    f = model.compile()[0]["x"]
    q = centered._quadratic(f)
    g = grouping.groups(q.mean.leaf, f.child_letters, q.mean.letters[:-1], (9,), (4,), None)
    padded = grouping.regroup(g, design)
    for k in range(4):
        count = np.sum(group == k)
        assert np.array_equal(padded[k, :count], design[group == k]) and not padded[k, count:].any()
    assert np.array_equal(grouping.ungroup(g, padded[..., 0]), design[:, 0])
    lopsided = np.zeros(grouping.PADDED_ANY // 100, dtype=int)
    lopsided[:300] = np.arange(300)
    with vmp.Model("lopsided") as model:
        with vmp.Plate("g", 300):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("n", lopsided.size):
            vmp.Normal("x", vmp.dot(w[lopsided], np.ones((lopsided.size, 2))), 1.0, observed=np.ones(lopsided.size))
    f = model.compile()[0]["x"]
    q = centered._quadratic(f)
    assert grouping.groups(q.mean.leaf, f.child_letters, q.mean.letters[:-1], (lopsided.size,), (300,), None) is None


@pytest.mark.parametrize("design", ["fewer rows", "collinear"])
def test_a_regression_at_scale_1e8_fitted_block_by_block_keeps_the_bound_monotone(design):
    """vmp.Chunked sums the regression's message to w block by block; the sum declares the
    blocks' rows, formed again when the precision is ill-conditioned, each block's compacted to
    its QR factor. Scale 1e8: N = 4 < D = 6 in blocks of 2, or N = 8 rows of a design whose third
    column is the sum of the others in blocks of 4 (blocks of more rows than D, compacted). Every
    sweep's bound rises and the last is the bound in the design's singular basis (summed densely,
    the fits raise a ConvergenceError: 4 of 4 seeds with fewer rows, 2 of 4 collinear)."""
    for seed in range(2):
        model, x, y = _blocked_regression(seed, design)
        size = x.shape[0] // 2
        bounds, monotone = _monotone(model.fit(iterations=12, tol=0, progress=False, executor=vmp.Chunked(size=size)))
        assert monotone, seed
        assert bounds[-1] == pytest.approx(_groups_bound([(x, y)], _q_tau(model)), rel=1e-12), seed


def _blocked_regression(seed: int, design: str):
    """w ~ N(0, I), tau ~ Gamma(1, 1) at scale 1e8: N = 4 < D = 6 ("fewer rows"), or N = 8 rows
    of a design whose third column is the sum of the others ("collinear")."""
    rng = np.random.default_rng(seed)
    if design == "fewer rows":
        x, y = rng.normal(size=(4, 6)) * 1e8, rng.normal(size=4) * 1e8
    else:
        x = rng.normal(size=(8, 3)) * 1e8
        x[:, 2] = x[:, 0] + x[:, 1]
        y = x @ rng.normal(size=3) + rng.normal(size=8) * 1e5
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(x.shape[1]), np.eye(x.shape[1]))
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", x.shape[0]):
            vmp.Normal("x", vmp.dot(w, x), tau, observed=y)
    return model, x, y
