"""The Dask executor (vmp/inference/executor_dask.py): the same natural parameters as Serial on
the mixture, LDA and matrix factorization, batch and stochastic, the same minibatch rows for the
same seed, the same bits run to run, a fit that survives a killed worker, and per-step traffic
that does not grow with N. Clusters run on loopback (127.0.0.1) and are closed by the fixtures."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import vmp
from models import (hmm, lda, linear_regression, logistic_regression, matrix_factorization,
                    multiclass_logistic_regression)
from tests.helpers import factorized_mixture
from vmp.graph.leaves import Context
from vmp.inference import steps
from vmp.inference.engine import Engine
from vmp.inference.init import initialize

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::vmp.DivergenceWarning")


def _cluster():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=50)
    return cluster, distributed.Client(cluster)


@pytest.fixture(scope="module")
def client():
    cluster, client = _cluster()
    yield client
    client.close()
    cluster.close()


def mixture(n=80, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    return factorized_mixture(centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2)), 3)


def topics(docs=60, seed=0):
    rng = np.random.default_rng(seed)
    k, v = 3, 30
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    counts = np.stack([rng.multinomial(40, rng.dirichlet(np.full(k, 0.2)) @ beta) for _ in range(docs)])
    d, w = np.nonzero(counts)
    return lda(d, w, counts[d, w], k, n_words=v)


def ratings(seed=0, m=8, n=9, k=2, r=60):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    y = np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], 1) + 0.3 * rng.normal(size=r)
    return matrix_factorization(rows, cols, y, k, n_users=m, n_items=n)


def regression(n=70, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    return linear_regression(x, x @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=n))


def masked_mixture(n=80, seed=0):
    """The mixture with a quarter of its points missing (mask=): their z are barren."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    x = centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2))
    with vmp.Model("masked") as model:
        pi = vmp.Dirichlet("pi", alpha=np.ones(3))
        with vmp.Plate("components", 3):
            mu = vmp.Gaussian("mu", mean=np.zeros(2), precision=0.01 * np.eye(2))
            lam = vmp.Wishart("Lambda", dof=2.0, scale=0.5 * np.eye(2))
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=mu[z], precision=lam[z], observed=x, mask=rng.random(n) > 0.25)
    return model


def coordinates_mixture(n=80, seed=0):
    """The mixture with 15% of its coordinates missing (NaN): latent x_n,m in a Clamp."""
    rng = np.random.default_rng(seed)
    x = 5.0 * np.eye(3)[rng.integers(3, size=n)] + rng.normal(size=(n, 3))
    x[rng.random(x.shape) < 0.15] = np.nan
    return factorized_mixture(x, 3)


def logistic(n=70, seed=0, classes=2):
    """Logistic (or stick-breaking multiclass) regression: a Polya-gamma auxiliary per row."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    if classes == 2:
        return logistic_regression(x, (x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=n) > 0).astype(float))
    return multiclass_logistic_regression(x, rng.integers(0, classes, size=n), classes)


MODELS = {"mixture": (mixture, "data", 10), "lda": (topics, "documents", 10), "mf": (ratings, "users", 4),
          "logistic": (logistic, "data", 10), "multiclass": (lambda: logistic(classes=3), "data", 10),
          "regression": (regression, "data", 10), "masked": (masked_mixture, "data", 10),
          "coordinates": (coordinates_mixture, "data", 10)}
FITS = {
    "batch": lambda plate, size: dict(method="batch", iterations=6),
    "minibatch": lambda plate, size: dict(method="stochastic", subsample=vmp.Minibatch(plate, size),
                                          iterations=4, evaluate_every=2),
    "pernode": lambda plate, size: dict(method="stochastic", subsample=vmp.PerNode(children=3), iterations=4,
                                        evaluate_every=2),
}


def worst_relative(a, b) -> float:
    """max over nodes and components of max|a - b| / max|b|."""
    assert a.natural.keys() == b.natural.keys()
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)), initial=0.0) / max(np.max(np.abs(y)), 1e-300))
               for k in a.natural for x, y in zip(a.natural[k], b.natural[k]))


def test_restricted_partitions_sum_to_the_full_message():
    """sum over row ranges p of the children's messages in Context(subset={data: p}) with the
    locals' rows as overrides = the unrestricted message (full-data weights), within 1e-10."""
    model = mixture(n=97)
    engine = Engine(model)
    state = initialize(engine, np.random.default_rng(1))
    state, _ = steps.sweep(engine, state, engine.update_order())
    for name in ("pi", "mu", "Lambda"):
        node = engine.nodes[name]
        full = engine.children(state, node, Context())
        parts = None
        for lo, hi in [(0, 30), (30, 31), (31, 97)]:
            rows = np.arange(lo, hi)
            ctx = Context(subset={"data": rows}, overrides={"z": tuple(m[lo:hi] for m in state.moments["z"])})
            part = engine.children(vmp.State(moments={k: v for k, v in state.moments.items() if k != "z"}), node,
                                   ctx)
            parts = part if parts is None else tuple(a + b for a, b in zip(parts, part))
        for a, b in zip(parts, full):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.max(np.abs(b)))


