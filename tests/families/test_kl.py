"""Family.kl against textbook closed forms (independent of the families' log-normalizers)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma, gammaln, multigammaln

from vmp.families import Beta, Categorical, Dirichlet, Gamma, Gaussian, Normal, Wishart

RNG = np.random.default_rng(0)
PLATES = (2, 3)


def _spd(d: int) -> np.ndarray:
    m = RNG.normal(size=PLATES + (d, d))
    return m @ np.swapaxes(m, -1, -2) + d * np.eye(d)


def _gaussian_kl(m0, s0, m1, s1):
    """KL(N(m0, S0) || N(m1, S1)) = 1/2 [tr(S1^-1 S0) + (m1 - m0)^T S1^-1 (m1 - m0) - D + log|S1|/|S0|]."""
    p1 = np.linalg.inv(s1)
    dm = m1 - m0
    return 0.5 * (np.trace(p1 @ s0, axis1=-2, axis2=-1) + np.einsum("...i,...ij,...j->...", dm, p1, dm)
                  - m0.shape[-1] + np.linalg.slogdet(s1)[1] - np.linalg.slogdet(s0)[1])


def _gamma_kl(a0, b0, a1, b1):
    """Shape a, rate b: (a0 - a1) psi(a0) - lnG(a0) + lnG(a1) + a1 (ln b0 - ln b1) + a0 (b1 - b0) / b0."""
    return (a0 - a1) * digamma(a0) - gammaln(a0) + gammaln(a1) + a1 * (np.log(b0) - np.log(b1)) + a0 * (b1 - b0) / b0


def _dirichlet_kl(a, b):
    a0 = a.sum(-1)
    return (gammaln(a0) - gammaln(a).sum(-1) - gammaln(b.sum(-1)) + gammaln(b).sum(-1)
            + ((a - b) * (digamma(a) - digamma(a0)[..., None])).sum(-1))


def _beta_kl(a0, b0, a1, b1):
    def log_b(a, b):
        return gammaln(a) + gammaln(b) - gammaln(a + b)
    return (log_b(a1, b1) - log_b(a0, b0) + (a0 - a1) * digamma(a0) + (b0 - b1) * digamma(b0)
            + (a1 - a0 + b1 - b0) * digamma(a0 + b0))


def _wishart_kl(n0, v0, n1, v1):
    """KL(W(n0, V0) || W(n1, V1)) = -n1/2 log|V1^-1 V0| + n0/2 (tr(V1^-1 V0) - D)
    + log Gamma_D(n1/2) - log Gamma_D(n0/2) + (n0 - n1)/2 psi_D(n0/2)."""
    d = v0.shape[-1]
    r = np.linalg.solve(v1, v0)
    psi_d = sum(digamma(0.5 * (n0 - j)) for j in range(d))
    return (-0.5 * n1 * np.linalg.slogdet(r)[1] + 0.5 * n0 * (np.trace(r, axis1=-2, axis2=-1) - d)
            + multigammaln(0.5 * n1, d) - multigammaln(0.5 * n0, d) + 0.5 * (n0 - n1) * psi_d)


def _cases():
    d, k = 3, 4
    m0, m1 = RNG.normal(size=PLATES + (d,)), RNG.normal(size=PLATES + (d,))
    s0, s1 = _spd(d), _spd(d)
    yield "Gaussian", Gaussian, dict(mean=m0, precision=np.linalg.inv(s0)), dict(mean=m1, precision=np.linalg.inv(s1)), \
        _gaussian_kl(m0, s0, m1, s1)
    mu0, mu1, t0, t1 = RNG.normal(size=PLATES), RNG.normal(size=PLATES), RNG.gamma(2.0, size=PLATES), RNG.gamma(2.0, size=PLATES)
    yield "Normal", Normal, dict(mean=mu0, precision=t0), dict(mean=mu1, precision=t1), \
        _gaussian_kl(mu0[..., None], (1 / t0)[..., None, None], mu1[..., None], (1 / t1)[..., None, None])
    a0, b0, a1, b1 = (RNG.gamma(3.0, size=PLATES) for _ in range(4))
    yield "Gamma", Gamma, dict(shape=a0, rate=b0), dict(shape=a1, rate=b1), _gamma_kl(a0, b0, a1, b1)
    yield "Beta", Beta, dict(alpha=a0, beta=b0), dict(alpha=a1, beta=b1), _beta_kl(a0, b0, a1, b1)
    al0, al1 = RNG.gamma(2.0, size=PLATES + (k,)), RNG.gamma(2.0, size=PLATES + (k,))
    yield "Dirichlet", Dirichlet, dict(alpha=al0), dict(alpha=al1), _dirichlet_kl(al0, al1)
    p0, p1 = RNG.dirichlet(np.ones(k), size=PLATES), RNG.dirichlet(np.ones(k), size=PLATES)
    yield "Categorical", Categorical, dict(probabilities=p0), dict(probabilities=p1), (p0 * np.log(p0 / p1)).sum(-1)
    n0, n1, v0, v1 = d + 2.5, d + 0.7, _spd(d), _spd(d)
    yield "Wishart", Wishart, dict(dof=n0, scale=v0), dict(dof=n1, scale=v1), _wishart_kl(n0, v0, n1, v1)


CASES = list(_cases())


@pytest.mark.parametrize("name, family, p, q, expected", CASES, ids=[c[0] for c in CASES])
def test_kl_is_the_textbook_closed_form(name, family, p, q, expected):
    """KL(q_p || q_q) per plate element, positive, 0 from a distribution to itself; with the
    moments given or not."""
    eta, other = family.natural_from(**p), family.natural_from(**q)
    kl = family.kl(eta, other)
    assert kl.shape == PLATES
    assert np.all(kl > 0)
    np.testing.assert_allclose(kl, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(family.kl(eta, other, family.moments(eta)), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(family.kl(eta, eta), 0.0, atol=1e-10)
