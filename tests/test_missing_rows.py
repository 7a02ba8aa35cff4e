"""A partially observed node pays for its latent rows only (``Clamp.latent``): a batch sweep forms
q's natural parameters, the pin, the moments, the validity check and the entropy at the rows
with a masked coordinate; complete rows hold the pinned constant and the data's statistics.
Checked against the same fit with every row latent (the path with ``Clamp.latent`` None), and by
counting the rows the family's pin and moments see."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.helpers import factorized_mixture
from vmp.families.gaussian import Gaussian
from vmp.graph.leaves import moments_of
from vmp.graph.missing import Clamp


def _data(n=400, d=4, k=3, partial=12, seed=0, empty=0):
    rng = np.random.default_rng(seed)
    truth = 4.0 * rng.normal(size=(k, d))
    x = truth[rng.integers(k, size=n)] + rng.normal(size=(n, d))
    rows = rng.choice(n, size=partial + empty, replace=False)
    for r in rows[:partial]:
        x[r, rng.choice(d, size=rng.integers(1, d), replace=False)] = np.nan
    x[rows[partial:]] = np.nan
    return x, np.sort(rows)


def _fit(data, every_row: bool, **opts):
    model = factorized_mixture(data, 3)
    if every_row:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Clamp, "latent", lambda self: None)
            res = model.fit(iterations=15, tol=0, seed=1, **opts)
    else:
        res = model.fit(iterations=15, tol=0, seed=1, **opts)
    return model, res


@pytest.mark.parametrize("empty", [0, 3])
def test_latent_rows_only_equal_every_row_latent(empty):
    """The bound at every sweep, q(x) (natural parameters at the latent rows, the moments the
    factors read, the parameters) and q(mu), q(z) agree to 1e-12 with the fit that forms every
    row (rows with every coordinate missing are barren: ``empty``)."""
    data, _ = _data(empty=empty)
    fast, a = _fit(data, False)
    slow, b = _fit(data, True)
    np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-12)
    rows = fast.nodes["x"].clamp.latent().rows
    for u, v in zip(fast.state.natural["x"], slow.state.natural["x"]):
        np.testing.assert_allclose(u[rows], v[rows], rtol=1e-12, atol=1e-12)
    for u, v in zip(moments_of(fast["x"]), moments_of(slow["x"])):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast["x"].mean, slow["x"].mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast["x"].parameters["covariance"], slow["x"].parameters["covariance"],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast["mu"].mean, slow["mu"].mean, rtol=1e-12)
    np.testing.assert_allclose(fast.state.moments["z"][0], slow.state.moments["z"][0], rtol=1e-12, atol=1e-13)


def test_complete_rows_are_not_refactorized_or_pinned():
    """After the first sweep (the initial q and the complete rows' constant, formed once), every
    pin and every moment computation of x's q covers the latent rows only (12 of 400), not the
    388 complete ones; the complete rows' natural parameters are the pinned constant
    (PIN x, -PIN/2 I) and their moments the data's statistics."""
    data, rows = _data()
    model = factorized_mixture(data, 3)
    seen: dict = {"pin": [], "moments": []}
    pin, moments = Gaussian.pin, Gaussian.moments.__func__

    def spy_pin(natural, observed, x):
        seen["pin"].append(np.shape(observed)[0])
        return pin(natural, observed, x)

    def spy_moments(cls, natural):
        seen["moments"].append(np.shape(natural[0])[:1])
        return moments(cls, natural)

    fit = model.batch(seed=1)
    fit.run(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Gaussian, "pin", staticmethod(spy_pin))
        mp.setattr(Gaussian, "moments", classmethod(spy_moments))
        fit.run(3)
    assert seen["pin"] and set(seen["pin"]) == {rows.size}
    assert (rows.size,) in seen["moments"] and (400,) not in seen["moments"]
    x = model["x"]
    eta1, eta2 = model.state.natural["x"]
    complete = np.setdiff1d(np.arange(400), rows)
    assert np.array_equal(eta1[complete], 2 * np.pi * np.e * data[complete])
    assert np.array_equal(eta2[complete], np.broadcast_to(-np.pi * np.e * np.eye(4), (complete.size, 4, 4)))
    xs, xx = moments_of(x)
    assert np.array_equal(xs[complete], data[complete])
    assert np.array_equal(xx[complete], data[complete][:, :, None] * data[complete][:, None, :])


def test_the_factor_reads_complete_rows_as_data():
    """In a batch sweep the factor of x sends z, mu and Lambda its complete rows through the
    factor with x observed (``partial.Split``: the data's folded products) and only the latent
    rows (12 of 400) through the factor with x latent: every message to z from a factor whose
    child x is latent covers 12 rows, none 400."""
    from vmp.graph.compiled import CompiledFactor

    data, rows = _data()
    model = factorized_mixture(data, 3)
    fit = model.batch(seed=1)
    fit.run(1)
    seen: dict = {"latent": [], "data": 0}
    messages = CompiledFactor.messages

    def spy(self, node, *args, **kwargs):
        out = messages(self, node, *args, **kwargs)
        if self.child.name == "x" and node.name == "z":
            if self.child.observed:
                seen["data"] += 1
            else:
                seen["latent"].append(np.shape(out[0])[0])
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CompiledFactor, "messages", spy)
        fit.run(3)
    assert seen["data"] == 3 and seen["latent"] == [rows.size] * 3