@pytest.mark.parametrize("fit", sorted(FITS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_same_answer_as_serial(client, name, fit):
    build, plate, size = MODELS[name]
    if name == "mf" and fit == "minibatch":
        plate = "ratings"  # minibatches of the ratings (the users reach no rating through a gather)
    options = FITS[fit](plate, size)
    serial = build().fit(seed=3, progress=False, **options)
    executor = vmp.DaskExecutor(client)
    dask = build().fit(seed=3, progress=False, executor=executor, **options)
    assert executor.traffic["tasks"] > 0
    assert worst_relative(dask.state, serial.state) < 1e-10
    assert dask.state.rng == serial.state.rng  # the same draws from the same seed
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-10)


def _steals(client) -> list[str]:
    """The keys of the tasks Dask's work stealing moved to another worker, in order."""
    events = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.get_events("stealing")))
    return [str(e[1][1]) for e in events if e[1][0] == "confirm"]


def _workers(client) -> list[str]:
    """The cluster's workers, as its scheduler lists them (the client's own record lists none at
    moments)."""
    return sorted(client.nthreads())


def _busy(seconds: float) -> int:
    time.sleep(seconds)
    return 0


@pytest.mark.parametrize("fit", ["batch", "minibatch"])
def test_same_bits_run_to_run(client, fit):
    """The same seed on the same cluster gives the same bits (the workers copy what they
    receive into numpy-allocated memory: SIMD reductions round differently at other alignments),
    also while one worker is busy with other work: no task of the fit moves to the idle worker
    (Dask's work stealing would run it on a copy of its holder, elsewhere in memory)."""
    options = FITS[fit]("data", 10)
    workers = _workers(client)
    before = len(_steals(client))
    results = []
    for run in range(3):  # run 0 on an idle cluster, then each worker busy in turn
        busy = [client.submit(_busy, 0.1, pure=False, workers=[workers[run % 2]]) for _ in range(10 * (run > 0))]
        results.append(mixture().fit(seed=5, progress=False, executor=vmp.DaskExecutor(client), **options))
        client.gather(busy)
    # the busy tasks, the values sent (any worker may rebuild them) and the additions may move
    stolen = [key for key in _steals(client)[before:] if not key.startswith(("_busy", "tuple", "add"))]
    assert not stolen, stolen
    for other in results[1:]:
        assert worst_relative(results[0].state, other.state) == 0.0
        np.testing.assert_array_equal(results[0].elbo, other.elbo)


def _unaligned(value, offset: int):
    """``value`` with each C-contiguous array moved to ``offset`` bytes past a multiple of 64,
    also inside a Context: where a message's buffer may put it (Dask reads the small frames of
    a message into one buffer, one after the other)."""
    import dataclasses

    if isinstance(value, np.ndarray) and value.flags.c_contiguous and value.nbytes:
        buffer = np.empty(value.nbytes + 128, dtype=np.uint8)
        start = -buffer.ctypes.data % 64 + offset
        out = buffer[start:start + value.nbytes].view(value.dtype).reshape(value.shape)
        out[...] = value
        return out
    if isinstance(value, dict):
        return {k: _unaligned(v, offset) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_unaligned(v, offset) for v in value)
    if isinstance(value, Context):
        return dataclasses.replace(value, **{f.name: _unaligned(getattr(value, f.name), offset)
                                             for f in dataclasses.fields(value) if f.name != "state"})
    return value


def _received_at(offset: int, fn, *args):
    return fn(*_unaligned(args, offset))


