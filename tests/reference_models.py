"""Every ``vmp.models`` builder on small data (the same data at every call), for the comparisons
of the evaluator with the reference (tests/test_reference.py, tests/test_reference_fits.py)."""
from __future__ import annotations

import numpy as np

import vmp


def _blobs(n, d, k, seed):
    rng = np.random.default_rng(seed)
    centers = 4.0 * rng.normal(size=(k, d))
    return centers[rng.integers(k, size=n)] + rng.normal(size=(n, d))


def _ratings(r, m, n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, m, r), rng.integers(0, n, r), rng.normal(size=r)


def _sequences(seed, count=30, missing=False):
    rng = np.random.default_rng(seed)
    seqs = [rng.normal(size=(t, 2)) + 3.0 * (np.arange(t) % 2)[:, None] for t in rng.integers(8, 15, size=count)]
    if missing:
        seqs[0][2, 0] = np.nan
    return seqs


def _walk(seed, steps):
    """A random walk in noise with a gap."""
    rng = np.random.default_rng(seed)
    y = np.cumsum(rng.normal(0, 0.3, steps)) + rng.normal(0, 1, steps)
    y[5:8] = np.nan
    return y


def _masked(x, seed):
    return np.random.default_rng(seed).random(x.shape) > 0.15


def _builders():
    """Each ``vmp.models`` builder on small data; the large ones (N x K above terms.DIRECT)
    take the folded, plate-sum, coefficient and sparse-product paths."""
    from vmp import models as m

    def rng():
        return np.random.default_rng(0)

    x9000 = _blobs(9000, 3, 3, 1)
    x60 = _blobs(60, 3, 3, 2)
    inputs = rng().normal(size=(40, 3))
    y = inputs @ np.array([1.0, -2.0, 0.5]) + np.random.default_rng(1).normal(size=40)
    docs = np.repeat(np.arange(10), 6)
    labels = (y > 0).astype(float)
    return {
        "beta_bernoulli": lambda: m.beta_bernoulli(rng().integers(0, 2, 30), groups=np.arange(30) % 3),
        "beta_binomial": lambda: m.beta_binomial(rng().integers(0, 5, 30), 5, weights=np.linspace(0.5, 2, 30)),
        "factor_analysis": lambda: m.factor_analysis(x60, 2, mask=_masked(x60, 3)),
        "factorial_mixture": lambda: m.factorial_mixture(x60, 2, mask=_masked(x60, 4)),
        "gaussian_mixture": lambda: m.gaussian_mixture(x60, 3),
        "gaussian_mixture_masked": lambda: m.gaussian_mixture(x60, 3, mask=_masked(x60, 5)),
        "gaussian_mixture_large": lambda: m.gaussian_mixture(x9000, 4),
        "gaussian_mixture_factorized": lambda: m.gaussian_mixture(x60, 3, covariance="factorized", weights="dirichlet"),
        "gaussian_mixture_diag": lambda: m.gaussian_mixture(x60, 3, covariance="diag"),
        "gaussian_mixture_large_factorized": lambda: m.gaussian_mixture(x9000, 4, covariance="factorized"),
        "hierarchical_logistic_regression": lambda: m.hierarchical_logistic_regression(inputs, labels,
                                                                                       np.arange(40) % 3),
        "hmm": lambda: m.hmm(_sequences(6), 3),
        "hmm_missing": lambda: m.hmm(_sequences(7, missing=True), 2),
        "hmm_joint": lambda: m.hmm(_sequences(8, count=10), 2, covariance="joint"),
        "hmm_categorical": lambda: m.hmm([rng().integers(0, 4, t) for t in (9, 12, 7)], 2, emission="categorical"),
        "logistic_regression": lambda: m.logistic_regression(inputs, labels, ard=True),
        "local_level": lambda: m.local_level(_walk(13, 40)),
        "lda": lambda: m.lda(docs, rng().integers(0, 12, docs.size), 1.0 + np.arange(docs.size) % 3, 3, n_words=12),
        "linear_dynamical_system": lambda: m.linear_dynamical_system(_sequences(12, count=3), 2),
        "linear_dynamical_system_full": lambda: m.linear_dynamical_system(_sequences(12, count=3), 2,
                                                                          output_noise="full"),
        "linear_regression": lambda: m.linear_regression(inputs, y, ard=True),
        "matrix_factorization": lambda: m.matrix_factorization(*_ratings(200, 20, 25, 8), 3, n_users=20, n_items=25,
                                                               biases=True),
        "matrix_factorization_factorized": lambda: m.matrix_factorization(*_ratings(120, 10, 12, 9), 2, n_users=10,
                                                                          n_items=12, factorized=True),
        "matrix_factorization_large": lambda: m.matrix_factorization(*_ratings(6000, 40, 1400, 10), 5, n_users=40,
                                                                     n_items=1400),
        "mixture_of_regressions": lambda: m.mixture_of_regressions(inputs, y, 2),
        "multiclass_logistic_regression": lambda: m.multiclass_logistic_regression(inputs, np.arange(40) % 3, 3),
        "multinomial_mixture": lambda: m.multinomial_mixture(rng().poisson(3.0, size=(40, 5)), 3),
        "multinomial_mixture_large": lambda: m.multinomial_mixture(rng().poisson(3.0, size=(9000, 5)), 4),
        "negative_binomial_regression": lambda: m.negative_binomial_regression(inputs, rng().poisson(3.0, 40), 2.0),
        "poisson_factorization": lambda: m.poisson_factorization(np.arange(50) % 8, rng().integers(0, 9, 50),
                                                                 1 + rng().poisson(2.0, 50), 2, n_users=8, n_items=9),
        "robust_regression": lambda: m.robust_regression(inputs, y),
        "switching_lds": lambda: m.switching_lds(_walk(14, 30)[:, None], 2, 1, window=5),
    }


