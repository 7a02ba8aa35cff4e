"""Padded steps of ``models.hmm`` are absent (weight 0, ``missing.Clamp.absent``): with NaN entries
the latent rows are the sequences with a NaN, not those with padding; the padded fit equals the
fit of the same sequences declared unpadded, one chain per sequence; nothing is imputed, counted
missing or drawn at a padded step."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import _checks, hmm
from vmp.families.gaussian import Gaussian
from vmp.inference.engine import Engine
from vmp.inference.state import State

LENGTHS = (7, 4, 6, 5)


def _sequences(seed: int = 0) -> list[np.ndarray]:
    """Four sequences of 2-vectors from three states: NaN coordinates in sequences 0 and 3, a
    whole step NaN in sequence 2, sequence 1 (padded) complete."""
    rng = np.random.default_rng(seed)
    means = np.array([[-3.0, 0.0], [0.0, 3.0], [3.0, 0.0]])
    seqs = [means[rng.integers(3, size=n)] + 0.7 * rng.normal(size=(n, 2)) for n in LENGTHS]
    seqs[0][[1, 5], [0, 1]] = np.nan
    seqs[2][3] = np.nan
    seqs[3][4, 1] = np.nan
    return seqs


def _separate(seqs: list[np.ndarray]) -> vmp.Model:
    """The HMM of ``hmm(seqs, 3)`` declared by hand without padding: one time plate and one chain
    per sequence, sharing pi0, A, mu and Lambda (the builder's priors)."""
    x, seen = _checks.missing("hmm", "sequences", np.concatenate(seqs))
    center, cov = _checks.moments(x, seen)
    prec, d = np.linalg.inv(cov), x.shape[1]
    with vmp.Model("separate") as model:
        pi0 = vmp.Dirichlet("pi0", alpha=np.ones(3))
        with vmp.Plate("states", 3):
            a = vmp.Dirichlet("A", alpha=np.ones(3))
            mu = vmp.Gaussian("mu", mean=center, precision=1e-2 * prec)
            lam = vmp.Wishart("Lambda", dof=float(d), scale=prec / d)
        for s, y in enumerate(seqs):
            with vmp.Plate(f"time{s}", len(y)):
                z = vmp.CategoricalMarkovChain(f"z{s}", initial=pi0, transition=a)
                mask = ~np.isnan(y)
                vmp.Gaussian(f"y{s}", mean=mu[z], precision=lam[z], observed=np.where(mask, y, 0.0),
                             mask=None if mask.all() else mask)
    return model


def _transfer(padded: vmp.Model, separate: vmp.Model, engine: Engine) -> State:
    """``padded``'s q as a state of ``separate``: the globals as they are, chain s and its
    emissions' q at the sequence's steps."""
    changes = {}
    for name in ("pi0", "A", "mu", "Lambda"):
        changes[name] = padded.state.natural[name]
    for s, n in enumerate(LENGTHS):
        changes[f"z{s}"] = tuple(a[s, :n] for a in padded.state.natural["z"])
        if not separate[f"y{s}"].observed:
            changes[f"y{s}"] = tuple(a[s, :n] for a in padded.state.natural["y"])
    state = State()
    for name, natural in changes.items():
        state = state.updated({name: (natural, engine.moments(separate[name], natural))})
    return state


def _compare(padded: vmp.Model, separate: vmp.Model, engines: tuple) -> None:
    assert engines[0].elbo(padded.state) == pytest.approx(engines[1].elbo(separate.state), rel=1e-12, abs=1e-10)
    for name in ("pi0", "A", "mu", "Lambda"):
        for u, v in zip(padded.state.natural[name], separate.state.natural[name]):
            np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-10)
    for s, n in enumerate(LENGTHS):
        np.testing.assert_allclose(padded["z"].mean[s, :n], separate[f"z{s}"].mean, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(padded.state.moments["z"][1][s, :n - 1], separate.state.moments[f"z{s}"][1][:n - 1],
                                   rtol=1e-10, atol=1e-12)
        if not separate[f"y{s}"].observed:
            np.testing.assert_allclose(padded["y"].mean[s, :n], separate[f"y{s}"].mean, rtol=1e-10, atol=1e-12)


def test_padded_fit_equals_the_sequences_declared_without_padding():
    """From a common q (the padded model after 3 sweeps), the bound, q(pi0), q(A), q(mu),
    q(Lambda), each chain's marginals and pair marginals and each sequence's imputed coordinates
    agree to 1e-10 after each of 4 further sweeps (each node updated in the same order): the
    padded steps add nothing to the bound, to the chain's messages or to any posterior."""
    seqs = _sequences()
    padded, separate = hmm(seqs, 3), _separate(seqs)
    padded.fit(iterations=3, tol=0, seed=0)
    engines = Engine(padded), Engine(separate)
    separate.state = _transfer(padded, separate, engines[1])
    _compare(padded, separate, engines)
    chains = [f"z{s}" for s in range(len(LENGTHS))]
    emissions = [f"y{s}" for s in range(len(LENGTHS)) if not separate[f"y{s}"].observed]
    for _ in range(4):
        for a, b in [("pi0", ["pi0"]), ("A", ["A"]), ("mu", ["mu"]), ("Lambda", ["Lambda"]), ("z", chains),
                     ("y", emissions)]:
            engines[0].update(padded[a])
            for name in b:
                engines[1].update(separate[name])
        _compare(padded, separate, engines)


def test_latent_rows_are_the_sequences_with_a_nan():
    """Sequences 0, 2 and 3 have a NaN; 1, 2 and 3 are padded. Only 0, 2 and 3 are latent rows,
    and a sweep's pin sees their rows only."""
    model = hmm(_sequences(), 3)
    model.compile()
    latent = model["y"].clamp.latent()
    assert latent is not None
    assert latent.rows.tolist() == [0, 2, 3]
    seen = []
    pin = Gaussian.pin

    def counting(natural, observed, x):
        seen.append(np.shape(observed)[0])
        return pin(natural, observed, x)

    fit = model.batch(seed=0)
    fit.run(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Gaussian, "pin", staticmethod(counting))
        fit.run(2)
    assert seen and set(seen) == {3}


def test_padded_steps_are_not_missing_imputed_or_drawn():
    """missing() counts the 3 NaN coordinates in 3 of the 22 real steps (and the NaN step, barren);
    impute returns those 3 coordinates and the NaN step's 2; draws of y are NaN at the padded
    steps and nowhere else."""
    seqs = _sequences()
    model = hmm(seqs, 3)
    model.fit(iterations=3, tol=0, seed=0)
    assert model.missing() == ["y: 5 masked coordinates in 3 of 22 elements inferred",
                               "y: 1 of 22 elements barren (pruned: no observed descendant)"]
    assert model.impute("y").mean.shape == (5,)
    draws = model["y"].sample(2, 0)
    padded = np.arange(max(LENGTHS)) >= np.array(LENGTHS)[:, None]
    assert np.array_equal(np.isnan(draws).any(axis=(0, 3)), padded)


def test_the_summary_of_y_reads_the_real_steps():
    """The summary's min/mean/max of q(y)'s mean leave the padded steps out (they held the fill
    value 0, which all the data lie away from)."""
    seqs = [s + 10.0 for s in _sequences()]
    model = hmm(seqs, 3)
    model.fit(iterations=3, tol=0, seed=0)
    node = model["y"]
    present = np.asarray(node.mean)[np.arange(max(LENGTHS)) < np.array(LENGTHS)[:, None]]
    assert present.min() > 5.0
    assert node.describe(np.asarray(node.mean)) == (f"mean shape {node.mean.shape}: min {present.min():.3g}, "
                                                    f"mean {present.mean():.3g}, max {present.max():.3g}")


@pytest.mark.parametrize("emission", ["gaussian", "categorical", "poisson"])
def test_padding_without_nan_imputes_nothing(emission):
    """Without a missing value there is nothing to impute, padding or not."""
    rng = np.random.default_rng(1)
    seqs = [rng.poisson(3.0, size=n) for n in LENGTHS]
    model = hmm(seqs if emission != "gaussian" else [s.astype(float) for s in seqs], 3, emission=emission)
    model.fit(iterations=2, tol=0, seed=0)
    assert model.impute("y").mean.shape[0] == 0
    assert model.missing() == []


def test_the_weighted_data_factor_keeps_its_tables():
    """The padded emissions have a weight array: the data factor's weight (its complete
    elements times it, ``partial.Split.weight``) is one array while the weight is, so the
    strategies' memos (the folded table of the complete rows, read by the messages to mu, Lambda
    and the bound) hold within a sweep, as without padding; the fit is the reference
    evaluator's."""
    from vmp.graph.leaves import Context
    from vmp.inference.engine import Engine

    rng = np.random.default_rng(2)
    seqs = [rng.normal(size=(n, 2)) + 3.0 * (np.arange(n) % 2)[:, None] for n in rng.integers(50, 101, size=200)]
    for s in seqs[:5]:
        s[3, 0] = np.nan
    fits = []
    for strategies in (None, ()):
        model = hmm(seqs, 3)  # enough rows for the folded tables (terms.DIRECT)
        model.compile(strategies=strategies)
        fit = model.batch(seed=0)
        fit.run(4)
        fits.append(model.state)
    engine = Engine(model)
    f = engine.factors["y"]
    split, w = engine.q["y"].split(engine, f, Context(state=model.state)), engine.factor_weight(f)
    assert w is not None and split.weight(w) is split.weight(w)
    np.testing.assert_array_equal(split.weight(w), split.complete * w)
    for name in fits[1].natural:
        for a, b in zip(fits[0].natural[name], fits[1].natural[name]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(b)))))


