"""One table of small networks, one per rule and per kind of glue, for the generic rule tests.

Each case builds a model and names the factor (its child node) under test.
"""
from __future__ import annotations

import numpy as np

import vmp


def _rng():
    return np.random.default_rng(7)


def gaussian_wishart():
    with vmp.Model("c") as m:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 4):
            x = vmp.Gaussian("x", mu, lam)
            vmp.Gaussian("y", x, np.eye(2), observed=_rng().normal(size=(4, 2)))
    return m, "x"


def gaussian_observed_weighted():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 5), vmp.Plate("K", 3):
            vmp.Gaussian("x", mu, lam, observed=rng.normal(size=(5, 3, 2)), weights=rng.uniform(size=(5, 3)))
    return m, "x"


def normal_gamma():
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4), vmp.Plate("K", 3):
            x = vmp.Normal("x", mu, tau)
            vmp.Normal("y", x, 2.0, observed=_rng().normal(size=(4, 3)))
    return m, "x"


def normal_scaled_precision():
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        mu = vmp.Normal("mu", 0.0, 0.5 * tau)
        with vmp.Plate("N", 3):
            vmp.Normal("x", mu, tau, observed=[0.1, 1.0, -0.5])
    return m, "mu"


def gaussian_scaled_wishart():
    with vmp.Model("c") as m:
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        mu = vmp.Gaussian("mu", np.ones(2), 2.0 * lam)
        with vmp.Plate("N", 3):
            vmp.Gaussian("x", mu, lam, observed=_rng().normal(size=(3, 2)))
    return m, "mu"


def gamma_rate():
    with vmp.Model("c") as m:
        b = vmp.Gamma("b", 2.0, 1.0)
        with vmp.Plate("N", 4):
            t = vmp.Gamma("t", 3.0, b)
            vmp.Normal("y", 0.0, t, observed=_rng().normal(size=4))
    return m, "t"


def wishart_const():
    with vmp.Model("c") as m:
        with vmp.Plate("K", 2):
            lam = vmp.Wishart("Lam", [3.0, 4.5], np.array([[1.0, 0.2], [0.2, 2.0]]))
        with vmp.Plate("N", 3), vmp.Plate("K", 2):
            vmp.Gaussian("x", np.zeros(2), lam, observed=_rng().normal(size=(3, 2, 2)))
    return m, "Lam"


def _normal_mixture(alpha, mask=None, weights=None):
    """z_n ~ Cat(pi), x_n ~ N(mu_{z_n}, 1) observed (z has observed descendants where unmasked)."""
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", alpha)
        with vmp.Plate("K", len(alpha)):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi, weights=weights)
            vmp.Normal("x", mu[z], 1.0, observed=rng.normal(size=5), mask=mask)
    return m, "z"


def dirichlet_categorical():
    return _normal_mixture([1.0, 2.0, 0.5])


def gated_gaussian():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3):
            mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
            lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 6):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mu[z], lam[z], observed=rng.normal(size=(6, 2)), weights=rng.uniform(size=6))
    return m, "x"


def gated_normal_hidden_child():
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
            tau = vmp.Gamma("tau", 2.0, 2.0)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", pi)
            x = vmp.Normal("x", mu[z], tau[z])
            vmp.Normal("y", x, 4.0, observed=_rng().normal(size=4))
    return m, "x"


def gated_categorical():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("K", 2):
            beta = vmp.Dirichlet("beta", np.ones(4))
        with vmp.Plate("D", 3):
            theta = vmp.Dirichlet("theta", np.ones(2))
        docs = np.array([0, 0, 1, 2, 2, 2])
        with vmp.Plate("T", 6):
            z = vmp.Categorical("z", theta[docs], weights=rng.integers(1, 4, size=6))
            vmp.Categorical("w", beta[z], observed=rng.integers(0, 4, size=6), weights=rng.integers(1, 4, size=6))
    return m, "w"


def gathered_categorical():
    m, _ = gated_categorical()
    return m, "z"


def _ratings(biases: bool):
    """r ~ N(u[rows] . v[cols] (+ bu[rows] + bi[cols] + b0 + 3), 1/tau)."""
    rng = _rng()
    rows, cols = np.array([0, 1, 1, 2, 0]), np.array([1, 0, 2, 2, 0])
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("U", 3):
            u = vmp.Gaussian("u", np.zeros(2), np.eye(2))
            bu = vmp.Normal("bu", 0.0, 1.0) if biases else None
        with vmp.Plate("I", 3):
            v = vmp.Gaussian("v", np.zeros(2), np.eye(2))
            bi = vmp.Normal("bi", 0.0, 1.0) if biases else None
        b0 = vmp.Normal("b0", 0.0, 1.0) if biases else None
        with vmp.Plate("R", 5):
            mean = vmp.dot(u[rows], v[cols])
            if biases:
                mean = mean + bu[rows] + bi[cols] + b0 + 3.0
            vmp.Normal("r", mean, tau, observed=rng.normal(size=5),
                       weights=rng.uniform(size=5) if biases else None)
    return m, "r"


def dot_structured():
    return _ratings(biases=False)


def sum_dot_and_biases():
    return _ratings(biases=True)


