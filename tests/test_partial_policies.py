"""A partially observed node under a policy that integrates the data (global tempering,
Mandt et al. 2016 eq. (9)): the node stays latent at its masked entries during and after the
fit. Checked against q(x)'s closed form given the other factors (Winn & Bishop eq. (5) pinned
at the observed coordinates)."""
from __future__ import annotations

import warnings

import numpy as np

import vmp
from models import gaussian_mixture


def test_tempering_keeps_a_partially_observed_node_latent():
    """After a Tempering fit, x is still partially observed (not flipped to observed by the
    tempered normalizer's compiled conditional), ``model.elbo()`` runs, and q(x)'s mean at a
    masked coordinate is Lambda_mm^-1 (h_m - Lambda_mo x_o) with Lambda = sum_k r_nk E[Lambda_k],
    h = sum_k r_nk E[Lambda_k] E[mu_k] (the factor's weight 1/T scales both)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 2))
    x[:, 0] += 4.0 * rng.integers(2, size=100)
    x[3, 1] = x[10, 0] = np.nan
    model = gaussian_mixture(x, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(iterations=6, tol=0, seed=1, policies=[vmp.Tempering([1.0, 2.0])])
    assert not model["x"].observed
    assert np.isfinite(model.elbo())
    s = model.state.moments
    r, mu, lam = s["z"][0], s["mu"][0], s["Lambda"][0]
    for n, m in ((3, 1), (10, 0)):
        o = 1 - m
        prec = np.einsum("k,kij->ij", r[n], lam)
        h = np.einsum("k,kij,kj->i", r[n], lam, mu)
        expected = (h[m] - prec[m, o] * x[n, o]) / prec[m, m]
        np.testing.assert_allclose(model["x"].mean[n, m], expected, rtol=1e-10)
        assert model["x"].mean[n, o] == x[n, o]


def test_resume_gives_the_bits_of_an_uninterrupted_fit(tmp_path):
    """6 sweeps, a checkpoint and 6 resumed sweeps give every q of 12 sweeps bit for bit: the
    resumed moments of the partially observed x are formed as a sweep forms them
    (``LatentRows.moments``, at the latent rows), not by the family over every row (2e-14 off at
    the latent entries, which the next sweeps carry into every node)."""
    rng = np.random.default_rng(0)
    x = 4.0 * rng.normal(size=(3, 3))[rng.integers(3, size=300)] + rng.normal(size=(300, 3))
    for r in rng.choice(300, 15, replace=False):
        x[r, rng.integers(3)] = np.nan
    whole = gaussian_mixture(x, 3)
    full = whole.fit(iterations=12, tol=0, seed=1)
    gaussian_mixture(x, 3).fit(iterations=6, tol=0, seed=1, checkpoint=tmp_path / "c.npz")
    part = gaussian_mixture(x, 3)
    rest = part.fit(iterations=12, tol=0, seed=1, resume=tmp_path / "c.npz")
    assert np.array_equal(full.elbo, rest.elbo)
    for name, natural in whole.state.natural.items():
        assert all(np.array_equal(u, v) for u, v in zip(natural, part.state.natural[name])), name