def _two_plates(every_row: bool):
    """x over plates (A, B): rows of A hold complete elements, partial ones and one element with
    no coordinate observed (barren) beside live ones."""
    rng = np.random.default_rng(5)
    a, b, d = 6, 5, 2
    x = rng.normal(size=(a, b, d))
    seen = np.ones((a, b, d), bool)
    seen[1, 2, 0] = seen[4, 0, 1] = False
    seen[4, 3] = False
    with vmp.Model() as model:
        mu = vmp.Gaussian("mu", np.zeros(d), np.eye(d))
        lam = vmp.Wishart("lam", dof=3.0, scale=np.eye(d))
        with vmp.Plate("A", a):
            with vmp.Plate("B", b):
                vmp.Gaussian("x", mu, lam, observed=np.where(seen, x, np.nan), mask=seen)
    with pytest.MonkeyPatch.context() as mp:
        if every_row:
            mp.setattr(Clamp, "latent", lambda self: None)
        res = model.fit(iterations=10, tol=0, seed=0)
    return model, res


def test_rows_over_several_plates():
    """The rows are along the outermost plate; complete and barren elements inside a latent row
    count once (the data factor weights the complete rows only)."""
    fast, a = _two_plates(False)
    slow, b = _two_plates(True)
    assert list(fast.nodes["x"].clamp.latent().rows) == [1, 4]
    np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-12)
    np.testing.assert_allclose(fast["mu"].mean, slow["mu"].mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fast["lam"].mean, slow["lam"].mean, rtol=1e-12)
    for u, v in zip(moments_of(fast["x"]), moments_of(slow["x"])):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


def test_every_row_partial_keeps_the_every_row_path():
    """With no complete row there is nothing to skip: ``Clamp.latent`` is None and the fit is the
    every-row one, bit for bit."""
    rng = np.random.default_rng(3)
    data = rng.normal(size=(60, 3))
    data[np.arange(60), rng.integers(3, size=60)] = np.nan
    fast, a = _fit(data, False)
    slow, b = _fit(data, True)
    assert fast.nodes["x"].clamp.latent() is None
    assert np.array_equal(a.elbo, b.elbo)
    assert all(np.array_equal(u, v) for u, v in zip(fast.state.natural["x"], slow.state.natural["x"]))


@pytest.mark.parametrize("executor", [vmp.Chunked(size=37), None])
def test_chunked_and_resume_read_the_latent_rows(tmp_path, executor):
    """Chunked batch sweeps give Serial's bound; 5 sweeps, a checkpoint and 5 resumed sweeps
    give the bits of 10 (the bound, q(x) and x's relative change: the resumed q is full arrays)."""
    data, _ = _data(n=200, partial=9)
    if executor is not None:
        a = factorized_mixture(data, 3).fit(iterations=8, tol=0, seed=0)
        b = factorized_mixture(data, 3).fit(iterations=8, tol=0, seed=0, executor=executor)
        np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-12)
        return
    whole = factorized_mixture(data, 3)
    full = whole.fit(iterations=10, tol=0, seed=0)
    factorized_mixture(data, 3).fit(iterations=5, tol=0, seed=0, checkpoint=tmp_path / "c.npz")
    part = factorized_mixture(data, 3)
    rest = part.fit(iterations=10, tol=0, seed=0, resume=tmp_path / "c.npz")
    assert np.array_equal(full.elbo, rest.elbo)
    assert np.array_equal(full.history["change"]["x"], rest.history["change"]["x"])
    assert all(np.array_equal(u, v) for u, v in zip(whole.state.natural["x"], part.state.natural["x"]))


def test_take_rows_of_an_array_by_columns():
    """The latent rows' Context reads E[z], which the softmax leaves by columns: ``take_rows``
    indexes it without copying it whole, the same values as ``np.take``."""
    from vmp.graph.data import take_rows

    a = np.asfortranarray(np.random.default_rng(0).normal(size=(50, 4, 3)))
    rows = np.array([1, 7, 8, 30])
    for axis in range(3):
        idx = rows[rows < a.shape[axis]]
        assert np.array_equal(take_rows(a, idx, axis), np.take(a, idx, axis=axis))


def _gathers(monkeypatch) -> list:
    """Spy: one entry per ``Filled`` whose arrays over every row are formed."""
    from vmp.graph.partial import Filled

    formed, gathered = [], Filled.gathered

    def spy(self):
        if self._full is None:
            formed.append(self)
        return gathered(self)

    monkeypatch.setattr(Filled, "gathered", spy)
    return formed


