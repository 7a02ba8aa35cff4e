"""benchmarks/tempering_fmm.py: its closed-form tempered partition function against numerical
integration, and the component matching it reports."""
from __future__ import annotations

import importlib.util
import itertools
import pathlib

import numpy as np
import pytest
from scipy import integrate, stats

PATH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "tempering_fmm.py"
spec = importlib.util.spec_from_file_location("tempering_fmm", PATH)
fmm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fmm)


@pytest.mark.parametrize("temperature", [1.0, 2.5, 40.0])
def test_log_partition_equals_numerical_integration(temperature):
    """log C(T) / N = log sum_z p(z)^(1/T) prod_d int N(x_d | (z.mu)_d, sigma^2)^(1/T) dx_d: the sum
    over the 2^K switch patterns by enumeration, each pixel's integral by quadrature (at two
    means: it does not depend on the mean, so neither does C(T) depend on mu)."""
    a = 1.0 / temperature

    def pixel(m):
        f = lambda x: stats.norm.pdf(x, m, fmm.SIGMA) ** a  # noqa: E731
        half = 40 * fmm.SIGMA * np.sqrt(temperature)
        return np.log(integrate.quad(f, m - half, m + half, points=[m], limit=200)[0])

    assert pixel(0.0) == pytest.approx(pixel(1.7), rel=1e-9)
    z = np.array(list(itertools.product([0.0, 1.0], repeat=fmm.K)))
    log_prior = a * (z * np.log(fmm.PI) + (1 - z) * np.log1p(-fmm.PI)).sum(1)
    expected = np.logaddexp.reduce(log_prior) + fmm.D * pixel(0.0)
    got = fmm.log_partition(np.array([temperature]), 3)[0] / 3
    assert got == pytest.approx(expected, rel=1e-8, abs=1e-8)


def test_recovered_counts_matched_components():
    truth = fmm.bars(np.random.default_rng(1))
    est = truth[::-1] + 0.05
    assert fmm.recovered(est, truth) == fmm.K
    est[2] += 0.2
    assert fmm.recovered(est, truth) == fmm.K - 1