@pytest.mark.parametrize("name, fit", [("regression", "pernode"), ("mixture", "batch")])
def test_the_bits_do_not_depend_on_where_a_message_puts_the_arrays(client, monkeypatch, name, fit):
    """A fit whose every task receives its arrays (a PerNode draw's scale and locals inside its
    Contexts, a batch fit's globals and locals) 4 bytes off an 8-byte boundary gives the bits of
    a fit whose tasks receive them aligned: numpy's matrix product of unaligned rows rounds
    otherwise, and where Dask's buffers put a small array depends on the message."""
    from vmp.inference.executor_dask import DaskWorkers

    build, plate, size = MODELS[name]
    options = FITS[fit](plate, size)
    aligned = build().fit(seed=3, progress=False, executor=vmp.DaskExecutor(client), **options)
    keep = DaskWorkers.keep
    moved = lambda self, i, fn, *args: keep(self, i, _received_at, 4, fn, *args)  # noqa: E731
    monkeypatch.setattr(DaskWorkers, "keep", moved)
    monkeypatch.setattr(DaskWorkers, "run", moved)
    unaligned = build().fit(seed=3, progress=False, executor=vmp.DaskExecutor(client), **options)
    assert _bits(unaligned.state) == _bits(aligned.state)
    np.testing.assert_array_equal(unaligned.elbo, aligned.elbo)
    for node, change in aligned.history["change"].items():
        np.testing.assert_array_equal(unaligned.history["change"][node], change, err_msg=node)


def test_minibatch_traffic_does_not_grow_with_n(client):
    """Per step: the globals' moments, the drawn rows' context and locals, a natural-parameter
    sum; nothing of size N."""
    sent = []
    for n in (200, 2000):
        executor = vmp.DaskExecutor(client)
        fit = mixture(n=n).stochastic(subsample=vmp.Minibatch("data", 10), evaluate_every=0, seed=0,
                                      executor=executor)
        fit.run(1)
        steps = []
        for _ in range(3):  # the least of 3 steps: a step the cluster retried sends its tasks twice
            before = executor.traffic["sent"]
            fit.run(1)
            steps.append(executor.traffic["sent"] - before)
        sent.append(min(steps))
    assert sent[1] < 1.2 * sent[0], sent


def _bits(state) -> dict:
    return {k: [np.asarray(a).tobytes() for a in v] for k, v in state.natural.items()}


def _fit_in_thread(fit, seconds: float):
    """fit() run in a thread; its result, or None if it has not returned after ``seconds``."""
    import threading

    out = {}
    thread = threading.Thread(target=lambda: out.update(result=fit()), daemon=True)
    thread.start()
    thread.join(seconds)
    return out.get("result")


@pytest.fixture(scope="module")
def faulty():
    """A cluster of its own for the fault tests (its workers are killed and retired), warmed by
    a first fit (so that the unharmed fits time the fits that are killed)."""
    cluster, client = _cluster()
    mixture().fit(iterations=2, progress=False, executor=vmp.DaskExecutor(client))
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("fit,seed", [("batch", 0), ("minibatch", 1), ("pernode", 2)])
def test_a_worker_killed_at_a_random_moment_does_not_change_the_bits(faulty, fit, seed):
    """A worker killed by SIGKILL at a moment drawn (seeded) within the unharmed run's time,
    mid-step or between steps: the fit finishes with the unharmed run's bits (a sweep of ten
    moments per fit: benchmarks/dask_faults.py)."""
    from tests.faults import killed_run

    options = {**FITS[fit]("data", 10), "iterations": 8}
    faulty.wait_for_workers(2, timeout=60)
    start = time.perf_counter()
    unharmed = mixture().fit(seed=2, progress=False, executor=vmp.DaskExecutor(faulty, partitions=2), **options)
    moment = np.random.default_rng(seed).uniform(0.05, 0.5) * (time.perf_counter() - start)
    executor = vmp.DaskExecutor(faulty, partitions=2)
    result, killed = killed_run(faulty, lambda: mixture().fit(seed=2, progress=False, executor=executor, **options),
                                moment)
    assert killed
    assert result.iterations == unharmed.iterations
    assert _bits(result.state) == _bits(unharmed.state)