def test_a_sweep_writes_the_latent_rows_only(monkeypatch):
    """q(x) and its moments over every row are held as the latent rows plus the complete rows'
    constant (``Filled``): a batch fit (the validity check, the bound each sweep, the relative
    change) never forms an array over every row; reading the node does, once."""
    from vmp.graph.partial import Filled

    data, _ = _data(n=400, partial=12)
    formed = _gathers(monkeypatch)
    model = factorized_mixture(data, 3)
    model.fit(iterations=6, tol=0, seed=1)
    rows = model.nodes["x"].clamp.latent().rows
    natural, moments = model.state.natural["x"], model.state.moments["x"]
    assert isinstance(natural, Filled) and isinstance(moments, Filled)
    assert [a.shape[0] for a in natural.sub + moments.sub] == [rows.size] * 4
    assert formed == []
    mean = model["x"].mean
    assert len(formed) == 1 and formed[0] is moments  # E[x], formed at the first read
    model["x"].mean
    assert len(formed) == 1
    assert np.array_equal(mean[rows], moments.sub[0]) and np.array_equal(np.delete(mean, rows, 0),
                                                                           np.delete(data, rows, 0))


def test_relative_change_of_the_latent_rows_is_the_full_one():
    """The history's change of x (summed over the latent rows, the complete rows a constant)
    is ||lambda_6 - lambda_5|| / ||lambda_5|| over the full arrays to 1e-14; from full arrays
    (a resumed or initial q) it has the bits it has from a ``Filled``; a complete row that
    moved counts; a q of another layout takes ``steps.relative_change``'s full sums."""
    from vmp.inference.steps import relative_change

    data, _ = _data(n=400, partial=12)
    five, six = factorized_mixture(data, 3), factorized_mixture(data, 3)
    five.fit(iterations=5, tol=0, seed=1)
    res = six.fit(iterations=6, tol=0, seed=1)
    old, new = five.state.natural["x"], six.state.natural["x"]
    full = [(np.asarray(a), np.asarray(b)) for a, b in zip(old, new)]
    want = np.sqrt(sum(np.sum((b - a) ** 2) for a, b in full) / sum(np.sum(a ** 2) for a, _ in full))
    assert res.history["change"]["x"][-1] == pytest.approx(want, rel=1e-14)
    plain = tuple(np.array(a) for a in old)
    assert new.relative_change(plain) == new.relative_change(old)
    moved = tuple(np.array(a) for a in old)
    complete = np.flatnonzero(new.latent.complete)[7]
    moved[0][complete] += 0.5
    full = [(np.asarray(a), np.asarray(b)) for a, b in zip(moved, new)]
    want = np.sqrt(sum(np.sum((b - a) ** 2) for a, b in full) / sum(np.sum(a ** 2) for a, _ in full))
    assert new.relative_change(moved) == pytest.approx(want, rel=1e-14)
    one = tuple(np.array(a)[:1] for a in old)  # a q of another layout: steps' sums over full arrays
    assert new.relative_change(one) == relative_change(one, tuple(np.array(a) for a in new))


def test_a_filled_q_reads_as_its_arrays(tmp_path):
    """Where a State's q goes (State.copy, a saved file, pickle, a deep copy, the kept good
    state in the fit's extra), a ``Filled`` is the tuple of its full arrays."""
    import copy
    import pickle

    from vmp.inference.state import State

    data, _ = _data(n=200, partial=9)
    model = factorized_mixture(data, 3)
    model.fit(iterations=4, tol=0, seed=0)
    state = model.state
    full = tuple(np.array(a) for a in state.natural["x"])
    assert full[0].shape == data.shape
    for twin in (state.copy(), State.load(_saved(state, tmp_path))[0]):
        assert all(np.array_equal(a, b) for a, b in zip(twin.natural["x"], full))
    for out in (pickle.loads(pickle.dumps(state.natural["x"])), copy.deepcopy(state.natural["x"])):
        assert type(out) is tuple and all(np.array_equal(a, b) for a, b in zip(out, full))
    assert state.copy() == state


def _saved(state, tmp_path):
    path = tmp_path / "s.npz"
    state.save(path)
    return path


def test_a_filled_q_prints_compares_and_concatenates_as_its_arrays():
    """``model['x'].natural``/``.moments`` (and ``result.state``) are a ``Filled`` whose tuple
    slots are placeholders: printing, comparing and concatenating read the arrays (they read
    ``(None, None)``: two different q compared equal)."""
    data, _ = _data(n=60, partial=4)
    model = factorized_mixture(data, 3)
    model.fit(iterations=2, tol=0, seed=0)
    filled = model["x"].moments
    full = tuple(np.array(a) for a in filled)
    assert "None" not in repr(filled) and repr(filled) == repr(full)
    assert all(np.array_equal(a, b) for a, b in zip(filled + (), full)) and len(() + filled) == 2
    before = model.state.natural["x"]
    model.fit(iterations=3, tol=0, seed=0)
    with pytest.raises(ValueError):  # as for two tuples of different arrays: not silently True
        bool(before == model.state.natural["x"])
