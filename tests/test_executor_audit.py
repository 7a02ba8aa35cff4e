"""An audit of the executors: Serial, Chunked (blocks of rows, a last block of another size),
DaskExecutor (2 partitions on a loopback LocalCluster) and Processes (2 processes here) give the
same q, bound history,
``model.elbo()``, ``predict`` and ``impute`` (within 1e-12 relative: only the order of the
additions differs) across the ready-made models and hand-declared ones. Each test here that
names a bug failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from models import hmm
from tests.helpers import factorized_mixture

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::vmp.DivergenceWarning")


@pytest.fixture(scope="module")
def pool():
    with vmp.Processes(2) as executor:
        yield executor


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=50)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def worst_relative(a, b) -> float:
    """max over nodes and components of max|a - b| / max|b|."""
    assert a.natural.keys() == b.natural.keys()
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)), initial=0.0) / max(np.max(np.abs(y)), 1e-300))
               for k in a.natural for x, y in zip(a.natural[k], b.natural[k]))


def poisson_hmm():
    rng = np.random.default_rng(0)
    return hmm([rng.poisson(3, size=n) for n in rng.integers(4, 10, size=11)], 3, emission="poisson")


def test_a_masked_weighted_node_whose_data_stay_whole_is_cut_on_holders(client):
    """An HMM with Poisson emissions of unequal lengths: y has a mask and weights (0 at padded
    steps) and a base measure that reads its data (-log y!), so a holder keeps its data whole;
    its multiplicity was cut to the partition's rows but the product with the whole mask was
    formed on the worker, and the fit failed ("the whole array asked of a partition")."""
    options = dict(seed=3, iterations=8, tol=0, progress=False)
    serial = poisson_hmm().fit(**options)
    dask = poisson_hmm().fit(executor=vmp.DaskExecutor(client, partitions=2), **options)
    assert worst_relative(dask.state, serial.state) < 1e-12
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-12)


def masked_parent(n=53):
    """h_n ~ N(mu, 1/tau), observed where the mask is True and latent elsewhere (it has a child),
    y_n ~ N(h_n, 1) observed: a partially observed node with a child (Winn & Bishop section 3.3)."""
    rng = np.random.default_rng(0)
    h = 2.0 + rng.normal(size=n)
    with vmp.Model("masked_parent") as model:
        mu = vmp.Normal("mu", 0.0, 1e-2)
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", n):
            parent = vmp.Normal("h", mu, tau, observed=h, mask=rng.random(n) > 0.3)
            vmp.Normal("y", parent, 1.0, observed=h + rng.normal(size=n))
    return model


def test_a_masked_node_with_a_child_on_holders(client):
    """The message from y to h is zeroed at h's observed elements (``Clamp.free``: ~observed);
    a holder's cut Clamp held them as Rows, which had no ~, and the first sweep failed."""
    options = dict(seed=3, iterations=8, tol=0, progress=False)
    reference, model = masked_parent(), masked_parent()
    serial = reference.fit(**options)
    dask = model.fit(executor=vmp.DaskExecutor(client, partitions=2), **options)
    assert worst_relative(dask.state, serial.state) < 1e-12
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-12)
    np.testing.assert_allclose(model.impute("h").mean, reference.impute("h").mean, rtol=1e-12)


def self_gather(observed: bool, n=53):
    """u_n on the data plate (hidden, or observed), y_n ~ N(u_{prev(n)}, 1/tau): a factor of the
    data plate reads u at rows of other blocks."""
    rng = np.random.default_rng(0)
    prev = rng.permutation(n)
    with vmp.Model("self_gather") as model:
        mu = vmp.Normal("mu", 0.0, 1e-2)
        tau = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("data", n):
            u = vmp.Normal("u", mu, 1.0, observed=rng.normal(size=n) if observed else None)
            if not observed:
                vmp.Normal("x", u, tau, observed=rng.normal(size=n))
            vmp.Normal("y", u[prev], tau, observed=rng.normal(size=n))
    return model


