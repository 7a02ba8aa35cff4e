"""Stochastic VMP at scale: every default costs O(minibatch); estimates of the bound and their
standard errors; consistent initialization of the globals; observed data out of core."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import lda
from tests.helpers import factorized_mixture
from vmp.inference import steps
from vmp.inference.engine import Engine


def _blobs(n, seed=0, spread=6.0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [spread, 0.0], [0.0, spread]])
    return centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2))


def _corpus(docs=120, seed=0):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(30, 0.1), size=3)
    d, w, c = [], [], []
    for doc in range(docs):
        theta = rng.dirichlet(np.full(3, 0.3))
        words = rng.choice(30, size=40, p=theta @ topics)
        uniq, counts = np.unique(words, return_counts=True)
        d += [doc] * uniq.size
        w += uniq.tolist()
        c += counts.tolist()
    return np.array(d), np.array(w), np.array(c, float)


def _fitted(case):
    if case == "mixture":
        model, plate = factorized_mixture(_blobs(3000), 3), "data"
    else:
        model, plate = lda(*_corpus(), 3, n_words=30), "documents"
    fit = model.stochastic(subsample=vmp.Minibatch(plate, 50, evaluation_size=300 if case == "mixture" else 40),
                           iterations=30, seed=1, progress=False)
    fit.run()
    return model, fit


@pytest.mark.parametrize("case", ["mixture", "lda"])
def test_subsample_estimate_agrees_with_the_full_bound_within_its_standard_error(case):
    model, fit = _fitted(case)
    engine, plan, state = fit.engine, fit.plan, fit.state
    estimate, stderr = steps.subsample_bound(engine, plan, state, plan.evaluation)
    full = engine.elbo(steps.optimize_locals(engine, plan, state), cached=False)
    assert stderr > 0
    assert abs(estimate - full) < 3 * stderr, (estimate, full, stderr)
    exact, zero = steps.subsample_bound(engine, plan, state, np.arange(plan.plate.size))
    # the whole plate gives the bound itself (LDA's locals stop at their tolerance, 1e-4)
    assert zero == 0 and exact == pytest.approx(full, rel=1e-9 if case == "mixture" else 1e-3)


@pytest.mark.parametrize("case", ["mixture", "lda"])
def test_subsample_estimate_is_unbiased_for_the_data_term(case):
    """Over draws of the evaluation subsample, the mean estimate is the full bound."""
    model, fit = _fitted(case)
    engine, plan, state = fit.engine, fit.plan, fit.state
    full = engine.elbo(steps.optimize_locals(engine, plan, state), cached=False)
    rng = np.random.default_rng(5)
    n = plan.evaluation.size
    draws = [steps.subsample_bound(engine, plan, state, np.sort(rng.choice(plan.plate.size, n, replace=False)))[0]
             for _ in range(300)]
    se = np.std(draws, ddof=1) / np.sqrt(len(draws))
    assert abs(np.mean(draws) - full) < 4 * se, (np.mean(draws), full, se)


def test_fit_records_estimates_labelled_and_the_full_bound_on_request():
    model = factorized_mixture(_blobs(2000), 3)
    svi = dict(method="stochastic", subsample=vmp.Minibatch("data", 40, evaluation_size=500), iterations=20,
               evaluate_every=5, seed=0, progress=False)
    est = model.fit(**svi)
    ev = est.history["evaluations"]
    assert np.all(ev["stderr"] > 0) and "estimate from 500 of 2000" in est.extra["bound"]
    assert est.history["bound_estimate"].shape == (20,) and np.all(np.isfinite(est.history["bound_estimate"]))
    full = factorized_mixture(_blobs(2000), 3).fit(**svi, evaluate="full")
    assert np.all(full.history["evaluations"]["stderr"] == 0) and full.extra["bound"] == "exact"
    for a, b in zip(est.state.natural["mu"], full.state.natural["mu"]):
        np.testing.assert_array_equal(a, b)  # how the bound is evaluated changes no step
    assert np.all(np.abs(ev["elbo"] - full.history["evaluations"]["elbo"]) < 4 * ev["stderr"])
    assert "z" not in est.state.natural, "a minibatch fit keeps no local q over the whole plate"
    with pytest.raises(vmp.GraphError, match="infer_locals"):
        model["z"].mean
    assert model.infer_locals()["z"].mean.shape == (2000, 3)
    with pytest.raises(vmp.VMPError, match="evaluate"):
        model.fit(**dict(svi, evaluate="sometimes"))


class CountingRows:
    """Observed data that count the rows read (an out-of-core array seen from outside)."""

    def __init__(self, x):
        self.x, self.read = x, 0
        self.shape, self.dtype = x.shape, x.dtype

    def __getitem__(self, index):
        out = self.x[index]
        self.read += np.asarray(out).reshape(-1, *self.shape[1:]).shape[0]
        return out


def _rows_read(n: int) -> tuple[int, int]:
    """(rows read at declaration, rows read by a default 50-step minibatch fit) of n points."""
    data = CountingRows(_blobs(n))
    with vmp.Model("lazy") as model:
        pi = vmp.Dirichlet("pi", np.ones(3))
        with vmp.Plate("components", 3):
            mu = vmp.Gaussian("mu", np.zeros(2), 0.01 * np.eye(2))
            lam = vmp.Wishart("Lambda", 2, np.eye(2))
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mu[z], lam[z], observed=data)
    checked = data.read
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 100), iterations=50, progress=False)
    assert not result.diverged and result.history["evaluations"]["iteration"].size == 6
    return checked, data.read - checked


def test_a_default_stochastic_fit_reads_o_of_minibatch_rows():
    """Initialization, steps and the default evaluations read as many rows at N = 200,000 as at
    N = 20,000: nothing but the declaration's check touches every row."""
    small, large = _rows_read(20_000), _rows_read(200_000)
    assert small[0] == 20_000 and large[0] == 200_000
    assert small[1] == large[1] < 200_000


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_option_b_with_minibatches_reaches_the_bound_of_option_a(seed):
    """Two well-separated clusters, K = 4 (the case where option (b) collapsed every component)."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal([-5, 0], 1.0, size=(2000, 2)), rng.normal([5, 0], 1.0, size=(2000, 2))])
    bounds = {}
    for update in ("per-node", "global"):
        model = factorized_mixture(x, 4)
        model.fit(method="stochastic", subsample=vmp.Minibatch("data", 100), update=update, iterations=150,
                  seed=seed, evaluate_every=0, progress=False)
        engine = Engine(model)
        bounds[update] = engine.elbo(model.infer_locals().state, cached=False)
    assert abs(bounds["global"] - bounds["per-node"]) < 0.01 * abs(bounds["per-node"]), bounds


def _memmap(tmp_path, x):
    path = tmp_path / "x.f8"
    mm = np.memmap(path, dtype=float, mode="w+", shape=x.shape)
    mm[:] = x
    mm.flush()
    return np.memmap(path, dtype=float, mode="r", shape=x.shape)


def test_memmap_and_zarr_data_fit_to_the_bits_of_the_same_data_in_memory(tmp_path):
    zarr = pytest.importorskip("zarr")
    x = _blobs(3000)
    z = zarr.create_array(store=str(tmp_path / "x.zarr"), shape=x.shape, chunks=(500, 2), dtype="f8")
    z[:] = x
    svi = dict(method="stochastic", subsample=vmp.Minibatch("data", 50, evaluation_size=300), iterations=15,
               evaluate_every=5, seed=4, progress=False)
    results = {}
    for label, data in (("memory", x), ("memmap", _memmap(tmp_path, x)), ("zarr", z)):
        model = factorized_mixture(x, 3)  # the builder's priors from the data in memory
        model["x"]._set_data(data, None)
        results[label] = model.fit(**svi)
        assert (label == "memory") or not isinstance(model["x"].data, np.ndarray) or isinstance(model["x"].data, np.memmap)
    for label in ("memmap", "zarr"):
        for name, parts in results["memory"].state.natural.items():
            for a, b in zip(parts, results[label].state.natural[name]):
                np.testing.assert_array_equal(a, b, err_msg=f"{label}: {name}")
        np.testing.assert_array_equal(results["memory"].elbo, results[label].elbo)


def test_hdf5_data_are_read_by_rows(tmp_path):
    h5py = pytest.importorskip("h5py")
    x = _blobs(1000)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["x"] = x
    with h5py.File(tmp_path / "x.h5", "r") as f:
        model = factorized_mixture(x, 3)
        model["x"]._set_data(f["x"], None)
        lazy = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50, evaluation_size=200),
                         iterations=5, seed=1, progress=False)
    ref = factorized_mixture(x, 3).fit(method="stochastic", subsample=vmp.Minibatch("data", 50, evaluation_size=200),
                                     iterations=5, seed=1, progress=False)
    np.testing.assert_array_equal(lazy.state.natural["mu"][0], ref.state.natural["mu"][0])


def test_local_step_converges_each_document_on_its_own():
    """Per-datapoint convergence: a document's locals after a minibatch's local step are those it
    gets alone (its iterations stop when its own topic proportions stop moving), and the step
    reads fewer tokens than iterating every document as long as the slowest."""
    model = lda(*_corpus(docs=40), 3, n_words=30)
    fit = model.stochastic(subsample=vmp.Minibatch("documents", 8), iterations=5, seed=0, progress=False)
    fit.run()
    engine, plan, state = fit.engine, fit.plan, fit.state
    rows = np.arange(0, 40, 5)
    ctx, natural, accesses = steps.local_step(engine, plan, state, plan.context(rows))
    iterations, tokens = [], []
    for i, row in enumerate(rows):
        one_ctx, alone, one_accesses = steps.local_step(engine, plan, state, plan.context(np.array([row])))
        np.testing.assert_allclose(natural["theta"][0][i], alone["theta"][0][0], rtol=1e-12)
        tokens.append(one_ctx.subset["tokens"].size)
        iterations.append(one_accesses // tokens[-1])
    assert accesses == sum(it * n for it, n in zip(iterations, tokens))
    assert len(set(iterations)) > 1, "documents converge after different numbers of sweeps"


def test_an_evaluation_subsample_covering_the_plate_is_labelled_exact():
    small = factorized_mixture(_blobs(150), 3).fit(method="stochastic", subsample=vmp.Minibatch("data", 30),
                                                 iterations=10, progress=False)
    assert small.extra["bound"] == "exact" and np.all(small.history["evaluations"]["stderr"] == 0)