def dot_factorized():
    rng = _rng()
    rows, cols = np.array([0, 1, 1, 2, 0]), np.array([1, 0, 2, 2, 0])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3), vmp.Plate("F", 3):
            u = vmp.Normal("u", 0.0, 1.0)
        with vmp.Plate("I", 3), vmp.Plate("F", 3):
            v = vmp.Normal("v", 0.0, 1.0)
        with vmp.Plate("R", 5):
            vmp.Normal("r", vmp.dot(u[rows], v[cols]), 2.0, observed=rng.normal(size=5), weights=rng.uniform(size=5))
    return m, "r"


def dot_plain():
    rng = _rng()
    with vmp.Model("c") as m:
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        with vmp.Plate("N", 4):
            xn = vmp.Gaussian("xn", np.zeros(3), np.eye(3))
            vmp.Normal("y", vmp.dot(xn, w), 1.5, observed=rng.normal(size=4))
    return m, "y"


def dot_constant_design():
    rng = _rng()
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        with vmp.Plate("N", 4):
            vmp.Normal("y", vmp.dot(rng.normal(size=(4, 3)), w), tau, observed=rng.normal(size=4))
    return m, "y"


def dot_constant_design_plated():
    """One regression per group: w of plate G, each group's rows of the design."""
    rng = _rng()
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("G", 2):
            w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
            with vmp.Plate("N", 4):
                vmp.Normal("y", vmp.dot(rng.normal(size=(2, 4, 3)), w), tau, observed=rng.normal(size=(2, 4)))
    return m, "y"


def dot_constant_design_gathered():
    """One regression per group, each row's group by a gather w[group]."""
    rng = _rng()
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("G", 3):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("N", 5):
            vmp.Normal("y", vmp.dot(w[np.array([0, 2, 2, 1, 0])], rng.normal(size=(5, 2))), tau,
                       observed=rng.normal(size=5))
    return m, "y"


def dot_constant_design_shared():
    """Two data sets of one regression's weights (their messages to w are summed)."""
    rng = _rng()
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        with vmp.Plate("N", 4):
            vmp.Normal("y", vmp.dot(rng.normal(size=(4, 3)), w), tau, observed=rng.normal(size=4))
        with vmp.Plate("M", 2):
            vmp.Normal("v", vmp.dot(rng.normal(size=(2, 3)), w), tau, observed=rng.normal(size=2))
    return m, "y"


def dot_constant_factorized():
    rng = _rng()
    rows = np.array([0, 1, 1, 2, 0])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3), vmp.Plate("F", 2):
            u = vmp.Normal("u", 0.0, 1.0)
        with vmp.Plate("R", 5):
            vmp.Normal("r", vmp.dot(u[rows], rng.normal(size=(5, 2))), 2.0, observed=rng.normal(size=5))
    return m, "r"


def gaussian_sum_mean():
    rng = _rng()
    with vmp.Model("c") as m:
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        with vmp.Plate("K", 2):
            off = vmp.Gaussian("off", np.zeros(2), np.eye(2))
        with vmp.Plate("N", 4), vmp.Plate("K", 2):
            vmp.Gaussian("x", mu + off + np.array([1.0, -1.0]), lam, observed=rng.normal(size=(4, 2, 2)))
    return m, "x"


def _ard(hidden: bool, isotropic: bool = False):
    """w_d ~ N(mu, diag(alpha)^-1), alpha_k ~ Gamma on a plate K of w's 3 coordinates; or, with
    ``isotropic``, w_d ~ N(mu, I / alpha_d), one Gamma alpha_d on w's own plate D shared by its
    coordinates: hidden w with a Gaussian child, or observed."""
    rng = _rng()
    with vmp.Model("c") as m:
        if not isotropic:
            with vmp.Plate("K", 3):
                alpha = vmp.Gamma("alpha", 2.0, 1.0)
        mu = vmp.Gaussian("mu", np.zeros(3), np.eye(3)) if hidden else np.array([0.5, -1.0, 0.0])
        with vmp.Plate("D", 4):
            if isotropic:
                alpha = vmp.Gamma("alpha", 2.0, 1.0)
            if hidden:
                w = vmp.Gaussian("w", mu, alpha)
                vmp.Gaussian("y", w, np.eye(3), observed=rng.normal(size=(4, 3)))
            else:
                vmp.Gaussian("w", mu, alpha, observed=rng.normal(size=(4, 3)), weights=rng.uniform(size=4))
    return m, "w"


def gaussian_ard():
    return _ard(hidden=True)


def gaussian_ard_observed():
    return _ard(hidden=False)


def gaussian_isotropic():
    return _ard(hidden=True, isotropic=True)


def gaussian_isotropic_observed():
    return _ard(hidden=False, isotropic=True)


def gate_outer_plate():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2), vmp.Plate("D", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
            tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", pi)
            with vmp.Plate("D", 3):
                vmp.Normal("x", mu[z, "K"], tau[z, "K"], observed=rng.normal(size=(4, 3)))
    return m, "x"


def normal_partially_observed_parent():
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 4):
            x = vmp.Normal("x", 0.0, 1.0, observed=[0.5, 0.0, -1.0, 0.0], mask=[True, False, True, False])
            vmp.Normal("y", x, tau, observed=_rng().normal(size=4))
    return m, "y"


def categorical_barren_rows():
    weights = np.random.default_rng(3).uniform(1, 2, size=5)
    return _normal_mixture(np.ones(2), mask=[True, False, True, True, False], weights=weights)


