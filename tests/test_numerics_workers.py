"""Regressions at scale 1e8 fitted on workers (``vmp.Processes`` and ``vmp.DaskExecutor``): the
workers read q(w) through its root and return their partitions' rows, so the bound stays monotone
and equal to the bound in the design's singular basis, as in ``tests/test_numerics.py``."""

from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.test_numerics import _blocked_regression, _groups_bound, _monotone, _q_tau, _regression


@pytest.fixture(scope="module", params=["processes", "dask"])
def partitioned(request):
    """A Processes executor of 2 processes, or a DaskExecutor on a LocalCluster of 2 workers on
    loopback, each with 2 partitions."""
    if request.param == "processes":
        with vmp.Processes(2, partitions=2) as executor:
            yield executor
        return
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address="127.0.0.1:0", silence_logs=50)
    client = distributed.Client(cluster)
    try:
        yield vmp.DaskExecutor(client, partitions=2)
    finally:
        client.close()
        cluster.close()


def test_a_regression_at_scale_1e8_fitted_on_workers_keeps_the_bound_monotone(partitioned):
    """The Processes and Dask executors sum the regression's message to w on their workers
    (2 partitions: 2 rows each of N = 4 < D = 6; 4 rows each of 8 collinear ones, more than D,
    compacted): the sum declares the partitions' rows, each partition's QR factor asked of its
    worker when the precision is ill-conditioned, and the workers read q(w) through its root
    for tau's message and their share of the bound (the centered quadratic). Every sweep's
    bound rises and the last is the bound in the design's singular basis; the same seed gives
    the same bits. (Without the root on the workers the fits raised a ConvergenceError or
    their bound fell by up to 16%.)"""
    for design in ("fewer rows", "collinear"):
        model, x, y = _blocked_regression(0, design)
        result = model.fit(iterations=8, tol=0, progress=False, executor=partitioned)
        bounds, monotone = _monotone(result)
        assert monotone, design
        assert bounds[-1] == pytest.approx(_groups_bound([(x, y)], _q_tau(model)), rel=1e-12), design
        again, _, _ = _blocked_regression(0, design)
        repeat = again.fit(iterations=8, tol=0, progress=False, executor=partitioned)
        assert np.array_equal(np.asarray(repeat.history["evaluations"]["elbo"]), result.history["evaluations"]["elbo"])
        assert all(np.array_equal(a, b) for k in ("w", "tau")
                   for a, b in zip(again.state.natural[k], model.state.natural[k]))


def test_a_stochastic_fit_of_a_regression_at_scale_1e8_on_workers_blends_the_roots(partitioned):
    """Steps of rate 1/2 over every row (N = 2 < D = 3, scale 1e8) on 2 partitions of one row:
    the target's root is stacked from the partitions' rows and blended with the last q's. The
    fit does not diverge (summed densely it diverges at 2 of 3 seeds and its bound falls at the
    third), the bound read every third step rises and ends at the bound in the design's singular
    basis."""
    model, design, obs = _regression(0)
    fit = model.stochastic(subsample=vmp.Minibatch("data", 2), step=vmp.Constant(0.5), seed=0, progress=False,
                           executor=partitioned)
    bounds = []
    for t in range(60):
        fit.step()
        if t % 3 == 2:
            bounds.append(model.elbo())
    assert not fit.result().diverged
    assert np.all(np.diff(bounds) >= -1e-12 * np.abs(bounds[1:]))
    assert bounds[-1] == pytest.approx(_groups_bound([(design, obs)], _q_tau(model)), rel=1e-10)


def test_a_stochastic_fit_with_locals_at_scale_1e8_on_workers_is_the_serial_fit(partitioned):
    """A regression (N = 2 < D = 3, scale 1e8) beside a local u_n on the same plate: a
    Minibatch fit runs its local step and the globals' sums on the workers in one round of
    tasks, which carries the Gaussian globals' roots; w's sum declares the partitions' rows,
    asked of the workers where its precision is ill-conditioned. The fit does not diverge and
    its q is the Serial fit's, whose E[w] is q(w)'s optimum given q(tau) in the design's
    singular basis; so is a fit whose steps all read the round's globals (update="global").
    Without the roots in the round these fits diverged (2 of 3 seeds; the global one at seed 0)."""
    def fit(executor, steps=60, update="per-node"):
        model, design, obs = _regression(0, local=True)
        run = model.stochastic(subsample=vmp.Minibatch("data", 2), step=vmp.Constant(0.5), seed=0, progress=False,
                               update=update, **({} if executor is None else {"executor": executor}))
        for _ in range(steps):
            run.step()
        assert not run.result().diverged
        return model, design, obs

    for steps, update in ((30, "per-node"), (20, "global")):
        serial, design, obs = fit(None, steps, update)
        model, _, _ = fit(partitioned, steps, update)
        for k in ("w", "tau"):
            for a, b in zip(model.state.natural[k], serial.state.natural[k]):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    shape, rate = _q_tau(model)
    u, s, vt = np.linalg.svd(design, full_matrices=False)
    mean = vt.T @ (shape / rate * s * (u.T @ obs) / (1.0 + shape / rate * s * s))
    np.testing.assert_allclose(vmp.families.Gaussian.moments(model.state.natural["w"])[0], mean, rtol=1e-8)
