"""Prior predictive sampling (``model.sample_prior``, ``model.predict(..., prior=True)``) against
the closed forms of conjugate models: Normal-Gamma, Beta-Bernoulli, Dirichlet-Categorical
mixture, Gaussian-Wishart, Markov chains."""
import numpy as np
import pytest
from scipy import special, stats

import vmp
from vmp.models import beta_bernoulli, hmm

N = 40_000  # draws; each moment is checked to 5 of its standard errors (fixed seeds)


def close(draws, want, what):
    """The mean of ``draws`` (axis 0) within 5 standard errors of ``want``."""
    draws = np.asarray(draws, float)
    se = draws.std(0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(0) - want) < 5 * se + 1e-12), (what, draws.mean(0), want, se)


def normal_gamma(a=3.0, b=2.0, m0=1.0, lam0=0.5, n=4):
    """tau ~ Gamma(a, b), mu ~ N(m0, 1/(lam0 tau)), x_i ~ N(mu, 1/tau)."""
    with vmp.Model("normal_gamma") as model:
        tau = vmp.Gamma("tau", a, b)
        mu = vmp.Normal("mu", m0, lam0 * tau)
        with vmp.Plate("data", n):
            vmp.Normal("x", mu, tau, observed=np.zeros(n))
    return model


def test_normal_gamma_draws_have_the_closed_form_moments():
    a, b, m0, lam0 = 3.0, 2.0, 1.0, 0.5
    d = normal_gamma(a, b, m0, lam0).sample_prior(N, seed=0)
    assert d["tau"].shape == (N,) and d["mu"].shape == (N,) and d["x"].shape == (N, 4)
    close(d["tau"], a / b, "E[tau]")
    close((d["tau"] - a / b) ** 2, a / b ** 2, "Var[tau]")
    close(d["mu"], m0, "E[mu]")
    var_mu = b / (lam0 * (a - 1))  # mu is Student-t with 2a dof, scale^2 b / (a lam0)
    close((d["mu"] - m0) ** 2, var_mu, "Var[mu]")
    close(d["x"], m0, "E[x]")
    close((d["x"] - m0) ** 2, b / (a - 1) * (1 + 1 / lam0), "Var[x]")
    close((d["x"][:, 0] - m0) * (d["x"][:, 1] - m0), var_mu, "Cov[x_0, x_1]: the shared mu")
    t = stats.t(2 * a, loc=m0, scale=np.sqrt(b / (a * lam0)))
    assert stats.kstest(d["mu"], t.cdf).pvalue > 1e-3


def test_beta_bernoulli_draws_have_the_closed_form_moments():
    a, b = 2.0, 5.0
    model = beta_bernoulli(np.array([0, 1, 1]), prior=(a, b))
    d = model.sample_prior(N, seed=1)
    assert set(np.unique(d["x"])) == {0, 1} and d["p"].shape == (N, 1)
    close(d["p"][:, 0], a / (a + b), "E[p]")
    close(d["x"], a / (a + b), "E[x]")
    close(d["x"][:, 0] * d["x"][:, 1], a * (a + 1) / ((a + b) * (a + b + 1)), "P(x_0 = x_1 = 1)")
    close(d["x"].all(1), np.exp(special.betaln(a + 3, b) - special.betaln(a, b)), "P(all three are 1)")


def test_dirichlet_categorical_mixture_draws_go_through_the_gate():
    alpha, m, p, tau = np.array([1.0, 2.0, 3.0]), np.array([-4.0, 0.0, 5.0]), np.array([1.0, 4.0, 0.5]), 2.0
    with vmp.Model("mixture") as model:
        pi = vmp.Dirichlet("pi", alpha=alpha)
        with vmp.Plate("components", 3):
            mu = vmp.Normal("mu", mean=m, precision=p)
        with vmp.Plate("data", 2):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], tau, observed=np.zeros(2))
    d = model.sample_prior(N, seed=2)
    w = alpha / alpha.sum()
    close(d["z"][:, 0, None] == np.arange(3), w, "P(z = k)")
    a0 = alpha.sum()
    close((d["z"][:, 0] == d["z"][:, 1])[:, None] * (d["z"][:, 0, None] == np.arange(3)),
          alpha * (alpha + 1) / (a0 * (a0 + 1)), "P(z_0 = z_1 = k): the shared pi")
    mean = w @ m
    close(d["x"][:, 0], mean, "E[x]")
    close((d["x"][:, 0] - mean) ** 2, w @ (m ** 2 + 1 / p + 1 / tau) - mean ** 2, "Var[x]")
    chosen = np.take_along_axis(d["mu"], d["z"], axis=1)
    assert np.all(np.abs(d["x"] - chosen) < 8 / np.sqrt(tau))  # x is drawn around the gated mu_z


def test_gaussian_wishart_draws_have_the_inverse_wishart_covariance():
    nu, scale = 6.0, np.array([[1.0, 0.3], [0.3, 0.5]])
    with vmp.Model("gw") as model:
        lam = vmp.Wishart("Lambda", dof=nu, scale=scale)
        with vmp.Plate("data", 1):
            vmp.Gaussian("x", mean=np.array([1.0, -1.0]), precision=lam, observed=np.zeros((1, 2)))
    d = model.sample_prior(N, seed=3)
    close(d["Lambda"].reshape(N, 4), (nu * scale).ravel(), "E[Lambda]")
    x = d["x"][:, 0] - np.array([1.0, -1.0])
    want = np.linalg.inv(scale) / (nu - 2 - 1)  # E[Lambda^-1] = S^-1 / (nu - D - 1)
    close((x[:, :, None] * x[:, None, :]).reshape(N, 4), want.ravel(), "Cov[x]")


