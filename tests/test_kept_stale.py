"""The structure caches of a bound factor (vmp/graph/compiled.py: a message kept as a
``ScaledProduct``, ``_fused``'s routes, ``_materialize``'s layouts, the kept ones, and
``terms._ROUTES``) never go stale: fits that change the data (``set_data``, same size, resized,
masked), reweight the messages (annealing, local tempering), restrict the contexts (Minibatch), resume into a new
model object, restart (n_init) or read the bound off a node's optimum (a mixture's selector)
give the same bits as the same fits with every one of those caches disabled."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import vmp
from vmp.factors import terms
from vmp.graph import compiled
from vmp.models import gaussian_mixture, matrix_factorization


class _Miss(dict):
    """A cache that never holds anything."""

    def get(self, key, default=None):
        return default

    def __setitem__(self, key, value):
        pass


class _Never(compiled.ScaledProduct):
    """A message is never kept as a ScaledProduct (the array itself is kept)."""

    def __new__(cls, y, s):
        return None


@pytest.fixture
def uncached(monkeypatch):
    """Every structure cache disabled: messages kept as arrays, routes and layouts formed at
    every call, fresh ones."""
    init = compiled.CompiledFactor.__init__

    def bare(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._routes, self._layouts = _Miss(), _Miss()

    monkeypatch.setattr(compiled.CompiledFactor, "__init__", bare)
    monkeypatch.setattr(compiled, "ScaledProduct", _Never)
    monkeypatch.setattr(compiled.CompiledFactor, "_ones", lambda self, shape: np.ones(shape))
    monkeypatch.setattr(terms, "_ROUTES", _Miss())


def _data(seed, r=6000):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 40, r), rng.integers(0, 1400, r), rng.normal(size=r)


def _mf(seed=5, r=6000):
    """Large enough that v's message (1,400 x 5 x 5) is kept as a ScaledProduct."""
    return matrix_factorization(*_data(seed, r), n_factors=5, n_users=40, n_items=1400)


def _snap(model, result) -> list:
    return [np.array(result.elbo)] + [np.array(a) for v in model.state.natural.values() for a in v]


def _refits(model) -> list:
    """One model object through new data, the same size and resized, then masked."""
    out = _snap(model, model.fit(iterations=6, tol=0, seed=1, progress=False))
    u, i, y = _data(7)
    model.set_data({"users": u, "items": i, "r": y})
    out += _snap(model, model.fit(iterations=5, tol=0, seed=2, progress=False))
    u, i, y = _data(8, r=5000)
    model.set_data({"users": u, "items": i, "r": y})
    out += _snap(model, model.fit(iterations=5, tol=0, seed=3, progress=False))
    mask = np.ones(5000, bool)
    mask[::7] = False
    model.set_data("r", y, mask=mask)
    return out + _snap(model, model.fit(iterations=5, tol=0, seed=4, progress=False))


def _annealed(model) -> list:
    return _snap(model, model.fit(iterations=8, tol=0, seed=1, progress=False,
                                  policies=[vmp.Annealing.linear(5.0, 4)]))


def _minibatch(model) -> list:
    return _snap(model, model.fit(method="stochastic", subsample=vmp.Minibatch("ratings", 1500),
                                  iterations=8, evaluate_every=2, seed=1, progress=False))


def _restarts(model) -> list:
    out = _snap(model, model.fit(iterations=4, tol=0, seed=9, progress=False))
    return out + _snap(model, model.fit(iterations=5, tol=0, seed=1, n_init=2, progress=False))


def _resumed(model, tmp_path) -> list:
    tmp_path.mkdir()
    model.fit(iterations=4, tol=0, seed=1, progress=False, checkpoint=tmp_path / "c.npz")
    fresh = _mf()
    return _snap(fresh, fresh.fit(iterations=8, tol=0, seed=1, progress=False, resume=tmp_path / "c.npz"))


def _mixture(_, **options) -> list:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-2, 1, (300, 2)), rng.normal(3, 1, (300, 2))])
    model = gaussian_mixture(x, 3)
    return _snap(model, model.fit(seed=2, progress=False, **(options or dict(iterations=10, tol=0))))


def _tempered(_) -> list:
    """Minibatches of a mixture, each datum at its own temperature (LocalTempering)."""
    return _mixture(_, method="stochastic", subsample=vmp.Minibatch("data", 100), iterations=8, evaluate_every=2,
                    policies=[vmp.LocalTempering([1.0, 2.0, 4.0])])


def _clamped(_) -> list:
    """A masked observed Gaussian with a child (its observed rows clamped), a fixed precision
    shared by the plate (``Shared``), from the prior's draws."""
    rng = np.random.default_rng(3)
    n, d = 600, 4
    x, mask = rng.normal(size=(n, d)), rng.random(n) > 0.2
    with vmp.Model("clamped") as model:
        mu = vmp.Gaussian("mu", np.zeros(d), np.eye(d))
        with vmp.Plate("N", n):
            xn = vmp.Gaussian("x", mu, np.eye(d) + 0.3, observed=x, mask=mask)
            vmp.Gaussian("y", xn, 2.0 * np.eye(d), observed=x + rng.normal(size=(n, d)))
    return _snap(model, model.fit(iterations=8, tol=0, seed=1, init="prior", progress=False))


def _labelled(_) -> list:
    """Minibatches of a mixture with 20 of 400 labels observed (the selector clamped)."""
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 400)
    known = np.arange(400) < 20
    with vmp.Model("semi") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            mu, tau = vmp.Normal("mu", 0.0, 0.01), vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("N", 400):
            z = vmp.Categorical("z", pi, observed=np.where(known, labels, 0), mask=known)
            vmp.Normal("x", mu[z], tau[z], observed=np.where(labels == 0, -3.0, 3.0) + rng.normal(size=400))
    return _snap(model, model.fit(method="stochastic", subsample=vmp.Minibatch("N", 100), iterations=8,
                                  evaluate_every=2, seed=1, progress=False))


FITS = {"set_data": _refits, "annealing": _annealed, "minibatch": _minibatch, "n_init": _restarts,
        "resume": _resumed, "mixture": _mixture, "clamp": _clamped, "labelled": _labelled,
        "tempering": _tempered}


def _run(name, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = FITS[name]
        return fit(_mf(), tmp_path) if name == "resume" else fit(_mf())


@pytest.mark.parametrize("name", sorted(FITS))
def test_cached_fits_are_the_uncached_bits(name, tmp_path, request):
    cached = _run(name, tmp_path / "a")
    request.getfixturevalue("uncached")
    plain = _run(name, tmp_path / "b")
    assert len(cached) == len(plain)
    for a, b in zip(cached, plain):
        np.testing.assert_array_equal(a, b)


def test_ones_are_kept_per_shape_not_per_rank():
    """``_ones`` answers each shape with ones of that shape (minibatches of different sizes
    read the same factor), read-only, the last ONES_KEPT shapes kept."""
    f = compiled.CompiledFactor(_mf()["r"])
    shapes = [(6000,), (1500,), (1499,), (40, 3), (3, 40), (6000,)]
    for shape in shapes:
        ones = f._ones(shape)
        assert ones.shape == shape and not ones.flags.writeable
        np.testing.assert_array_equal(ones, 1.0)
    assert f._ones((6000,)) is ones and len(f._ones_kept) == compiled.ONES_KEPT
