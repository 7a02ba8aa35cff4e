"""The Polya-Gamma family against numerical integration of its density series (Polson, Scott &
Windle 2013, eq. (2)) and its sampler against the density.

The table tests (test_every_family.py) check the moments against finite differences of A, the
first moment of the draws and the KL by Monte Carlo; here the density itself is the reference:
it integrates to 1, its mean and variance are the family's, the family's KL and entropy (relative
to PG(b, 0)) are integrals of q log(q / q'), and the draws fall into bins with the probabilities
the density gives them.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from vmp.families import PolyaGamma
from vmp.families._polya_gamma import log_density

CASES = [(1.0, 0.0), (1.0, 1.5), (2.5, 0.7), (4.0, 3.0), (0.6, 2.0)]


def _pdf(b, c):
    return lambda x: np.exp(log_density(x, b, c)) if x > 0 else 0.0


def _integral(f, b):
    return integrate.quad(f, 0.0, 5.0 + b, limit=400, epsabs=1e-13, epsrel=1e-11)[0]


@pytest.mark.parametrize("b,c", CASES)
def test_density_integrates_to_one_with_the_familys_mean_and_variance(b, c):
    f = PolyaGamma.of(b)
    eta = f.natural_from(np.array(c))
    pdf = _pdf(b, c)
    assert _integral(pdf, b) == pytest.approx(1.0, abs=1e-9)
    mean = _integral(lambda x: x * pdf(x), b)
    assert mean == pytest.approx(float(f.moments(eta)[0]), rel=1e-9)
    # Var[omega] = d^2 A / d eta^2, by central differences of the family's E[omega]
    h = 1e-5
    var = (f.moments((eta[0] + h,))[0] - f.moments((eta[0] - h,))[0]) / (2 * h)
    assert _integral(lambda x: (x - mean) ** 2 * pdf(x), b) == pytest.approx(float(var), rel=1e-6)


@pytest.mark.parametrize("b,c,c2", [(1.0, 1.5, 0.3), (2.5, 0.0, 2.0), (4.0, 3.0, 1.0)])
def test_kl_and_entropy_are_integrals_of_the_density(b, c, c2):
    """KL(PG(b, c) || PG(b, c')) = int q log(q / q'); the entropy relative to PG(b, 0) is
    -KL(q || PG(b, 0))."""
    f = PolyaGamma.of(b)
    eta, other = f.natural_from(np.array(c)), f.natural_from(np.array(c2))
    p, q = _pdf(b, c), _pdf(b, c2)
    ratio = lambda x: p(x) * (log_density(x, b, c) - log_density(x, b, c2)) if x > 0 else 0.0  # noqa: E731
    assert float(f.kl(eta, other)) == pytest.approx(_integral(ratio, b), rel=1e-8, abs=1e-11)
    base = lambda x: p(x) * (log_density(x, b, c) - log_density(x, b, 0.0)) if x > 0 else 0.0  # noqa: E731
    assert float(f.entropy(eta)) == pytest.approx(-_integral(base, b), rel=1e-8, abs=1e-11)
    assert _integral(q, b) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("b,c", [(1.0, 1.5), (3.0, 0.5), (2.5, 2.0)])
def test_draws_fall_in_bins_with_the_densitys_probabilities(b, c):
    """A chi-square test of 20,000 draws over 12 bins of equal probability under the density
    (p > 1e-3 of a correct sampler failing); exact for integer b (Devroye), the gamma series for
    the fraction of b = 2.5."""
    f = PolyaGamma.of(b)
    x = f.sample(f.natural_from(np.array(c)), np.random.default_rng(1), size=(20000,))
    grid = np.linspace(1e-6, 5.0 + b, 40001)
    cdf = integrate.cumulative_trapezoid(np.exp(log_density(grid, b, c)), grid, initial=0.0)
    assert cdf[-1] == pytest.approx(1.0, abs=1e-6)
    edges = np.interp(np.linspace(0, 1, 13)[1:-1], cdf / cdf[-1], grid)
    counts = np.bincount(np.searchsorted(edges, x), minlength=12)
    assert stats.chisquare(counts).pvalue > 1e-3
    draws_var = x.var()
    h = 1e-5
    eta = f.natural_from(np.array(c))[0]
    var = (f.moments((eta + h,))[0] - f.moments((eta - h,))[0]) / (2 * h)
    assert abs(draws_var - var) < 5 * var * np.sqrt(2.0 / x.size) * 2


def test_moments_near_a_zero_tilt_are_continuous():
    """The series of E[omega] near eta = 0 joins the closed forms on both sides (eta <= 0 and the
    cos branch above 0), within 1e-12."""
    f = PolyaGamma.of(2.0)
    for eta in (-2e-4, -9.9e-5, 9.9e-5, 2e-4):
        h = 1e-7
        fd = (f.log_normalizer((np.array(eta + h),)) - f.log_normalizer((np.array(eta - h),))) / (2 * h)
        assert float(f.moments((np.array(eta),))[0]) == pytest.approx(float(fd), rel=1e-7)
    assert float(f.moments((np.array(0.0),))[0]) == 0.5