def _hmm(weights=None):
    """z ~ MarkovChain(pi0, A) over two chains of lengths 4 and 3 padded to 4; x_t ~ N(mu_{z_t}, 1)
    observed but for the padding and one missing step."""
    rng = _rng()
    with vmp.Model("c") as m:
        pi0 = vmp.Dirichlet("pi0", rng.uniform(0.5, 2.0, size=3))
        with vmp.Plate("K", 3):
            a = vmp.Dirichlet("A", rng.uniform(0.5, 2.0, size=(3, 3)))
            mu = vmp.Normal("mu", 0.0, 0.5)
        with vmp.Plate("S", 2), vmp.Plate("T", 4):
            z = vmp.CategoricalMarkovChain("z", pi0, a, lengths=[4, 3], weights=weights)
            mask = np.array([[True, False, True, True], [True, True, True, False]])
            vmp.Normal("x", mu[z], 1.0, observed=rng.normal(size=(2, 4)), mask=mask)
    return m


def markov_chain():
    return _hmm(), "z"


def markov_chain_weighted():
    return _hmm(weights=np.array([[2.0] * 4, [0.5] * 4])), "z"


def markov_chain_gate():
    return _hmm(), "x"


def poisson_gamma():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 4), vmp.Plate("K", 2):
            vmp.Poisson("y", lam, exposure=rng.uniform(0.5, 2.0, size=(4, 2)), observed=rng.poisson(3.0, size=(4, 2)),
                        weights=rng.uniform(size=(4, 2)))
    return m, "y"


def poisson_scaled_rate():
    with vmp.Model("c") as m:
        lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 3):
            vmp.Poisson("y", 2.5 * lam, observed=[0, 3, 7], mask=[True, False, True])
    return m, "y"


def poisson_gated():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3):
            lam = vmp.Gamma("lam", 2.0, 0.5)
        with vmp.Plate("N", 6):
            z = vmp.Categorical("z", pi)
            vmp.Poisson("y", lam[z], observed=rng.poisson(4.0, size=6), weights=rng.uniform(size=6))
    return m, "y"


def exponential_gamma():
    rng = _rng()
    with vmp.Model("c") as m:
        b = vmp.Gamma("b", 2.0, 1.0)
        lam = vmp.Gamma("lam", 2.0, b)
        with vmp.Plate("N", 5):
            vmp.Exponential("x", lam, observed=rng.exponential(size=5), weights=rng.uniform(size=5))
    return m, "x"


def multinomial_dirichlet():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("D", 2):
            p = vmp.Dirichlet("p", np.ones(3))
        with vmp.Plate("N", 4), vmp.Plate("D", 2):
            vmp.Multinomial("x", p, observed=rng.multinomial(5, [0.2, 0.3, 0.5], size=(4, 2)),
                            weights=rng.uniform(size=(4, 2)))
    return m, "x"


def multinomial_gated():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            p = vmp.Dirichlet("p", np.ones(4))
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Multinomial("x", p[z], observed=rng.multinomial(6, [0.1, 0.2, 0.3, 0.4], size=5))
    return m, "x"