@pytest.mark.parametrize("executor", ["Chunked", "DaskExecutor", "Processes"])
@pytest.mark.parametrize("plate", [None, "data"])
def test_a_plate_read_at_other_rows_is_not_split(client, executor, plate):
    """y_n reads u at row prev(n): a block's message to q(u) lands on rows of other blocks and
    its bound reads u's moments there (Chunked and Dask failed with an IndexError); a clear error
    naming the executor, the plate and the gather, whether the plate is the default or named.
    Observed u: a Dask holder holds only its rows of u's data (an IndexError), Chunked reads them
    whole and gives Serial's answer."""
    make = {"Chunked": lambda: vmp.Chunked(size=15, plate=plate),
            "DaskExecutor": lambda: vmp.DaskExecutor(client, partitions=2, plate=plate),
            "Processes": lambda: vmp.Processes(2, plate=plate)}[executor]
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    with pytest.raises(vmp.GraphError, match=rf"{executor}: .*'y' reads 'u' at other rows of plate 'data'"):
        self_gather(observed=False).fit(executor=make(), **options)
    if executor != "Chunked":
        with pytest.raises(vmp.GraphError, match="'y' reads 'u' at other rows of plate 'data'"):
            self_gather(observed=True).fit(executor=make(), **options)
    else:
        serial = self_gather(observed=True).fit(**options)
        chunked = self_gather(observed=True).fit(executor=make(), **options)
        assert worst_relative(chunked.state, serial.state) < 1e-12


@pytest.mark.parametrize("policy", [lambda: vmp.LocalTempering([1.0, 2.0, 4.0]),
                                    lambda: vmp.Tempering([1.0, 2.0, 4.0], samples=5)])
def test_a_tempered_fit_leaves_a_partially_observed_node_latent(policy):
    rng = np.random.default_rng(1)
    x = np.array([[0.0, 0.0], [4.0, 4.0]])[rng.integers(2, size=40)] + rng.normal(size=(40, 2))
    x[rng.random(x.shape) < 0.15] = np.nan
    model = factorized_mixture(x, 2)
    model.fit(seed=0, iterations=3, tol=0, progress=False, policies=[policy()])
    assert not model["x"].observed
    assert np.isfinite(model.elbo())


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    return np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])[rng.integers(3, size=n)] + rng.normal(size=(n, 2))


@pytest.mark.parametrize("n", [53, 40])
def test_an_executor_used_again_after_set_data_reads_the_new_data(client, n):
    """One DaskExecutor for two fits of one model with ``set_data`` between them (the same size,
    or a resized plate): the second fit kept the first fit's holders (its data; 1.3 relative off
    Serial, or q(z) of the old size) because the holders were keyed on the model object. Each
    fit scatters its own (as scale.md says: once per fit)."""
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    results = []
    for executor in (None, vmp.DaskExecutor(client, partitions=2), vmp.Chunked(size=15)):
        model = factorized_mixture(blobs(53, 0), 3)
        model.fit(executor=executor, **options)
        model.set_data("x", 2.0 * blobs(n, 5))
        results.append(model.fit(executor=executor, **options))
    serial, dask, chunked = results
    assert worst_relative(dask.state, serial.state) < 1e-12
    assert worst_relative(chunked.state, serial.state) < 1e-12
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-12)


def poisson_factors():
    from models import poisson_factorization
    rng = np.random.default_rng(0)
    users, items = 9, 7
    r, c = np.nonzero(rng.random((users, items)) < 0.4)
    seen = rng.random((users, items)) > 0.1
    seen[r, c] = True
    return poisson_factorization(r, c, rng.poisson(2, size=r.size) + 1, 2, n_users=users, n_items=items,
                                 observed_pairs=seen)


def test_an_allocation_bound_on_holders_reads_the_current_q(client):
    """Poisson factorization, y_r ~ Poisson(theta_u[r] . beta_i[r]) split over its entries: a
    holder evaluates its rows in a stable Context (its memos hold), where the allocation leaf
    phi stamped None ("reads no q"), so the factor kept the first evaluation's allocation term
    as a constant: the bound history 5% off Serial from the second sweep, q off by 0.1 and
    different run to run. The same q and bounds as Serial, the same bits twice."""
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    serial = poisson_factors().fit(**options)
    runs = [poisson_factors().fit(executor=vmp.DaskExecutor(client, partitions=2), **options) for _ in range(2)]
    for dask in runs:
        assert worst_relative(dask.state, serial.state) < 1e-12
        np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-12)
    assert worst_relative(runs[1].state, runs[0].state) == 0.0


def test_a_multinomial_mixture_on_holders(client):
    from models import multinomial_mixture
    counts = np.random.default_rng(0).multinomial(10, [0.2, 0.3, 0.5], size=41)
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    serial = multinomial_mixture(counts, 2).fit(**options)
    dask = multinomial_mixture(counts, 2).fit(executor=vmp.DaskExecutor(client, partitions=2), **options)
    assert worst_relative(dask.state, serial.state) < 1e-12


