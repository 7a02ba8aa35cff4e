"""A Dask worker killed (SIGKILL) at random moments of batch and stochastic fits: each fit must
finish with the unharmed run's bits.

On a LocalCluster of two worker processes (loopback), with two partitions (the partitions, not
the workers that happen to run when a fit starts, fix the order of the sums), for each fit (batch VMP, Minibatch and
PerNode SVI on the Gaussian mixture of tests/test_executor_dask.py) one unharmed run is timed,
then ``--kills`` runs each have a worker killed at a moment drawn (from ``--seed``) uniformly in
5%-95% of the unharmed run's time. Prints, per fit, how many kills landed before the fit ended,
how many runs ended with the unharmed bits, and the slowest run; exits 1 if any run did not.

    python benchmarks/dask_faults.py [--kills 10] [--seed 0] [--fits batch minibatch pernode]
"""
from __future__ import annotations

import argparse
import faulthandler
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import vmp  # noqa: E402
from tests.faults import killed_run  # noqa: E402
from tests.test_executor_dask import FITS, _bits, _cluster, mixture, worst_relative  # noqa: E402

#: seconds after which a run counts as hung
HUNG = 120


class Cluster:
    """A LocalCluster of two worker processes, started again when a killed worker's nanny does
    not bring one back (``client()`` waits for both workers)."""

    def __init__(self):
        self.cluster, self._client = _cluster()
        self.restarts = 0

    def client(self):
        try:
            self._client.wait_for_workers(2, timeout=60)
        except Exception:  # noqa: BLE001 - a nanny that gave up: a new cluster
            self.close()
            self.cluster, self._client = _cluster()
            self.restarts += 1
        return self._client

    def close(self) -> None:
        self._client.close()
        self.cluster.close()


def sweep(cluster: Cluster, fit: str, kills: int, rng: np.random.Generator) -> tuple[int, int, float]:
    """(kills that landed, runs with the unharmed bits, slowest run in seconds)."""
    options = {**FITS[fit]("data", 10), "iterations": 8}

    def run(client):
        return mixture().fit(seed=2, progress=False, executor=vmp.DaskExecutor(client, partitions=2), **options)

    client = cluster.client()
    run(client)  # warm the workers
    start = time.perf_counter()
    unharmed = run(client)
    took = time.perf_counter() - start
    landed = same = 0
    slowest = 0.0
    for _ in range(kills):
        client = cluster.client()
        start = time.perf_counter()
        moment = rng.uniform(0.05, 0.95) * took
        faulthandler.dump_traceback_later(HUNG, exit=True)  # a run that hangs shows where, and ends the script
        result, killed = killed_run(client, lambda: run(client), moment)
        faulthandler.cancel_dump_traceback_later()
        slowest = max(slowest, time.perf_counter() - start)
        landed += killed
        if _bits(result.state) == _bits(unharmed.state):
            same += 1
        else:
            print(f"  {fit}: killed at {moment:.2f} s: {result.iterations} iterations ({unharmed.iterations} "
                  f"unharmed), {worst_relative(result.state, unharmed.state):.3g} largest relative difference",
                  flush=True)
    return landed, same, slowest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fits", nargs="+", default=["batch", "minibatch", "pernode"], choices=sorted(FITS))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(args.seed)
    cluster = Cluster()
    failed = False
    try:
        for fit in args.fits:
            landed, same, slowest = sweep(cluster, fit, args.kills, rng)
            failed |= same < args.kills
            print(f"{fit}: {args.kills} runs, {landed} kills before the fit ended, {same} with the unharmed bits, "
                  f"slowest run {slowest:.1f} s", flush=True)
    finally:
        cluster.close()
    print(f"clusters started again (a nanny that did not bring its worker back): {cluster.restarts}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