def poisson_dot():
    """Poisson factorization over a dense users x items plate: theta_uk ~ Gamma(a, xi_u)."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3):
            xi = vmp.Gamma("xi", 1.0, 1.0)
        with vmp.Plate("U", 3), vmp.Plate("F", 2):
            theta = vmp.Gamma("theta", 0.7, xi)
        with vmp.Plate("I", 4), vmp.Plate("F", 2):
            beta = vmp.Gamma("beta", 0.5, 0.8)
        with vmp.Plate("U", 3), vmp.Plate("I", 4):
            vmp.Poisson("y", vmp.dot(theta, beta), observed=rng.poisson(2.0, size=(3, 4)),
                        weights=rng.uniform(size=(3, 4)))
    return m, "y"


def poisson_dot_gathered():
    rng = _rng()
    rows, cols = np.array([0, 1, 1, 2, 0]), np.array([1, 0, 2, 2, 0])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3), vmp.Plate("F", 2):
            theta = vmp.Gamma("theta", 0.7, 1.0)
        with vmp.Plate("I", 3), vmp.Plate("F", 2):
            beta = vmp.Gamma("beta", 0.5, 0.8)
        with vmp.Plate("R", 5):
            vmp.Poisson("y", vmp.dot(theta[rows], beta[cols]), observed=rng.poisson(2.0, size=5) + 1,
                        exposure=rng.uniform(0.5, 2.0, size=5))
    return m, "y"


#: cases whose rate is a dot of Gammas: the allocation bound is convex in E[log theta], E[log beta]
ALLOCATING = {"poisson_dot", "poisson_dot_gathered"}


def beta_prior():
    with vmp.Model("c") as m:
        with vmp.Plate("N", 3):
            p = vmp.Beta("p", [0.5, 2.0, 3.0], [1.0, 0.7, 4.0])
            vmp.Binomial("x", [3, 0, 7], p, observed=[1, 0, 6])
    return m, "p"


def bernoulli_observed_masked():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("N", 5):
            p = vmp.Beta("p", rng.uniform(0.5, 2.0, size=5), 1.5)
            vmp.Bernoulli("x", p, observed=[1, 0, 0, 1, 1], mask=[True, True, False, True, True],
                          weights=rng.uniform(0.5, 2.0, size=5))
    return m, "x"


def binomial_gated():
    """A mixture of Binomial count vectors: x_nd ~ Bin(n_nd, p_{z_n, d})."""
    rng = _rng()
    trials = rng.integers(0, 6, size=(5, 3))
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2), vmp.Plate("D", 3):
            p = vmp.Beta("p", 1.0, 2.0)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            with vmp.Plate("D", 3):
                vmp.Binomial("x", trials, p[z, "K"], observed=rng.binomial(trials, 0.4),
                             weights=rng.uniform(0.5, 2.0, size=(5, 3)))
    return m, "x"


def bernoulli_gated():
    rng = _rng()
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3):
            p = vmp.Beta("p", 1.0, 1.0)
        with vmp.Plate("N", 6):
            z = vmp.Categorical("z", pi)
            vmp.Bernoulli("x", p[z], observed=rng.integers(0, 2, size=6))
    return m, "x"


def gated_by_bernoulli():
    """A latent Bernoulli as a 2-way gate: its indicator is (1 - p, p)."""
    rng = _rng()
    with vmp.Model("c") as m:
        rho = vmp.Beta("rho", 2.0, 3.0)
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
            tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 6):
            z = vmp.Bernoulli("z", rho)
            vmp.Normal("x", mu[z], tau[z], observed=rng.normal(size=6), weights=rng.uniform(size=6))
    return m, "x"


def _factorial(child: str):
    """x_nd ~ N(sum_k z_nk mu_dk, 1/tau), z_nk ~ Bernoulli(pi_k), pi_k ~ Beta."""
    rng = _rng()
    with vmp.Model("c") as m:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("K", 3):
            pi = vmp.Beta("pi", 1.0, 2.0)
        with vmp.Plate("D", 2), vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4), vmp.Plate("K", 3):
            z = vmp.Bernoulli("z", pi)
        with vmp.Plate("N", 4), vmp.Plate("D", 2):
            vmp.Normal("x", vmp.dot(z, mu), tau, observed=rng.normal(size=(4, 2)), weights=rng.uniform(size=(4, 2)))
    return m, child


def factorial_mixture():
    return _factorial("x")


def bernoulli_latent_beta():
    return _factorial("z")


def dot_bernoulli_constant():
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("N", 4), vmp.Plate("K", 3):
            z = vmp.Bernoulli("z", 0.3)
        with vmp.Plate("N", 4):
            vmp.Normal("x", vmp.dot(z, rng.normal(size=3)), 2.0, observed=rng.normal(size=4))
    return m, "x"



def normal_random_scale():
    """The variational Student-t: y_n ~ N(mu, 1 / (tau lam_n)), the constant-scaled tau for good measure."""
    with vmp.Model("c") as m:
        mu = vmp.Normal("mu", 0.0, 0.1)
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 4):
            lam = vmp.Gamma("lam", 1.5, 1.5)
            vmp.Normal("y", mu, lam * (2.0 * tau), observed=[0.3, -1.0, 2.0, 7.0])
    return m, "y"


def gaussian_wishart_random_scale():
    """The multivariate t: x_n ~ N(mu, (c_n Lambda)^-1)."""
    with vmp.Model("c") as m:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 3):
            c = vmp.Gamma("c", 2.0, 2.0)
            vmp.Gaussian("x", mu, c * lam, observed=_rng().normal(size=(3, 2)))
    return m, "x"


def gaussian_gated_random_scale():
    """A Student-t mixture (Svensen & Bishop 2005): x_n ~ N(mu_{z_n}, (u_n Lambda_{z_n})^-1)."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
            lam = vmp.Wishart("Lam", 3.0, np.eye(2))
        with vmp.Plate("N", 3):
            z = vmp.Categorical("z", pi)
            u = vmp.Gamma("u", 2.0, 2.0)
            vmp.Gaussian("x", mu[z], lam[z] * u, observed=_rng().normal(size=(3, 2)))
    return m, "x"


def normal_gated_random_scale():
    """Both sides gated by one z: y_n ~ N(mu, 1/(tau_{z_n} lam_{n z_n})) (z_k z_l = 0 for k != l)."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 3):
            z = vmp.Categorical("z", pi)
            with vmp.Plate("K", 2):
                lam = vmp.Gamma("lam", 1.5, 1.5)
            vmp.Normal("y", 0.5, tau[z] * lam[z], observed=[0.3, -1.0, 4.0])
    return m, "y"


def poisson_product_rate():
    """A Poisson rate s_n lam_k over two plates, s gathered."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("M", 2):
            s = vmp.Gamma("s", 2.0, 1.0)
        with vmp.Plate("K", 3):
            lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 4), vmp.Plate("K", 3):
            vmp.Poisson("y", s[[0, 1, 1, 0]] * lam, observed=rng.poisson(3.0, size=(4, 3)))
    return m, "y"


def exponential_product_rate():
    """An Exponential rate lam s_n, weighted."""
    rng = _rng()
    with vmp.Model("c") as m:
        lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 5):
            s = vmp.Gamma("s", 3.0, 3.0)
            vmp.Exponential("x", lam * s, observed=rng.exponential(size=5), weights=rng.uniform(size=5))
    return m, "x"


def gamma_product_rate():
    """A Gamma child's rate b s_n."""
    with vmp.Model("c") as m:
        b = vmp.Gamma("b", 2.0, 1.0)
        with vmp.Plate("N", 3):
            s = vmp.Gamma("s", 3.0, 2.0)
            t = vmp.Gamma("t", [0.7, 2.0, 5.0], b * s)
            vmp.Normal("y", 0.0, t, observed=[0.3, -1.0, 2.0])
    return m, "t"