# ----- the comparison table: every executor gives Serial's answers --------------------------------

def _nan(x, rate, seed=1):
    x = np.array(x, float)
    x[np.random.default_rng(seed).random(x.shape) < rate] = np.nan
    return x


def _sequences(emission):
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 10, size=11)
    if emission == "poisson":
        return hmm([rng.poisson(3, size=n) for n in lengths], 3, emission="poisson")
    covariance = "joint" if emission == "joint" else "factorized"
    return hmm([_nan(np.cumsum(rng.normal(size=(n, 2)), 0) * 0.3, 0.1) for n in lengths], 3, covariance=covariance)


def _regressions(kind):
    from models import linear_regression, mixture_of_regressions
    rng = np.random.default_rng(0)
    x = np.c_[rng.normal(size=(53, 2)), np.ones(53)]
    y = np.where(rng.random(53) < 0.5, x @ [1.0, -2.0, 0.5], x @ [-1.0, 0.0, 1.0]) + 0.1 * rng.normal(size=53)
    y = _nan(y, 0.15)
    return linear_regression(x, y) if kind == "linear" else mixture_of_regressions(x, y, 2)


def _table():
    from models import (beta_binomial, factor_analysis, factorial_mixture, gaussian_mixture, lda,
                        matrix_factorization)
    rng = np.random.default_rng(0)
    counts = np.stack([rng.multinomial(25, rng.dirichlet(np.full(20, 0.1))) for _ in range(23)])
    d, w = np.nonzero(counts)
    users, items = rng.integers(13, size=71), rng.integers(9, size=71)
    y = rng.normal(size=(47, 2)) @ rng.normal(size=(2, 5)) + 0.1 * rng.normal(size=(47, 5))
    ratings = rng.normal(size=71)
    pixels = (rng.random((47, 2)) < 0.5) @ (2.0 * rng.normal(size=(4, 2))).T + 0.3 * rng.normal(size=(47, 4))
    groups = rng.integers(3, size=53)
    # name: (build, Minibatch plate or None)
    return {
        "gaussian_mixture_nan": (lambda: factorized_mixture(_nan(blobs(53, 0), 0.15), 3), "data"),
        "gaussian_mixture_joint_nan": (lambda: gaussian_mixture(_nan(blobs(53, 0), 0.15), 3), "data"),
        "gaussian_mixture_diag": (lambda: gaussian_mixture(blobs(53, 0), 3, covariance="diag"), "data"),
        "hmm_joint_nan_unequal": (lambda: _sequences("joint"), "sequences"),
        "factorial_mixture": (lambda: factorial_mixture(pixels, 2, pi=None), None),
        "hmm_gaussian_nan_unequal": (lambda: _sequences("gaussian"), "sequences"),
        "hmm_poisson_unequal": (lambda: _sequences("poisson"), None),
        "lda": (lambda: lda(d, w, counts[d, w], 3, n_words=20), "documents"),
        "matrix_factorization": (lambda: matrix_factorization(users, items, ratings, 2, n_users=13, n_items=9),
                                 "ratings"),
        "linear_regression_nan": (lambda: _regressions("linear"), None),
        "mixture_of_regressions_nan": (lambda: _regressions("mixture"), "data"),
        "factor_analysis_mask": (lambda: factor_analysis(y, 3, mask=np.random.default_rng(2).random(y.shape) > 0.1),
                                 None),
        "beta_binomial_weighted": (lambda: beta_binomial(np.random.default_rng(3).binomial(10, 0.3, size=53), 10,
                                                         groups=groups, weights=0.5 + groups), None),
        "masked_parent": (masked_parent, None),
        "poisson_factorization": (poisson_factors, None),
    }


TABLE = _table()


def _executors(client, pool, build):
    from vmp.inference.engine import Engine
    from vmp.inference.partition import data_plate

    n = data_plate(Engine(build()), None, "Chunked", cut=False).size
    size = n // 3 + 1 if n % (n // 3 + 1) else n // 3 + 2  # three or four blocks, the last one shorter
    return {"chunked": vmp.Chunked(size=size), "dask": vmp.DaskExecutor(client, partitions=2), "processes": pool}


