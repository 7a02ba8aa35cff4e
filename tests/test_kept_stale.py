"""The strategies' caches (vmp/graph/strategies/) never go stale: fits that change the data
(``set_data``, same size, resized, masked), reweight the messages (annealing, local tempering),
restrict the contexts (Minibatch), resume into a new model object, restart (n_init) or read the
bound off a node's optimum (a mixture's selector) give the numbers of the same fits through the
reference evaluator alone (``model.compile(strategies=())``), to 1e-12."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import vmp
from vmp.models import gaussian_mixture, matrix_factorization

#: the evaluator's strategies for the fit being run (None: the default; (): the reference)
_STRATEGIES: list = [None]


def _compiled(model):
    if _STRATEGIES[0] is not None:
        model.compile(strategies=_STRATEGIES[0])
    return model


def _data(seed, r=6000):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 40, r), rng.integers(0, 1400, r), rng.normal(size=r)


def _mf(seed=5, r=6000):
    """Large enough that v's message (1,400 x 5 x 5) is kept as a ScaledProduct."""
    return _compiled(matrix_factorization(*_data(seed, r), n_factors=5, n_users=40, n_items=1400))


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
    model = _compiled(gaussian_mixture(x, 3))
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
    _compiled(model)
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
    _compiled(model)
    return _snap(model, model.fit(method="stochastic", subsample=vmp.Minibatch("N", 100), iterations=8,
                                  evaluate_every=2, seed=1, progress=False))


FITS = {"set_data": _refits, "annealing": _annealed, "minibatch": _minibatch, "n_init": _restarts,
        "resume": _resumed, "mixture": _mixture, "clamp": _clamped, "labelled": _labelled,
        "tempering": _tempered}


def _run(name, tmp_path, strategies):
    _STRATEGIES[0] = strategies
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = FITS[name]
            return fit(_mf(), tmp_path) if name == "resume" else fit(_mf())
    finally:
        _STRATEGIES[0] = None


@pytest.mark.parametrize("name", sorted(FITS))
def test_cached_fits_are_the_reference_fits(name, tmp_path):
    cached = _run(name, tmp_path / "a", None)
    plain = _run(name, tmp_path / "b", ())
    assert len(cached) == len(plain)
    for a, b in zip(cached, plain):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))