def logit_bernoulli():
    """Logistic regression with an intercept: y_n ~ Bern(sigmoid(w . x_n + b0)), weighted, one masked."""
    rng = _rng()
    with vmp.Model("c") as m:
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        b0 = vmp.Normal("b0", 0.0, 1.0)
        with vmp.Plate("N", 5):
            vmp.Bernoulli("y", logit=vmp.dot(w, rng.normal(size=(5, 2))) + b0, observed=[1, 0, 0, 1, 1],
                          mask=[True, True, False, True, True], weights=rng.uniform(0.5, 2.0, size=5))
    return m, "y"


def logit_binomial_gathered():
    """Hierarchical binomial regression: y_n ~ Bin(n_n, sigmoid(mu[g_n]))."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("G", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 6):
            vmp.Binomial("y", [3, 0, 5, 2, 4, 1], logit=mu[[0, 1, 1, 2, 0, 2]], observed=[1, 0, 4, 2, 1, 0])
    return m, "y"


def logit_negative_binomial():
    rng = _rng()
    with vmp.Model("c") as m:
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("N", 5):
            vmp.NegativeBinomial("y", r=[0.5, 2.0, 3.0, 1.0, 7.5], logit=vmp.dot(w, rng.normal(size=(5, 2))),
                                 observed=[0, 3, 1, 8, 2], weights=rng.uniform(0.5, 2.0, size=5))
    return m, "y"


def negative_binomial_beta():
    with vmp.Model("c") as m:
        p = vmp.Beta("p", 2.0, 3.0)
        with vmp.Plate("N", 4):
            vmp.NegativeBinomial("y", p, r=[1.0, 2.5, 0.5, 4.0], observed=[0, 3, 1, 6])
    return m, "y"


def logit_gated():
    """A mixture of logits: y_n ~ Bern(sigmoid(mu_{z_n})), z_n ~ Cat(pi)."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Bernoulli("y", logit=mu[z], observed=[1, 0, 1, 1, 0])
    return m, "y"


def logit_dot_gathered():
    """Logistic matrix factorization: y_r ~ Bern(sigmoid(u[rows_r] . v[cols_r]))."""
    rows, cols = np.array([0, 1, 1, 2, 0]), np.array([1, 0, 2, 2, 0])
    with vmp.Model("c") as m:
        with vmp.Plate("U", 3):
            u = vmp.Gaussian("u", np.zeros(2), np.eye(2))
        with vmp.Plate("I", 3):
            v = vmp.Gaussian("v", np.zeros(2), np.eye(2))
        with vmp.Plate("R", 5):
            vmp.Bernoulli("y", logit=vmp.dot(u[rows], v[cols]), observed=[1, 0, 1, 1, 0])
    return m, "y"


def logit_stick_breaking_categorical():
    """Multiclass logistic regression over K = 3 classes: two logits dot(W_k, x_n)."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("classes", 2):
            w = vmp.Gaussian("W", np.zeros(2), np.eye(2))
        with vmp.Plate("N", 5):
            vmp.Categorical("y", logits=vmp.dot(w, rng.normal(size=(5, 2))), observed=[0, 2, 1, 2, 0],
                            mask=[True, True, True, False, True], weights=rng.uniform(0.5, 2.0, size=5))
    return m, "y"


def logit_stick_breaking_multinomial():
    rng = _rng()
    with vmp.Model("c") as m:
        b = vmp.Normal("b", 0.0, 1.0)
        with vmp.Plate("classes", 3):
            mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("N", 4):
            vmp.Multinomial("x", logits=mu + b, observed=rng.multinomial(5, [0.1, 0.2, 0.3, 0.4], size=4))
    return m, "x"


def _gaussian_chain(noise: str, inputs: bool = True):
    """x ~ GaussianMarkovChain(mu, P, A, Q, (B, u)) over two chains of lengths 4 and 3 padded to
    4, D = 2, learned A (rows), Q (Wishart, or Gamma per dimension), B (rows) and u; scalar
    observations y_t = c . x_t with one missing step and the padding masked."""
    rng = _rng()
    with vmp.Model("c") as m:
        mu = vmp.Gaussian("mu", np.zeros(2), np.eye(2))
        p = vmp.Wishart("P", 3.0, np.eye(2))
        with vmp.Plate("rows", 2):
            a = vmp.Gaussian("A", np.array([0.9, 0.0]), 4.0 * np.eye(2))
            b = vmp.Gaussian("B", np.zeros(3), np.eye(3)) if inputs else None
            q = vmp.Gamma("Q", 3.0, 1.0) if noise == "gamma" else None
        if noise == "wishart":
            q = vmp.Wishart("Q", 4.0, 0.5 * np.eye(2))
        with vmp.Plate("S", 2), vmp.Plate("T", 4):
            u = rng.normal(size=(2, 4, 3))
            x = vmp.GaussianMarkovChain("x", mu, p, a, q, inputs=(b, u) if inputs else None, lengths=[4, 3])
            mask = np.array([[True, False, True, True], [True, True, True, False]])
            vmp.Normal("y", vmp.dot(x, np.array([1.0, -0.5])), 2.0, observed=rng.normal(size=(2, 4)), mask=mask)
    return m


def gaussian_chain():
    return _gaussian_chain("wishart"), "x"


def gaussian_chain_ard():
    return _gaussian_chain("gamma"), "x"


def gaussian_chain_known_dynamics():
    """Constant time-varying A_t (T x D x D), constant noise and inputs B, a weighted chain."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("S", 2), vmp.Plate("T", 3):
            x = vmp.GaussianMarkovChain("x", np.array([0.5, -1.0]), np.array([[2.0, 0.3], [0.3, 1.0]]),
                                        0.5 * rng.normal(size=(3, 2, 2)),
                                        np.array([[2.0, 0.9], [0.9, 1.0]]), inputs=(rng.normal(size=(2, 1)),
                                                                                     rng.normal(size=(3, 1))),
                                        weights=np.array([[2.0] * 3, [0.5] * 3]))
            vmp.Gaussian("y", x, np.eye(2), observed=rng.normal(size=(2, 3, 2)))
    return m, "x"