def _readings(model, result) -> dict:
    """What a fit gives to read: the bound history, model.elbo(), the predictives' and the
    imputations' means of the observed nodes."""
    out = {"elbo": np.asarray(result.elbo, float), "model.elbo": np.array([model.elbo()])}
    for node in model.nodes.values():
        if node.has_data:
            out[f"predict {node.name}"] = np.asarray(model.predict(node.name).mean)
            if node.clamp is not None:
                out[f"impute {node.name}"] = np.asarray(model.impute(node.name).mean)
    return out


def _agree(result, model, serial, reference, tol=1e-12):
    assert worst_relative(result.state, serial.state) < tol
    mine, theirs = _readings(model, result), reference
    assert mine.keys() == theirs.keys()
    for key in theirs:
        np.testing.assert_allclose(mine[key], theirs[key], rtol=tol, atol=tol * np.max(np.abs(theirs[key])),
                                   err_msg=key)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_batch_fits_agree(client, pool, name):
    """Batch VMP: q of every node, the bound history, model.elbo(), predict and impute of each
    executor within 1e-12 relative of Serial (only the order of the additions differs; 2e-14 seen)."""
    build = TABLE[name][0]
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    model = build()
    serial = model.fit(**options)
    reference = _readings(model, serial)
    for label, executor in _executors(client, pool, build).items():
        model = build()
        _agree(model.fit(executor=executor, **options), model, serial, reference)


@pytest.mark.parametrize("name", sorted(k for k, (_, plate) in TABLE.items() if plate))
def test_minibatch_fits_agree(client, pool, name):
    """Stochastic VMP with Minibatch: the same rows drawn, q and the bound estimates; the locals
    then inferred on all data for model.elbo(), predict and impute."""
    build, plate = TABLE[name]
    size = max(2, build().plates[plate].size // 4)
    options = dict(method="stochastic", subsample=vmp.Minibatch(plate, size), iterations=4, evaluate_every=2, seed=3,
                   progress=False)
    model = build()
    serial = model.fit(**options)
    reference = _readings(model.infer_locals(), serial)
    for label, executor in _executors(client, pool, build).items():
        model = build()
        result = model.fit(executor=executor, **options)
        assert result.state.rng == serial.state.rng
        _agree(result, model.infer_locals(), serial, reference)


@pytest.mark.parametrize("name", ["lda", "hmm_gaussian_nan_unequal", "gaussian_mixture_joint_nan"])
def test_a_checkpoint_resumes_under_another_executor(client, pool, tmp_path, name):
    """Three sweeps on the cluster written to a checkpoint (the locals kept on the workers
    gathered into it), three more from it in blocks: Serial's six sweeps."""
    build = TABLE[name][0]
    options = dict(seed=3, tol=0, progress=False)
    serial = build().fit(iterations=6, **options)
    executors = _executors(client, pool, build)
    for writer in ("dask", "processes"):
        build().fit(iterations=3, checkpoint=tmp_path / "fit.npz", executor=executors[writer], **options)
        resumed = build().fit(iterations=6, resume=tmp_path / "fit.npz", executor=executors["chunked"], **options)
        assert resumed.iterations == 6
        assert worst_relative(resumed.state, serial.state) < 1e-12
        np.testing.assert_allclose(resumed.elbo, serial.elbo, rtol=1e-12)


@pytest.mark.parametrize("policy", [lambda: vmp.Annealing.linear(4.0, 4), lambda: vmp.LocalTempering([1.0, 2.0, 4.0])])
def test_batch_policies_agree(client, pool, policy):
    """Batch VMP with a tempering policy (docs/policies.md) on the mixture of regressions: the
    data plate's factors weighted by 1/T, the same on every executor."""
    build = TABLE["mixture_of_regressions_nan"][0]
    options = dict(seed=3, iterations=6, tol=0, progress=False)
    serial = build().fit(policies=[policy()], **options)
    for executor in _executors(client, pool, build).values():
        result = build().fit(policies=[policy()], executor=executor, **options)
        assert worst_relative(result.state, serial.state) < 1e-12
        np.testing.assert_allclose(result.elbo, serial.elbo, rtol=1e-12)


def test_a_minibatch_of_a_plate_read_at_other_rows_is_a_clear_error():
    with pytest.raises(vmp.GraphError, match="Minibatch: 'y' reads the local 'u' at other rows of plate 'data'"):
        self_gather(observed=False).fit(method="stochastic", subsample=vmp.Minibatch("data", 13), iterations=3,
                                        seed=0, progress=False)
