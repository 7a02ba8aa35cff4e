"""The process-pool executor (vmp/inference/executor_processes.py): Serial's answers (the
comparison table is tests/test_executor_audit.py), the same bits run to run, the values left on
its processes forgotten once nothing refers to them, a killed process that does not lose the fit,
and its processes stopped by close()."""
from __future__ import annotations

import gc
import os
import signal

import numpy as np
import pytest

import vmp
from models import gaussian_mixture, lda

pytestmark = pytest.mark.filterwarnings("ignore::vmp.DivergenceWarning")

HELD = "len(__import__('vmp.inference.executor_processes', fromlist=['_HELD'])._HELD)"


@pytest.fixture(scope="module")
def pool():
    with vmp.Processes(2) as executor:
        yield executor


def mixture(n=90, seed=0):
    rng = np.random.default_rng(seed)
    return gaussian_mixture(np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])[rng.integers(3, size=n)]
                            + rng.normal(size=(n, 2)), 3)


def topics(docs=40, seed=0):
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(20, 0.1), size=3)
    counts = np.stack([rng.multinomial(30, rng.dirichlet(np.full(3, 0.2)) @ beta) for _ in range(docs)])
    d, w = np.nonzero(counts)
    return lda(d, w, counts[d, w], 3, n_words=20)


def worst_relative(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)), initial=0.0) / max(np.max(np.abs(y)), 1e-300))
               for k in b.natural for x, y in zip(a.natural[k], b.natural[k]))


FITS = {
    "batch": dict(iterations=6, tol=0),
    "minibatch": dict(method="stochastic", subsample=vmp.Minibatch("documents", 8), iterations=4, evaluate_every=2),
    "pernode": dict(method="stochastic", subsample=vmp.PerNode(children=5), iterations=4, evaluate_every=2),
}


@pytest.mark.parametrize("fit", sorted(FITS))
def test_serial_answers_and_the_same_bits_twice(pool, fit):
    """LDA batch, Minibatch and PerNode: q and the bounds within 1e-12 of Serial; two runs on the
    pool give the same bits (its sums are added by one fixed tree)."""
    options = dict(seed=5, progress=False, **FITS[fit])
    serial = topics().fit(**options)
    runs = [topics().fit(executor=pool, **options) for _ in range(2)]
    assert worst_relative(runs[0].state, serial.state) < 1e-12
    np.testing.assert_allclose(runs[0].elbo, serial.elbo, rtol=1e-12)
    assert worst_relative(runs[1].state, runs[0].state) == 0.0
    np.testing.assert_array_equal(runs[1].elbo, runs[0].elbo)


def test_the_values_left_on_the_processes_are_forgotten(pool):
    """Each sweep leaves the new locals on the processes; the old ones, once the driver no
    longer refers to them, are dropped there: as many values held after three fits as after one."""
    def held():
        return sum(pool.workers.get([pool.workers.run(i, eval, HELD) for i in range(2)]))

    mixture().fit(executor=pool, iterations=8, tol=0, seed=1, progress=False)
    after_one = held()
    for seed in (2, 3, 4):
        mixture().fit(executor=pool, iterations=8, tol=0, seed=seed, progress=False)
    assert held() <= after_one + 2


def test_a_killed_process_does_not_lose_the_fit():
    """One of the two processes is killed between sweeps; it is started again, its holder put
    there again, its locals made again: Serial's answer."""
    options = dict(iterations=6, tol=0, seed=2, progress=False)
    serial = mixture().fit(**options)
    with vmp.Processes(2) as executor:
        fit = mixture().batch(executor=executor, **options)
        fit.run(3)
        pid = executor.workers.get([executor.workers.run(1, os.getpid)])[0]
        os.kill(pid, signal.SIGKILL)
        fit.run()
        result = fit.result()
    assert worst_relative(result.state, serial.state) < 1e-12


def test_close_stops_the_processes():
    executor = vmp.Processes(2)
    mixture().fit(executor=executor, iterations=2, seed=0, progress=False)
    pids = executor.workers.get([executor.workers.run(i, os.getpid) for i in range(2)])
    executor.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_executor_no_longer_held_stops_its_processes():
    executor = vmp.Processes(1)
    mixture().fit(executor=executor, iterations=2, seed=0, progress=False)
    pid = executor.workers.get([executor.workers.run(0, os.getpid)])[0]
    del executor
    gc.collect()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("n", [0, -1, 1.5, True])
def test_a_count_of_processes_that_is_not_a_positive_integer_is_refused(n):
    with pytest.raises(vmp.VMPError, match="Processes: n takes a positive number of processes"):
        vmp.Processes(n)