def gaussian_chain_vector_child():
    """y_t ~ N(C x_t, R^-1) with a constant 3 x 2 map C and a Wishart R: the Steps view and A @ x."""
    rng = _rng()
    with vmp.Model("c") as m:
        r = vmp.Wishart("R", 4.0, np.eye(3))
        with vmp.Plate("T", 4):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), 0.9 * np.eye(2), 4.0 * np.eye(2))
            vmp.Gaussian("y", rng.normal(size=(3, 2)) @ x, r, observed=rng.normal(size=(4, 3)),
                         mask=np.array([True, True, False, True]))
    return m, "y"


def gaussian_chain_learned_map():
    """y_td ~ N(c_d . x_t, 1/r_d): a Gaussian node C over the output plate, Gamma r_d (Beal's VB LDS)."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("out", 3):
            c = vmp.Gaussian("C", np.zeros(2), np.eye(2))
            r = vmp.Gamma("r", 2.0, 1.0)
        with vmp.Plate("T", 4):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), 0.9 * np.eye(2), [4.0, 2.0])
            with vmp.Plate("out", 3):
                vmp.Normal("y", vmp.dot(c, x), r, observed=rng.normal(size=(4, 3)))
    return m, "y"


def gaussian_chain_random_map():
    """y_t ~ N(C x_t, R^-1) with C a Gaussian node over the output plate (C @ x) and a full Wishart
    R: the rows of C meet in the off-diagonal terms; one step missing."""
    rng = _rng()
    with vmp.Model("c") as m:
        r = vmp.Wishart("R", 4.0, np.array([[1.0, 0.3, 0.0], [0.3, 1.0, -0.2], [0.0, -0.2, 1.0]]))
        with vmp.Plate("out", 3):
            c = vmp.Gaussian("C", np.zeros(2), np.eye(2))
        with vmp.Plate("T", 4):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), 0.9 * np.eye(2), 4.0 * np.eye(2))
            vmp.Gaussian("y", c @ x, r, observed=rng.normal(size=(4, 3)), mask=np.array([True, True, False, True]))
    return m, "y"


def gaussian_chain_random_map_per_chain():
    """Two chains, each with its own rows C_s (plates "S", "out") under one Wishart R, weighted."""
    rng = _rng()
    with vmp.Model("c") as m:
        r = vmp.Wishart("R", 4.0, np.eye(3))
        with vmp.Plate("S", 2), vmp.Plate("out", 3):
            c = vmp.Gaussian("C", rng.normal(size=(2, 3, 2)), np.eye(2))
        with vmp.Plate("S", 2), vmp.Plate("T", 3):
            x = vmp.GaussianMarkovChain("x", np.zeros(2), np.eye(2), 0.9 * np.eye(2), 4.0 * np.eye(2))
            vmp.Gaussian("y", c @ x, r, observed=rng.normal(size=(2, 3, 3)), weights=rng.uniform(size=(2, 3)))
    return m, "y"


def gaussian_random_map_ard():
    """y_n ~ N(C x_n, diag(r)^-1): C a Gaussian node over the output plate, x plain Gaussians over
    a plate, one Gamma r_i per output; y latent with an observed child."""
    rng = _rng()
    with vmp.Model("c") as m:
        with vmp.Plate("out", 3):
            c = vmp.Gaussian("C", np.zeros(2), np.eye(2))
            r = vmp.Gamma("r", 2.0, 1.0)
        with vmp.Plate("N", 4):
            x = vmp.Gaussian("x", np.zeros(2), np.eye(2))
            y = vmp.Gaussian("y", c @ x, r)
            vmp.Gaussian("z", y, np.eye(3), observed=rng.normal(size=(4, 3)))
    return m, "y"


def _switching():
    """s ~ MarkovChain over 2 regimes; x ~ GaussianMarkovChain with A[s] and Q[s] (Gamma noise per
    regime and dimension): the switching state-space model."""
    rng = _rng()
    with vmp.Model("c") as m:
        pi0 = vmp.Dirichlet("pi0", np.ones(2))
        with vmp.Plate("K", 2):
            trans = vmp.Dirichlet("Z", np.ones(2))
        with vmp.Plate("rows", 2), vmp.Plate("K", 2):
            a = vmp.Gaussian("A", np.array([0.9, 0.0]), 4.0 * np.eye(2))
            q = vmp.Gamma("Q", 3.0, 1.0)
        with vmp.Plate("S", 2), vmp.Plate("T", 4):
            s = vmp.CategoricalMarkovChain("s", pi0, trans, lengths=[4, 3])
            x = vmp.GaussianMarkovChain("x", np.array([3.0, -2.0]), np.eye(2), a[s], q[s], lengths=[4, 3])
            vmp.Normal("y", vmp.dot(x, np.array([1.0, 0.5])), 2.0, observed=rng.normal(size=(2, 4)),
                       mask=np.array([[True, True, True, True], [True, True, True, False]]))
    return m


def gaussian_chain_switching():
    return _switching(), "x"


def normal_constant_scales():
    """AR(1) written by hand: x_t ~ N(0.9 x_{t-1}, 1) as Normals, and a Gaussian's mean a * w."""
    rng = _rng()
    with vmp.Model("c") as m:
        x0 = vmp.Normal("x0", 0.0, 1.0)
        x1 = vmp.Normal("x1", 0.9 * x0, 2.0)
        vmp.Normal("x2", x1 / 2.0 + 0.5, 3.0, observed=0.4)
        w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("N", 3):
            vmp.Normal("y", np.array([1.0, -2.0, 0.5]) * x1, 1.5, observed=rng.normal(size=3))
            vmp.Gaussian("z", np.array([2.0, -1.0]) * w, np.eye(2), observed=rng.normal(size=(3, 2)))
    return m, "y"


