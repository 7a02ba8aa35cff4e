"""A partially observed node (NaN coordinates, ``missing.Clamp``) through what reads its q beyond a
plain batch fit: a policy that integrates the data (global tempering, Mandt et al. 2016 eq. (9)),
a checkpoint and resume, a saved fit loaded into a fresh model. References: q(x)'s closed form
given the other factors (Winn & Bishop eq. (5) pinned at the observed coordinates), the
uninterrupted fit's bits."""
from __future__ import annotations

import warnings

import numpy as np

import vmp
from tests.helpers import factorized_mixture


def test_tempering_keeps_a_partially_observed_node_latent():
    """After a Tempering fit, x is still partially observed (not flipped to observed by the
    tempered normalizer's compiled conditional), ``model.elbo()`` runs, and q(x)'s mean at a
    masked coordinate is Lambda_mm^-1 (h_m - Lambda_mo x_o) with Lambda = sum_k r_nk E[Lambda_k],
    h = sum_k r_nk E[Lambda_k] E[mu_k] (the factor's weight 1/T scales both)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 2))
    x[:, 0] += 4.0 * rng.integers(2, size=100)
    x[3, 1] = x[10, 0] = np.nan
    model = factorized_mixture(x, 2)
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
    whole = factorized_mixture(x, 3)
    full = whole.fit(iterations=12, tol=0, seed=1)
    factorized_mixture(x, 3).fit(iterations=6, tol=0, seed=1, checkpoint=tmp_path / "c.npz")
    part = factorized_mixture(x, 3)
    rest = part.fit(iterations=12, tol=0, seed=1, resume=tmp_path / "c.npz")
    assert np.array_equal(full.elbo, rest.elbo)
    for name, natural in whole.state.natural.items():
        assert all(np.array_equal(u, v) for u, v in zip(natural, part.state.natural[name])), name


def test_a_saved_fit_loads_into_a_fresh_model_with_nan_data(tmp_path):
    """``vmp.load(path, model)`` into a model not yet compiled: x is partially observed (hidden)
    only once compiled, so its saved q had no family to read it (KeyError 'x'); q(x) and its mean
    come back with the bits of the fit."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    x[:, 0] += 4.0 * rng.integers(2, size=50)
    x[3, 1] = x[9, 0] = np.nan
    model = factorized_mixture(x, 2)
    model.fit(iterations=5, tol=0, seed=1).save(tmp_path / "r.npz")
    fresh = factorized_mixture(x, 2)
    vmp.load(tmp_path / "r.npz", fresh)
    for name, natural in model.state.natural.items():
        assert all(np.array_equal(u, v) for u, v in zip(natural, fresh.state.natural[name])), name
    assert np.array_equal(fresh["x"].mean, model["x"].mean)


def test_the_moments_of_x_hold_the_data_at_its_observed_coordinates():
    """``model['x'].moments`` reads the data's statistics at the observed coordinates whichever
    way the fit formed q's moments: at the latent rows only (``LatentRows.moments``) or over every
    row (every row has a NaN; its raw moments read E[x_o^2] = x_o^2 + 0.06 there)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 2))
    x[:, 0] += 4.0 * rng.integers(2, size=30)
    x[np.arange(30), rng.integers(2, size=30)] = np.nan
    for data in (x, np.where(np.arange(30)[:, None] < 25, np.nan_to_num(x, nan=1.0), x)):
        model = factorized_mixture(data, 2)
        model.fit(iterations=3, tol=0, seed=0)
        first, second = (np.asarray(m) for m in model["x"].moments)
        seen = ~np.isnan(data)
        np.testing.assert_array_equal(first[seen], data[seen])
        both = seen[:, :, None] & seen[:, None, :]
        np.testing.assert_array_equal(second[both], (data[:, :, None] * data[:, None, :])[both])
