"""A pool of processes on this machine as the executor: the multi-core path without a cluster.

:class:`~vmp.inference.executor_partitioned.Partitioned` over ``n`` worker processes, each a
one-process ``concurrent.futures.ProcessPoolExecutor`` (so partition i's tasks always run, in the
order they were sent, in the process that holds its rows). A value a task leaves on a worker
(a partition's holder, a local's kept rows) stays in that process under a key; a reference to it
sent in a later task is read there as the value itself, and a reference the driver no longer
holds is forgotten there before the worker's next task. Sums come here and are added by the same
fixed tree as on a cluster, so the same seed gives the same bits run to run.

Workers start with ``spawn`` (a script that starts them runs its own code under
``if __name__ == "__main__":``) and one BLAS thread each (``threads``), once per executor; a fit
puts its own holders on them. A worker that dies is started again and the step sent again
(``retries``).

    with vmp.Processes(4) as executor:
        model.fit(executor=executor)
"""
from __future__ import annotations

import itertools
import multiprocessing
import os
import weakref
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..errors import VMPError
from .executor_partitioned import Partitioned, Workers

#: the values this worker process holds, by key
_HELD: dict = {}
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _value(key: int):
    """In a worker: the value held under ``key`` (what a reference unpickles to there)."""
    return _HELD[key]


def _keep(forget: list, key: int, fn, args: tuple) -> None:
    for k in forget:
        _HELD.pop(k, None)
    _HELD[key] = fn(*args)


def _run(forget: list, fn, args: tuple):
    for k in forget:
        _HELD.pop(k, None)
    return fn(*args)


def _identity(value):
    return value


class _Ref:
    """A value held by worker ``worker`` under ``key`` (made by ``future``'s task, in the
    worker's ``generation``); sent to that worker, it is read as the value."""

    def __init__(self, worker: int, key: int, future: Future, generation: int):
        self.worker, self.key, self.future, self.generation = worker, key, future, generation

    def __reduce__(self):
        return _value, (self.key,)

    def asked(self, workers: "ProcessWorkers") -> Future:
        """The value, asked of its worker."""
        return workers._submit(self.worker, _run, _identity, (self,))[1]


class _Result:
    """The value a task brings here."""

    def __init__(self, future: Future):
        self.future = future

    def asked(self, workers: "ProcessWorkers") -> Future:
        return self.future


class ProcessWorkers(Workers):
    """``n`` worker processes, one ``ProcessPoolExecutor`` of one process each."""

    def __init__(self, n: int, threads: int = 1):
        self.n, self.threads = n, threads
        self._pools: list = [None] * n
        self._generation = [0] * n
        self._forget: list = [[] for _ in range(n)]
        self._keys = itertools.count()

    def _pool(self, w: int) -> ProcessPoolExecutor:
        """Worker ``w``'s pool, started (again, after it broke) with ``threads`` BLAS threads."""
        if self._pools[w] is None:
            saved = {k: os.environ.get(k) for k in _THREADS}
            os.environ.update({k: str(self.threads) for k in _THREADS})
            try:
                pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
                pool.submit(int).result()  # the process starts now, with these threads
            finally:
                for k, v in saved.items():
                    os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
            self._pools[w] = pool
            self._generation[w] += 1
            self._forget[w] = []
        return self._pools[w]

    def _submit(self, i: int, fn, *args) -> tuple[int, Future]:
        w = i % self.n
        forget, self._forget[w] = self._forget[w], []
        try:
            return w, self._pool(w).submit(fn, forget, *args)
        except BrokenProcessPool:
            self._pools[w] = None
            return w, self._pool(w).submit(fn, [], *args)

    def _held(self, i: int, fn, args: tuple) -> _Ref:
        key = next(self._keys)
        w, future = self._submit(i, _keep, key, fn, args)
        ref = _Ref(w, key, future, self._generation[w])
        weakref.finalize(ref, self._drop, w, key, ref.generation)
        return ref

    def _drop(self, w: int, key: int, generation: int) -> None:
        """Forget ``key`` on worker ``w`` before its next task (nothing to forget on a worker
        started again since)."""
        if generation == self._generation[w]:
            self._forget[w].append(key)

    def count(self) -> int:
        return self.n

    def put(self, i, value):
        return self._held(i, _identity, (value,))

    send = put

    def keep(self, i, fn, *args):
        return self._held(i, fn, args)

    def run(self, i, fn, *args):
        return _Result(self._submit(i, _run, fn, args)[1])

    def get(self, refs):
        asked = [r.asked(self) for r in refs]
        return [f.result() for f in asked]

    def alive(self, ref) -> bool:
        return ref.generation == self._generation[ref.worker] and self._pools[ref.worker] is not None \
            and not (ref.future.done() and ref.future.exception() is not None)

    def lost(self, err: BaseException) -> bool:
        """A worker process that died (its pool broke): the broken pools are started again at
        their next task."""
        if not isinstance(err, BrokenProcessPool):
            return False
        for w, pool in enumerate(self._pools):
            try:
                pool is not None and pool.submit(int)
            except BrokenProcessPool:
                self._pools[w] = None
        return True

    def close(self) -> None:
        for pool in self._pools:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pools = [None] * self.n


class Processes(Partitioned):
    """Sums over the data plate on ``n`` processes of this machine (default: its cores).

    ``plate``, ``partitions`` (default: ``n``), ``retries``: as
    :class:`~vmp.inference.executor_dask.DaskExecutor`; ``threads``: BLAS threads per process.
    ``close()`` (or leaving a ``with`` block, or dropping the executor) stops the processes.
    """

    def __init__(self, n: int | None = None, plate: str | None = None, partitions: int | None = None,
                 retries: int = 3, threads: int = 1):
        n = (os.cpu_count() or 1) if n is None else n
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise VMPError(f"Processes: n takes a positive number of processes, got {n!r}")
        super().__init__(ProcessWorkers(n, threads), plate, partitions, retries)
        weakref.finalize(self, self.workers.close)  # an executor no longer held stops its processes

    def __repr__(self) -> str:
        return f"Processes({self.workers.n}, plate={self.plate_name!r}, partitions={self.n_partitions!r})"

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