def normal_scaled_ar():
    m, _ = normal_constant_scales()
    return m, "x1"


def gaussian_elementwise_scale():
    m, _ = normal_constant_scales()
    return m, "z"


def _joint_data(n: int = 5, d: int = 2):
    return np.random.default_rng(3).normal(size=(n, d))


def gaussian_wishart_gated():
    """x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1) with (mu_k, Lambda_k) one GaussianWishart per component."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3):
            theta = vmp.GaussianWishart("theta", np.zeros(2), 0.5, 3.0, np.eye(2))
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", theta[z], observed=_joint_data(), weights=[1.0, 2.0, 0.5, 1.0, 3.0])
    return m, "x"


def gaussian_wishart_hidden_child():
    """A latent x_n ~ N(mu, Lambda^-1) (one GaussianWishart), observed through y_n ~ N(x_n, I)."""
    with vmp.Model("c") as m:
        theta = vmp.GaussianWishart("theta", np.ones(2), 2.0, 4.0, 0.5 * np.eye(2))
        with vmp.Plate("N", 4):
            x = vmp.Gaussian("x", theta)
            vmp.Gaussian("y", x, np.eye(2), observed=_joint_data(4))
    return m, "x"


def gaussian_wishart_prior():
    with vmp.Model("c") as m:
        with vmp.Plate("K", 2):
            theta = vmp.GaussianWishart("theta", [[0.0, 1.0], [2.0, -1.0]], [0.5, 2.0], [3.0, 5.0],
                                        np.array([[1.0, 0.3], [0.3, 2.0]]))
        with vmp.Plate("N", 3):
            vmp.Gaussian("x", theta[np.array([0, 1, 1])], observed=_joint_data(3))
    return m, "theta"


def normal_gamma_gated():
    """x_nd ~ N(mu_{z_n d}, 1/tau_{z_n d}), (mu, tau) one NormalGamma per component and dimension."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3), vmp.Plate("D", 2):
            theta = vmp.NormalGamma("theta", 0.0, 0.5, 2.0, 1.5)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            with vmp.Plate("D", 2):
                vmp.Normal("x", theta[z, "K"], observed=_joint_data())
    return m, "x"


def normal_gamma_hidden_child():
    with vmp.Model("c") as m:
        theta = vmp.NormalGamma("theta", 1.0, 2.0, 3.0, 2.0)
        with vmp.Plate("N", 4):
            x = vmp.Normal("x", theta)
            vmp.Normal("y", x, 4.0, observed=[0.5, 1.0, -0.3, 2.0])
    return m, "x"


def gaussian_normal_gamma_diagonal():
    """x_n ~ N(mu_{z_n}, diag(tau_{z_n})^-1), (mu_kd, tau_kd) NormalGamma over the D coordinates."""
    with vmp.Model("c") as m:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("K", 3), vmp.Plate("D", 2):
            theta = vmp.NormalGamma("theta", 0.0, 0.5, 2.0, 1.5)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", theta[z, "K"], observed=_joint_data())
    return m, "x"


def normal_gamma_prior():
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            theta = vmp.NormalGamma("theta", [0.0, 1.0, -2.0], [0.5, 1.0, 3.0], [1.0, 2.0, 4.0], [0.5, 1.0, 2.0])
        with vmp.Plate("N", 4):
            vmp.Normal("x", theta[np.array([0, 2, 1, 2])], observed=[0.1, -1.0, 0.4, 2.0])
    return m, "theta"


def _stick_categorical(last_stick_one: bool):
    """z_n ~ Cat(pi), pi stick-breaking with a Gamma concentration; x_n ~ N(mu_{z_n}, 1)."""
    with vmp.Model("c") as m:
        alpha = vmp.Gamma("alpha", 2.0, 1.0)
        pi = vmp.StickBreaking("pi", alpha, 4, last_stick_one=last_stick_one)
        with vmp.Plate("K", 4):
            mu = vmp.Normal("mu", 0.0, 0.1)
        with vmp.Plate("N", 5):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], 1.0, observed=[0.0, 3.0, -2.0, 0.5, 4.0])
    return m


def stick_breaking_categorical():
    return _stick_categorical(False), "z"


def stick_breaking_closed_categorical():
    return _stick_categorical(True), "z"


def stick_breaking_prior():
    return _stick_categorical(False), "pi"