def test_a_retired_worker_does_not_hang_the_fit(faulty):
    """A worker retired mid-fit (its data moved to the other worker): the tasks pinned to it
    would wait for it for ever; they are sent again where the holders are put anew, and the fit
    finishes with the bits of a fit the cluster kept whole."""
    options = {**FITS["batch"]("data", 10), "iterations": 5}
    faulty.wait_for_workers(2, timeout=60)
    unharmed = mixture().fit(seed=2, progress=False, executor=vmp.DaskExecutor(faulty, partitions=2), **options)
    retired = []

    def retire(t, _fit):
        if t == 2:
            retired.append(faulty.retire_workers([_workers(faulty)[0]]))

    executor = vmp.DaskExecutor(faulty, partitions=2)
    result = _fit_in_thread(lambda: mixture().fit(seed=2, progress=False, executor=executor, callback=retire,
                                                  **options), 60)
    assert retired and result is not None, "the fit hung on a task pinned to the retired worker"
    assert _bits(result.state) == _bits(unharmed.state)


def test_errors_of_the_computation_are_not_retried(client):
    with pytest.raises(vmp.VMPError, match="no plate named"):
        mixture().fit(iterations=2, progress=False, executor=vmp.DaskExecutor(client, plate="nope"))


def test_cli_fit_on_a_cluster(client, capsys):
    from vmp.cli import main

    assert main(["fit", "gaussian_mixture", "--n", "100", "--iterations", "5", "--scheduler",
                 client.scheduler.address]) == 0
    assert "on 2 Dask worker(s)" in capsys.readouterr().out
    assert main(["fit", "gaussian_mixture", "--n", "100", "--iterations", "5", "--workers", "1"]) == 0
    assert "on 1 Dask worker(s)" in capsys.readouterr().out
    assert main(["fit", "gaussian_mixture", "--workers", "2", "--scheduler", client.scheduler.address]) == 2


def test_the_state_is_plain_after_a_run(tmp_path):
    """The locals kept on the workers (a batch fit's sweeps, a stochastic fit's closing
    evaluation) are gathered at the end of the run: the result reads, saves and compares after
    the cluster is closed."""
    from vmp.inference.executor_dask import Kept

    options = {fit: {**FITS[fit]("data", 10), "iterations": 3, "seed": 1, "progress": False}
               for fit in ("batch", "minibatch")}
    options["minibatch"]["evaluate_every"] = 2  # so that the fit closes with an evaluation at step 3
    cluster, client = _cluster()
    try:
        results = {fit: mixture().fit(executor=vmp.DaskExecutor(client), **o) for fit, o in options.items()}
    finally:
        client.close()
        cluster.close()
    for fit, result in results.items():
        good = result.state.loop.best
        assert ("z" in result.state.natural) == (fit == "batch")  # a minibatch fit keeps no local q
        for value in (result.state.natural.get("z", ()), result.state.moments.get("z", ()), good.get("z", ())):
            assert not isinstance(value, Kept), fit
        result.save(tmp_path / f"{fit}.npz")
        serial = mixture().fit(**options[fit])
        assert worst_relative(result.state, serial.state) < 1e-10, fit


def test_a_lost_step_is_sent_again_then_reported(client, monkeypatch):
    """A cluster failure while a sum is sent (here: a closed connection, twice) restarts the
    holders and sends the step again; more failures than ``retries`` raise ClusterError."""
    from distributed.comm.core import CommClosedError

    from vmp.inference import executor_dask

    count = executor_dask.DaskExecutor._count
    failures = {"left": 2}

    def flaky(self, *args):
        if failures["left"]:
            failures["left"] -= 1
            raise CommClosedError("lost")
        return count(self, *args)

    monkeypatch.setattr(executor_dask.DaskExecutor, "_count", flaky)
    options = FITS["minibatch"]("data", 10)
    serial = mixture().fit(seed=4, progress=False, **options)
    dask = mixture().fit(seed=4, progress=False, executor=vmp.DaskExecutor(client, retries=2), **options)
    assert failures["left"] == 0
    assert worst_relative(dask.state, serial.state) < 1e-10
    failures["left"] = 3
    with pytest.raises(executor_dask.ClusterError, match="failed 3 times"):
        mixture().fit(seed=4, progress=False, executor=vmp.DaskExecutor(client, retries=2), **options)