def test_gamma_exponential_draws_have_the_lomax_moments():
    a, b = 4.0, 3.0
    with vmp.Model("lomax") as model:
        lam = vmp.Gamma("lam", a, b)
        with vmp.Plate("data", 1):
            vmp.Exponential("x", lam, observed=np.ones(1))
    x = model.sample_prior(N, seed=7)["x"][:, 0]
    close(x, b / (a - 1), "E[x]")  # x is Lomax(a, b): P(x > t) = (b / (b + t))^a
    assert stats.kstest(x, stats.lomax(a, scale=b).cdf).pvalue > 1e-3


def test_markov_chain_draws_follow_pi0_times_a_power_of_the_transitions():
    pi0, a = np.array([0.7, 0.2, 0.1]), np.array([[0.8, 0.2, 0.0], [0.1, 0.6, 0.3], [0.3, 0.0, 0.7]])
    with vmp.Model("chain") as model:
        with vmp.Plate("sequences", 2), vmp.Plate("time", 4):
            vmp.CategoricalMarkovChain("z", initial=pi0, transition=a, lengths=np.array([4, 2]))
    z = model.sample_prior(N, seed=4)["z"]
    assert z.shape == (N, 2, 4) and np.isnan(z[:, 1, 2:]).all() and not np.isnan(z[:, 0]).any()
    for t in range(4):
        close(z[:, 0, t, None] == np.arange(3), pi0 @ np.linalg.matrix_power(a, t), f"P(z_{t})")
    moves = np.stack([z[:, 0, :-1].ravel(), z[:, 0, 1:].ravel()], 1).astype(int)
    assert not np.any((a[moves[:, 0], moves[:, 1]] == 0)), "a transition of probability 0 was drawn"


def test_hmm_draws_pad_the_short_sequences_and_read_the_random_transitions():
    rng = np.random.default_rng(0)
    model = hmm([rng.normal(size=(5, 2)), rng.normal(size=(3, 2))], 3, initial_alpha=2.0)
    d = model.sample_prior(N // 4, seed=5)
    assert d["y"].shape == (N // 4, 2, 5, 2) and np.isnan(d["y"][:, 1, 3:]).all()
    close(d["z"][:, 0, 0, None] == np.arange(3), np.full(3, 1 / 3), "P(z_0) under a symmetric pi0")
    rows = np.take_along_axis(d["A"], d["z"][:, 0, 0].astype(int)[:, None, None], axis=1)[:, 0]
    close(d["z"][:, 0, 1, None] == np.arange(3), rows.mean(0), "P(z_1) = E[A[z_0]]")


def test_predict_prior_gives_the_prior_predictive_without_a_fit():
    a, b, m0, lam0 = 3.0, 2.0, 1.0, 0.5
    model = normal_gamma(a, b, m0, lam0)
    pred = model.predict("x", prior=True, draws=N, seed=0)
    assert pred.method == "monte-carlo" and model.state is None
    var = b / (a - 1) * (1 + 1 / lam0)
    assert np.allclose(pred.mean, m0, atol=5 * np.sqrt(var / N))
    assert np.allclose(pred.variance, var, rtol=0.1)
    assert pred.sample(7, 0).shape == (7, 4)
    assert np.array_equal(pred.sample(7, 0), model.sample_prior(7, 0)["x"])
    with pytest.raises(vmp.GraphError, match="no closed-form"):
        pred.to_scipy()


def test_predict_prior_of_a_categorical_gives_class_probabilities():
    alpha = np.array([1.0, 3.0])
    with vmp.Model("cat") as model:
        pi = vmp.Dirichlet("pi", alpha=alpha)
        with vmp.Plate("data", 3):
            vmp.Categorical("c", pi, observed=np.array([0, 1, 1]))
    pred = model.predict("c", prior=True, draws=N, seed=6)
    assert pred.mean.shape == (3, 2)
    assert np.allclose(pred.mean, alpha / alpha.sum(), atol=0.01)


def test_the_same_seed_gives_the_same_bits_and_the_fit_is_untouched():
    model = normal_gamma()
    model.fit(iterations=100)
    before = model["mu"].natural
    one, two = model.sample_prior(5, seed=9), model.sample_prior(5, seed=9)
    assert all(np.array_equal(one[k], two[k]) for k in one)
    assert not np.array_equal(one["x"], model.sample_prior(5, seed=10)["x"])
    assert all(np.array_equal(p, q) for p, q in zip(before, model["mu"].natural))


@pytest.mark.parametrize("n", [0, -3, 2.5, True, "10", None])
def test_sample_prior_refuses_a_bad_number_of_draws(n):
    with pytest.raises(vmp.OptionError, match="sample_prior.*positive integer"):
        normal_gamma().sample_prior(n)


def test_predict_prior_of_an_unknown_node_names_the_nodes():
    with pytest.raises(vmp.GraphError, match="no node named 'y'.*tau, mu, x"):
        normal_gamma().predict("y", prior=True)