def stick_breaking_closed_prior():
    return _stick_categorical(True), "pi"


def _stick_hmm(initial_closed: bool):
    """A chain whose initial distribution and transition rows are stick-breaking weights (one of
    them with v_K = 1)."""
    with vmp.Model("c") as m:
        pi0 = vmp.StickBreaking("pi0", 1.5, 3, last_stick_one=initial_closed)
        with vmp.Plate("states", 3):
            a = vmp.StickBreaking("A", 2.0, 3, last_stick_one=not initial_closed)
            mu = vmp.Normal("mu", 0.0, 0.5)
        with vmp.Plate("seq", 2), vmp.Plate("T", 4):
            z = vmp.CategoricalMarkovChain("z", initial=pi0, transition=a)
            vmp.Normal("y", mu[z], 1.0, observed=np.array([[0.0, 0.3, 2.0, 2.2], [1.9, 0.1, -0.2, 2.5]]))
    return m, "z"


def markov_chain_stick_breaking():
    return _stick_hmm(False)


def markov_chain_closed_stick_breaking():
    return _stick_hmm(True)


def _stick_multinomial(last_stick_one: bool):
    with vmp.Model("c") as m:
        r = vmp.Dirichlet("r", np.ones(2))
        with vmp.Plate("K", 2):
            p = vmp.StickBreaking("p", 1.0, 3, last_stick_one=last_stick_one)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", r)
            vmp.Multinomial("x", p[z], observed=np.array([[3, 1, 0], [0, 2, 5], [4, 0, 1], [1, 1, 1]]))
    return m, "x"


def multinomial_stick_breaking():
    return _stick_multinomial(False)


def multinomial_closed_stick_breaking():
    return _stick_multinomial(True)


def poisson_scaled_gate():
    """y_n ~ Poisson(2.5 lam_{z_n}) and (3 lam)[z]: a constant times a gated Gamma."""
    with vmp.Model("c") as m:
        r = vmp.Dirichlet("r", np.ones(2))
        with vmp.Plate("K", 2):
            lam = vmp.Gamma("lam", 2.0, 1.0)
        with vmp.Plate("N", 4):
            z = vmp.Categorical("z", r)
            vmp.Poisson("y", 2.5 * lam[z], observed=[0.0, 3.0, 7.0, 1.0])
            vmp.Poisson("w", (3.0 * lam)[z], observed=[1.0, 2.0, 9.0, 0.0])
    return m, "y"


def normal_scaled_gather():
    """y_i ~ N(0, 1 / (2 tau_{g_i})): a constant times a gathered Gamma."""
    with vmp.Model("c") as m:
        with vmp.Plate("G", 2):
            tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("N", 4):
            vmp.Normal("y", 0.0, 2.0 * tau[np.array([0, 1, 1, 0])], observed=[0.3, -1.0, 2.0, 0.1])
    return m, "y"


CASES = {f.__name__: f for f in [
    logit_bernoulli, logit_binomial_gathered, logit_negative_binomial, negative_binomial_beta, logit_gated,
    logit_dot_gathered, logit_stick_breaking_categorical, logit_stick_breaking_multinomial,
    factorial_mixture, bernoulli_latent_beta, dot_bernoulli_constant, gated_by_bernoulli,
    beta_prior, bernoulli_observed_masked, binomial_gated, bernoulli_gated,
    gaussian_wishart, gaussian_observed_weighted, normal_gamma, normal_scaled_precision,
    gaussian_scaled_wishart, gamma_rate, wishart_const, dirichlet_categorical, gated_gaussian,
    gated_normal_hidden_child, gated_categorical, gathered_categorical, dot_structured,
    dot_factorized, dot_plain, dot_constant_design, dot_constant_design_plated, dot_constant_design_gathered,
    dot_constant_design_shared,
    dot_constant_factorized, sum_dot_and_biases, gaussian_sum_mean,
    gaussian_ard, gaussian_ard_observed, gaussian_isotropic, gaussian_isotropic_observed, gate_outer_plate, normal_partially_observed_parent, categorical_barren_rows,
    markov_chain, markov_chain_weighted, markov_chain_gate,
    poisson_gamma, poisson_scaled_rate, poisson_gated, exponential_gamma, multinomial_dirichlet, multinomial_gated,
    poisson_dot, poisson_dot_gathered, normal_random_scale, gaussian_wishart_random_scale,
    gaussian_gated_random_scale, normal_gated_random_scale, poisson_product_rate, gamma_product_rate,
    exponential_product_rate, gaussian_chain, gaussian_chain_ard, gaussian_chain_known_dynamics,
    gaussian_chain_vector_child, gaussian_chain_learned_map, gaussian_chain_random_map,
    gaussian_chain_random_map_per_chain, gaussian_random_map_ard, gaussian_chain_switching, normal_constant_scales,
    normal_scaled_ar, gaussian_elementwise_scale, gaussian_wishart_gated, gaussian_wishart_hidden_child, gaussian_wishart_prior,
    normal_gamma_gated, normal_gamma_hidden_child, gaussian_normal_gamma_diagonal, normal_gamma_prior,
    stick_breaking_categorical, stick_breaking_closed_categorical, stick_breaking_prior, stick_breaking_closed_prior,
    markov_chain_stick_breaking, markov_chain_closed_stick_breaking, multinomial_stick_breaking,
    multinomial_closed_stick_breaking, poisson_scaled_gate, normal_scaled_gather,
]}