def test_workers_read_their_rows_of_a_memmap(client, tmp_path):
    """Data in a memmap: each holder opens the file on its worker and reads its rows, so what is
    sent to start the fit is less than the data; the answers are those of the data in memory."""
    x = np.random.default_rng(3).normal(size=(3000, 2)) + np.repeat([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]], 1000, 0)
    mm = np.memmap(tmp_path / "x.f8", dtype=float, mode="w+", shape=x.shape)
    mm[:] = x
    mm.flush()
    serial = factorized_mixture(x, 3).fit(iterations=4, seed=0, progress=False)
    model = factorized_mixture(x, 3)
    model["x"]._set_data(np.memmap(tmp_path / "x.f8", dtype=float, mode="r", shape=x.shape), None)
    executor = vmp.DaskExecutor(client)
    dask = model.fit(iterations=4, seed=0, progress=False, executor=executor)
    assert sum(len(b) for b in executor._blobs) < x.nbytes / 4
    assert worst_relative(dask.state, serial.state) < 1e-10


def test_a_minibatch_of_documents_sends_back_only_its_words(client):
    """LDA with V = 3000 words and Minibatch(8) documents: each partition's sum for beta comes back
    as the columns of the words its tokens hold (a fraction of K x V), and the fit is Serial's."""
    rng = np.random.default_rng(0)
    k, v, docs = 3, 3000, 200
    beta = rng.dirichlet(np.full(v, 0.05), size=k)
    counts = np.stack([rng.multinomial(30, rng.dirichlet(np.full(k, 0.2)) @ beta) for _ in range(docs)])
    d, w = np.nonzero(counts)

    def build():
        return lda(d, w, counts[d, w], k, n_words=v)

    options = dict(method="stochastic", subsample=vmp.Minibatch("documents", 8), iterations=3, evaluate_every=0,
                   seed=1, progress=False)
    serial = build().fit(**options)
    executor = vmp.DaskExecutor(client)
    fit = build().stochastic(executor=executor, **{k: v for k, v in options.items() if k != "method"})
    fit.run(1)
    before = executor.traffic["received"]
    fit.run(2)
    received = (executor.traffic["received"] - before) / 2
    assert received < k * v * 8 / 4, received
    assert worst_relative(fit.result().state, serial.state) < 1e-10