def _leaf(data: np.ndarray, weights=None) -> vmp.Model:
    """mu ~ N(0, I); x_n ~ N(mu, Lambda^-1) (a user-declared leaf with NaN coordinates)."""
    lam = np.array([[2.0, 0.6], [0.6, 1.0]])
    with vmp.Model("leaf") as model:
        mu = vmp.Gaussian("mu", mean=np.zeros(2), precision=np.eye(2))
        with vmp.Plate("data", data.shape[0]):
            vmp.Gaussian("x", mean=mu, precision=lam, observed=np.nan_to_num(data), mask=~np.isnan(data),
                         weights=weights)
    return model


def test_a_weight_0_element_with_some_coordinates_observed_is_absent():
    """An element of weight 0 with one coordinate masked and one observed is not in the model,
    as one with both masked: the fit equals that of the data without those rows (it stopped
    with 'left the valid Gaussian domain': its latent coordinate had no factor), it is not
    imputed and its draws are NaN."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 2)) + 1.0
    x[1] = np.nan
    x[2, 0] = np.nan
    x[4, 1] = np.nan
    w = np.ones(8)
    w[[1, 2]] = 0.0
    weighted, kept = _leaf(x, w), _leaf(np.delete(x, [1, 2], axis=0))
    a = weighted.fit(iterations=5, tol=0, seed=0)
    b = kept.fit(iterations=5, tol=0, seed=0)
    np.testing.assert_allclose(a.elbo, b.elbo, rtol=1e-12)
    np.testing.assert_allclose(weighted["mu"].mean, kept["mu"].mean, rtol=1e-12)
    np.testing.assert_allclose(weighted.impute("x").mean, kept.impute("x").mean, rtol=1e-12)
    assert np.isnan(weighted["x"].sample(2, rng=0)[:, [1, 2]]).all()