def shifted_mixture(n: int = 9000, k: int = 4, d: int = 2) -> vmp.Model:
    """A Gaussian mixture whose points are shifted by a latent h_n, x_n ~ N(mu[z_n] + h_n,
    Lambda[z_n]): the message to z folds the terms of x alone and adds those reading h_n."""
    x = _blobs(n, d, 3, 11)
    with vmp.Model("shifted_mixture") as model:
        pi = vmp.Dirichlet("pi", np.ones(k))
        with vmp.Plate("components", k):
            mu = vmp.Gaussian("mu", np.zeros(d), 0.01 * np.eye(d))
            lam = vmp.Wishart("Lam", d + 1.0, np.eye(d))
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            h = vmp.Gaussian("h", np.zeros(d), 10.0 * np.eye(d))
            vmp.Gaussian("x", mu[z] + h, lam[z], observed=x)
    return model


def scaled_mixture(n: int = 40, k: int = 2) -> vmp.Model:
    """Scaled gates and gathers: y_n ~ N(mu[z_n], 2.5 tau[z_n]) with a latent z, and
    w_n ~ N(0, tau[g_n] / 4) through a gather."""
    rng = np.random.default_rng(15)
    y = rng.normal(size=n) * np.repeat([0.5, 2.0], n // 2)
    with vmp.Model("scaled_mixture") as model:
        pi = vmp.Dirichlet("pi", np.ones(k))
        with vmp.Plate("components", k):
            mu = vmp.Normal("mu", 0.0, 0.1)
            tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Normal("y", mu[z], 2.5 * tau[z], observed=y)
            vmp.Normal("w", 0.0, tau[np.arange(n) % k] / 4.0, observed=rng.normal(size=n))
    return model


BUILDERS = _builders()
#: models beyond the builders: a fold beside terms that do not fold; scaled gates and gathers
OTHERS = {"shifted_mixture_large": shifted_mixture, "scaled_mixture": scaled_mixture}