def test_the_drawn_rows_locals_read_here_are_the_local_steps(client):
    """A minibatch step's locals stay on the workers; read on the driver (the step's Context
    holds them as Remote handles) they are gathered from there: the moments Serial's local step
    gives the same rows. Once a later step replaced them they are no longer held: an error."""
    executor = vmp.DaskExecutor(client)
    fit = topics().stochastic(subsample=vmp.Minibatch("documents", 10), executor=executor, seed=1,
                              progress=False, evaluate_every=0)
    engine, plan, state = fit.engine, fit.plan, fit.state
    rows = np.array([3, 17, 18, 40, 55])
    remote = executor.local_step(engine, plan, state, rows)
    here, _, _ = steps.local_step(engine, plan, state, plan.context(rows))
    for node in plan.local:
        for a, b in zip(remote.ctx.overrides[node.name], here.overrides[node.name]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    first = executor.local_step(engine, plan, state, rows).ctx
    executor.local_step(engine, plan, state, np.array([1, 2, 30, 31, 59]))
    with pytest.raises(vmp.VMPError, match="no longer held"):
        tuple(first.overrides["z"])


class CountingReads:
    """Observed data that count the reads made of them in this process (the driver)."""

    def __init__(self, data: np.ndarray):
        self.data, self.shape, self.dtype, self.reads = data, data.shape, data.dtype, 0

    def __getitem__(self, index):
        self.reads += 1
        return self.data[index]


def test_the_driver_never_reads_the_drawn_rows(client):
    """Minibatch mixture with its data counting reads on the driver: after the holders were
    filled, the steps and the evaluations read nothing here (the local step of z runs where the
    rows are); the answers are Serial's."""
    x = mixture(n=300).nodes["x"].data
    options = dict(subsample=vmp.Minibatch("data", 20), evaluate_every=2, seed=1, progress=False)
    serial = factorized_mixture(x, 3).stochastic(**options)
    serial.run(5)
    model = factorized_mixture(x, 3)
    model["x"]._set_data(data := CountingReads(x), None)
    fit = model.stochastic(executor=vmp.DaskExecutor(client), **options)
    fit.run(1)
    reads = data.reads
    fit.run(4)
    assert data.reads == reads
    assert worst_relative(fit.result().state, serial.result().state) < 1e-10


def test_one_round_of_tasks_per_step(client):
    """Minibatch LDA: each step is one round of tasks (per partition holding drawn documents, its
    local step, beta's sum and its share of the bound estimate); what is sent per step is beta's
    moments and the drawn rows, never the drawn tokens' q(z); the history is Serial's."""
    rng = np.random.default_rng(2)
    k, v, docs = 3, 40, 80
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    counts = np.stack([rng.multinomial(60, rng.dirichlet(np.full(k, 0.2)) @ beta) for _ in range(docs)])
    d, w = np.nonzero(counts)
    options = dict(subsample=vmp.Minibatch("documents", 16), evaluate_every=2, seed=1, progress=False)
    serial = lda(d, w, counts[d, w], k, n_words=v).stochastic(**options)
    serial.run(5)
    executor = vmp.DaskExecutor(client)
    fit = lda(d, w, counts[d, w], k, n_words=v).stochastic(executor=executor, **options)
    fit.run(1)
    before = dict(executor.traffic)
    fit.run(4)
    rounds = 4 + 2  # and two evaluations (a local step of the evaluation rows each, no sum)
    assert executor.traffic["rounds"] - before["rounds"] == rounds
    assert executor.traffic["tasks"] - before["tasks"] <= 2 * rounds
    sent = (executor.traffic["sent"] - before["sent"]) / rounds
    moments = sum(m.nbytes for m in fit.state.moments["beta"])
    drawn_q = 16 * (d.size / docs) * k * 8  # the moments of the drawn tokens' z alone
    assert sent < 2 * (moments + 16 * 8 + 1000) < drawn_q, (sent, moments, drawn_q)
    result = fit.result()
    assert worst_relative(result.state, serial.result().state) < 1e-10
    assert result.state.rng == serial.result().state.rng
    mine, theirs = fit.recorder.raw, serial.recorder.raw
    np.testing.assert_allclose(mine["bound_estimate"], theirs["bound_estimate"], rtol=1e-10)
    np.testing.assert_allclose(mine["evaluations"]["elbo"], theirs["evaluations"]["elbo"], rtol=1e-10)
    np.testing.assert_allclose(mine["evaluations"]["stderr"], theirs["evaluations"]["stderr"], rtol=1e-8)
    assert mine["accesses"] == theirs["accesses"]


def test_lost_holders_and_locals_are_made_again(client):
    """A batch fit whose partition holder is lost (cancelled here, as when its worker dies with
    the data scattered to it, which Dask cannot recompute) scatters the partition again and
    makes the lost rows of q(z) again from what they were computed from: Serial's answer."""
    serial = mixture().fit(seed=6, progress=False, iterations=6, tol=0.0)
    executor = vmp.DaskExecutor(client)
    fit = mixture().batch(seed=6, progress=False, executor=executor, iterations=6, tol=0.0)
    fit.step()
    fit.step()
    z = fit.state.natural["z"].futures[0]
    client.cancel([executor._holders[0]], force=True)
    fit.run(4)
    assert z.status == "cancelled"
    assert worst_relative(fit.result().state, serial.state) < 1e-10


def test_locals_lost_before_the_last_gather_are_made_again(client):
    """The end of a batch fit gathers q(z)'s rows kept on the workers (``finish``): a holder and
    the rows lost just before it (as when a worker dies then) are scattered and made again, and
    the fit ends with Serial's answer instead of Dask's "lost dependencies"."""
    serial = mixture().fit(seed=6, progress=False, iterations=4, tol=0.0)
    executor = vmp.DaskExecutor(client)

    def lose(t, fit):
        if t == 4:
            client.cancel([executor._holders[0], fit.state.natural["z"].futures[0]], force=True)

    result = mixture().fit(seed=6, progress=False, executor=executor, iterations=4, tol=0.0, callback=lose)
    assert result.iterations == 4
    assert worst_relative(result.state, serial.state) < 1e-10


def test_the_data_are_scattered_not_sent_in_the_task_graph(client):
    """Dask warns of a task graph above its threshold (10 MB by default; 10 kB here, which the
    pickled rows of 2,000 points cross): the partitions are scattered, so no graph is that large."""
    import dask

    x = mixture(n=2000).nodes["x"].data
    assert x.nbytes / 2 > 10_000
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "10kB"}):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            factorized_mixture(x, 3).fit(seed=0, progress=False, executor=vmp.DaskExecutor(client),
                                       **FITS["batch"]("data", 10))
    assert not [w for w in seen if "large graph" in str(w.message)], [str(w.message)[:80] for w in seen]


