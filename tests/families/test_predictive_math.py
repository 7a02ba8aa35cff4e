"""The family methods predictions use, against scipy and numerical integration."""
import numpy as np
import pytest
from scipy import integrate, stats

from vmp import families as fam


def test_gamma_inverse_mean_and_t_marginal():
    natural = fam.Gamma.natural_from(np.array([3.5, 0.8]), np.array([2.0, 1.5]))
    inv = fam.Gamma.inverse_mean(natural)
    assert inv[0] == pytest.approx(stats.invgamma(3.5, scale=2.0).mean())
    assert inv[1] == np.inf
    nu, s2 = fam.Gamma.t_marginal(natural)
    x = 1.3
    mixed = integrate.quad(lambda t: stats.norm(0, 1 / np.sqrt(t)).pdf(x) * stats.gamma(3.5, scale=0.5).pdf(t),
                           0, np.inf)[0]
    assert stats.t(nu[0], scale=np.sqrt(s2[0])).pdf(x) == pytest.approx(mixed, rel=1e-7)


def test_wishart_inverse_mean_and_t_marginal():
    v = np.array([[2.0, 0.3], [0.3, 0.5]])
    natural = fam.Wishart.natural_from(6.0, v)
    np.testing.assert_allclose(fam.Wishart.inverse_mean(natural), stats.invwishart(6.0, np.linalg.inv(v)).mean())
    nu, shape = fam.Wishart.t_marginal(natural)
    rng = np.random.default_rng(0)
    lams = stats.wishart(6.0, v).rvs(200_000, random_state=rng)
    x = np.array([0.4, -0.7])
    quad = np.einsum("i,nij,j->n", x, lams, x)
    mixed = np.mean(np.sqrt(np.linalg.det(lams)) / (2 * np.pi) * np.exp(-0.5 * quad))
    assert stats.multivariate_t(np.zeros(2), shape, df=nu).pdf(x) == pytest.approx(mixed, rel=0.01)


@pytest.mark.parametrize("family, natural, reference", [
    (fam.Normal, fam.Normal.natural_from(np.array([1.0, -2.0]), np.array([4.0, 0.25])),
     stats.norm([1.0, -2.0], [0.5, 2.0])),
    (fam.Gamma, fam.Gamma.natural_from(np.array([2.0]), np.array([3.0])), stats.gamma(2.0, scale=1 / 3.0)),
    (fam.Dirichlet, fam.Dirichlet.natural_from(np.array([1.0, 2.0, 5.0])), stats.dirichlet([1.0, 2.0, 5.0])),
    (fam.Gaussian, fam.Gaussian.natural_from(np.array([1.0, 0.0]), np.array([[2.0, 0.5], [0.5, 1.0]])),
     stats.multivariate_normal([1.0, 0.0], np.linalg.inv([[2.0, 0.5], [0.5, 1.0]]))),
    (fam.Categorical, fam.Categorical.natural_from(np.array([0.2, 0.8])), stats.multinomial(1, [0.2, 0.8])),
])
def test_marginals_have_the_family_mean_and_variance(family, natural, reference):
    m = family.marginal(natural)
    mean = reference.mean if isinstance(reference.mean, np.ndarray) else reference.mean()
    np.testing.assert_allclose(m.mean(), mean, rtol=1e-12, atol=1e-15)
    var = reference.cov if hasattr(reference, "cov") else reference.var()
    var = var() if callable(var) else var
    var = np.diagonal(var) if np.ndim(var) == 2 else var
    np.testing.assert_allclose(m.var(), var, rtol=1e-12)
    assert fam.Wishart.marginal(fam.Wishart.natural_from(3.0, np.eye(2))) is None