@pytest.mark.parametrize("update, rounds", [("per-node", 2), ("global", 1)])
def test_a_target_that_reads_a_moved_global_gets_its_own_round(client, update, rounds):
    """Minibatch mixture: the first round gives pi's and mu's sums; under option (a) Lambda's
    factors read mu, which moved, so Lambda gets a second round that reads the locals the workers
    kept (with mu's new moments); under option (b) every target reads the step's start: one round.
    Serial's answers either way."""
    options = dict(subsample=vmp.Minibatch("data", 10), evaluate_every=0, seed=2, progress=False, update=update)
    serial = mixture().stochastic(**options)
    serial.run(4)
    executor = vmp.DaskExecutor(client)
    fit = mixture().stochastic(executor=executor, **options)
    fit.run(1)
    before = executor.traffic["rounds"]
    fit.run(3)
    assert executor.traffic["rounds"] - before == 3 * rounds
    assert worst_relative(fit.result().state, serial.result().state) < 1e-10


def _arrays(obj, path="model", seen=None):
    """(path, shape, strides) of every array (and sparse matrix) reachable from ``obj``."""
    import scipy.sparse as sp

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        yield path, obj.shape, obj.strides
    elif sp.issparse(obj):
        yield path, obj.shape, (1,) * len(obj.shape)
    elif type(obj) is dict:
        for k, v in obj.items():
            yield from _arrays(v, f"{path}[{k!r}]", seen)
    elif type(obj) in (list, tuple, set):
        for i, v in enumerate(obj):
            yield from _arrays(v, f"{path}[{i}]", seen)
    elif type(obj).__module__.startswith("vmp") and not isinstance(obj, type):
        for k, v in getattr(obj, "__dict__", {}).items():
            yield from _arrays(v, f"{path}.{k}", seen)


@pytest.mark.parametrize("name, fit", [("mixture", "batch"), ("lda", "batch"), ("lda", "minibatch"),
                                       ("mf", "batch"), ("regression", "batch"), ("masked", "batch"),
                                       ("masked", "minibatch"), ("coordinates", "batch")])
def test_a_holder_holds_only_its_rows(client, name, fit):
    """The model each holder unpickles holds, along the data plate and the plates linked to it,
    only its partition's elements: no array (observed data, a gather's index and segment matrix,
    weights such as token counts, the elements a factor keeps, the state) has an axis of the
    whole plate's length that is not a broadcast (stride 0) of fewer numbers."""
    import pickle

    build, plate, size = MODELS[name]
    executor = vmp.DaskExecutor(client)
    build().fit(seed=3, progress=False, executor=executor, **FITS[fit](plate, size))
    model = executor._model
    for blob, lo, hi in zip(executor._blobs, executor.bounds[:-1], executor.bounds[1:]):
        spans = executor._plan.spans(int(lo), int(hi)) if executor._plan else {executor.plate.name: (lo, hi)}
        whole = {model.plates[p].size: p for p, span in spans.items() if span is not None}
        assert whole and len(whole) == len([s for s in spans.values() if s is not None])
        held = [(path, shape) for path, shape, strides in _arrays(pickle.loads(blob))
                if any(n in whole and s != 0 for n, s in zip(shape, strides))]
        assert not held, f"{name} {fit}: arrays over the whole plate {whole}: {held}"


@pytest.mark.parametrize("fit", ["batch", "minibatch"])
def test_the_clients_record_of_the_workers_does_not_change_the_bits(client, monkeypatch, fit):
    """The client's record of the cluster (``Client.scheduler_info``) lists no worker at moments
    (its refresh every 2 seconds carries none; a client just started has none yet): a fit
    started then has the partitions, and the bits, of one started while it lists them, and
    Serial's answers."""
    options = FITS[fit]("data", 10)
    listed = mixture().fit(seed=3, progress=False, executor=vmp.DaskExecutor(client), **options)
    monkeypatch.setattr(client, "scheduler_info", lambda *a, **k: {"workers": {}})
    executor = vmp.DaskExecutor(client)
    unlisted = mixture().fit(seed=3, progress=False, executor=executor, **options)
    assert len(executor.bounds) - 1 == 2
    assert _bits(unlisted.state) == _bits(listed.state)
    np.testing.assert_array_equal(unlisted.elbo, listed.elbo)
    serial = mixture().fit(seed=3, progress=False, **options)
    assert worst_relative(unlisted.state, serial.state) < 1e-10


ADAPTIVE = {
    "minibatch": ("mixture", lambda: dict(subsample=vmp.Minibatch("data", 10))),
    "pernode_a": ("mf", lambda: dict(subsample=vmp.PerNode(children=3))),
    "pernode_b": ("mf", lambda: dict(subsample=vmp.PerNode(children=3), update="global")),
}


@pytest.mark.parametrize("fit", sorted(ADAPTIVE))
def test_adaptive_steps_are_the_serial_ones(client, fit):
    """vmp.Adaptive() (its gradients, averages and the factor its nodes share) takes the same
    steps on a cluster as in one process: the same rates, states and bounds."""
    name, options = ADAPTIVE[fit]
    build = MODELS[name][0]
    kwargs = dict(method="stochastic", iterations=6, evaluate_every=2, seed=3, progress=False)
    serial = build().fit(step=vmp.Adaptive(), **options(), **kwargs)
    dask = build().fit(step=vmp.Adaptive(), executor=vmp.DaskExecutor(client), **options(), **kwargs)
    assert worst_relative(dask.state, serial.state) < 1e-10
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-10)
    for node, rates in serial.history["rho"].items():
        np.testing.assert_allclose(dask.history["rho"][node], rates, rtol=1e-10, err_msg=node)


@pytest.mark.parametrize("fit", ["batch", "minibatch"])
def test_a_message_kept_as_a_scaled_product_on_workers_is_the_serial_one(client, fit):
    """v's message (1,400 x 5 x 5, above DIRECT) is kept as a ``ScaledProduct`` by the factor
    each worker holds; the driver adds the prior into the array sent back in place: the bounds
    and q as in the serial fit."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 40, 6000), rng.integers(0, 1400, 6000), rng.normal(size=6000)
    options = (dict(iterations=8, tol=0) if fit == "batch" else
               dict(method="stochastic", subsample=vmp.Minibatch("ratings", 1500), iterations=8, evaluate_every=2))
    build = lambda: matrix_factorization(*data, n_factors=5, n_users=40, n_items=1400)  # noqa: E731
    serial = build().fit(seed=1, progress=False, **options)
    dask = build().fit(seed=1, progress=False, executor=vmp.DaskExecutor(client), **options)
    assert worst_relative(dask.state, serial.state) < 1e-10
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-12)


def state_space(seed=0):
    """A linear dynamical system over eight sequences of different lengths (the chains are
    partitioned whole: a worker holds some sequences)."""
    from models import linear_dynamical_system

    rng = np.random.default_rng(seed)
    seqs = [np.cumsum(rng.normal(size=(n, 2)), 0) + rng.normal(size=(n, 2)) for n in (12, 9, 15, 10, 8, 14, 11, 13)]
    return linear_dynamical_system(seqs, 2)


def sequences_hmm(seed=0):
    """A Gaussian HMM over six sequences of different lengths."""
    rng = np.random.default_rng(seed)
    return hmm([rng.normal(size=(n, 2)) + 3.0 * (np.arange(n) % 2)[:, None] for n in (12, 9, 15, 10, 8, 14)], 2)


@pytest.mark.parametrize("build,fit", [(state_space, "batch"), (state_space, "minibatch"), (state_space, "pernode"),
                                       (sequences_hmm, "pernode")])
def test_a_state_space_model_over_sequences(client, build, fit):
    """Chains over sequences: a PerNode draw of time steps reads the locals each holder keeps at
    the drawn steps."""
    options = FITS[fit]("sequences", 2)
    serial = build().fit(seed=3, progress=False, **options)
    executor = vmp.DaskExecutor(client)
    dask = build().fit(seed=3, progress=False, executor=executor, **options)
    assert executor.traffic["tasks"] > 0
    assert worst_relative(dask.state, serial.state) < 1e-10
    np.testing.assert_allclose(dask.elbo, serial.elbo, rtol=1e-10)
