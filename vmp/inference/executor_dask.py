"""A Dask cluster as the executor: the partitions of the data plate live on its workers.

:class:`~vmp.inference.executor_partitioned.Partitioned` over a ``distributed.Client``: a
partition's holder is scattered to a worker chosen round-robin (not in the task graph, so a lost
worker's holders are put again by the executor, which Dask cannot recompute), tasks run where
their holder is, the tree of additions runs on the workers up to its last addition (one hop less
per round), and the locals' slices sent from the driver ride in the task graph so that the
scheduler can rebuild them after a lost worker. Use one thread per worker process (the engine's
plan cache is not thread-safe).

    from dask.distributed import Client, LocalCluster
    client = Client(LocalCluster(n_workers=2, processes=True, host="127.0.0.1"))
    model.fit(executor=vmp.DaskExecutor(client))
"""
from __future__ import annotations

import contextlib
import time
import warnings

from .executor import add
from .executor_partitioned import ClusterError, Kept, Partitioned, Workers, _nbytes
from .partitioned_worker import _held

__all__ = ["ClusterError", "DaskExecutor", "Kept"]


#: how long a retry waits for a running worker to put the holders on (a killed worker's nanny
#: starts another in about a second)
RECOVERY = 30.0


#: a holder's data not put on its worker after PUT_SECONDS plus its bytes at PUT_RATE bytes a
#: second counts as lost (and is put again)
PUT_SECONDS, PUT_RATE = 10.0, 1e7


class WorkerGone(ConnectionError):
    """A worker that tasks are pinned to (a partition's holder) left the cluster: those tasks
    would wait for it for ever."""


class DaskWorkers(Workers):
    """The workers of a Dask cluster (``client``). ``poll``: every how many seconds a wait for
    results checks that the workers holding the partitions are still in the cluster."""

    def __init__(self, client, poll: float = 1.0):
        self.client, self.poll = client, poll
        self._at: dict[int, str] = {}  # partition -> the worker its holder's data were put on
        self._refused: set[str] = set()  # workers a put failed on, while the scheduler lists them

    def _running(self) -> list[str]:
        """The addresses of the workers that take data now, as the scheduler has them (its
        identity still lists a worker killed a moment ago as running), those that failed to
        take a holder's data last (a killed worker the scheduler has not yet dropped) left out
        while others run."""
        running = self.client.run_on_scheduler(_running_workers)
        self._refused &= set(running)
        return [a for a in running if a not in self._refused] or running

    def _where(self, i: int) -> list | None:
        workers = self._running()
        return [workers[i % len(workers)]] if workers else None

    def _listed(self) -> set[str]:
        """The addresses of the cluster's workers, asked of the scheduler (``Client.nthreads``):
        the client's own record of them (``Client.scheduler_info``) is replaced every 2 seconds
        by one that lists none, and read at that moment it would make one partition of two
        workers' data, whose sums add in another order: other bits for the same seed."""
        return set(self.client.nthreads())

    def count(self) -> int:
        return len(self._listed())

    def recover(self) -> None:
        """Wait (up to ``RECOVERY`` seconds) for a running worker."""
        deadline = time.monotonic() + RECOVERY
        while not self._running() and time.monotonic() < deadline:
            time.sleep(0.1)

    def put(self, i, value):
        where = self._where(i)
        if where:
            self._at[i] = where[0]
        # sent by the client to the worker itself (direct): through the scheduler, a scatter to a
        # worker killed after it was listed failed there and left the client waiting for ever;
        # with a deadline on the whole call (Client.scatter's own), past which it is retried
        seconds = PUT_SECONDS + _nbytes(value) / PUT_RATE
        try:
            return self.client.sync(self.client._scatter, [value], workers=where, hash=False, direct=True,
                                    timeout=seconds, callback_timeout=seconds)[0]
        except Exception:
            self._refused.update(where or ())
            raise

    def send(self, i, value):
        where = self._where(i)
        with _quiet():
            return self.client.submit(tuple, value, pure=False, workers=where, allow_other_workers=where is not None)

    def keep(self, i, fn, *args):
        """Run on the worker partition ``i``'s data were put on, and on no other: Dask's work
        stealing would move a task queued behind a busy worker's to an idle one with a copy of
        the holder (its arrays elsewhere in memory, without the locals of its last step), and
        the same seed would not give the same bits."""
        at = self._at.get(i)
        return self.client.submit(fn, *args, pure=False, workers=None if at is None else [at],
                                  allow_other_workers=False)

    run = keep

    def get(self, refs):
        self._settle(refs)
        return self.client.gather(refs)

    def _settle(self, refs) -> None:
        """Wait until every one of ``refs`` is done (or failed); a WorkerGone when a worker a
        partition's tasks are pinned to is no longer in the cluster (a killed worker whose nanny
        started another under a new address: the pinned tasks would never run)."""
        from distributed import wait

        while True:
            try:
                wait(refs, timeout=self.poll)
                return
            except TimeoutError:
                gone = set(self._at.values()) - self._listed()
                if gone:
                    raise WorkerGone(f"the workers {sorted(gone)} holding partitions left the cluster") from None

    def alive(self, ref) -> bool:
        return ref.status not in ("cancelled", "lost", "error")

    def reduce(self, refs):
        """The tree of additions on the workers down to its last two values."""
        while len(refs) > 2:
            refs = [self.client.submit(add, refs[j], refs[j + 1], pure=False) if j + 1 < len(refs) else refs[j]
                    for j in range(0, len(refs), 2)]
        return self.get(refs)

    def lost(self, err: BaseException) -> bool:
        """Whether ``err`` is a cluster's failure (a lost worker, a cancelled or lost result, a
        closed connection) rather than an error of the computation itself."""
        import asyncio
        import concurrent.futures

        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError

        kinds = (KilledWorker, CommClosedError, asyncio.CancelledError, concurrent.futures.CancelledError,
                 ConnectionError, TimeoutError)
        try:
            from distributed.client import FutureCancelledError

            kinds += (FutureCancelledError,)
        except ImportError:
            pass
        return isinstance(err, kinds)


def _running_workers(dask_scheduler) -> list[str]:
    """(On the scheduler) the addresses of its running workers."""
    return sorted(ws.address for ws in dask_scheduler.running)


class DaskExecutor(Partitioned):
    """Sums over the data plate on a Dask cluster (``client``: a ``distributed.Client``).

    ``plate``: the data plate to partition (default: the largest plate of an observed node that
    can be split, :func:`~vmp.inference.partition.apart`);
    ``partitions``: how many row ranges (default: the number of workers); ``retries``: how many
    times a step lost to a worker failure is sent again. ``traffic`` counts the bytes sent to the
    workers and received from them (the bytes of their arrays), the tasks and the rounds of tasks.
    """

    def __init__(self, client, plate: str | None = None, partitions: int | None = None, retries: int = 3):
        super().__init__(DaskWorkers(client), plate, partitions, retries)
        self.client = client

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, plate={self.plate_name!r}, partitions={self.n_partitions!r})"

    @staticmethod
    def holder(data: tuple, plate: str):
        """A partition's holder on a Dask worker, whose allocator is first tuned for arrays."""
        _heap_for_arrays()
        return _held(data, plate)

    def close(self) -> None:
        """Release the workers' copies of the model and the locals (the client stays open)."""
        self._holders, self._slices, self._model = [], {}, None


@contextlib.contextmanager
def _quiet():
    """Dask warns of large objects in a task graph; a batch fit's initial locals (when the
    workers did not compute them) and the old locals of a relative change ride in it on purpose,
    so that the scheduler can rebuild them after a lost worker."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]arge (object|graph)")
        yield


_TUNED: list = []


def _heap_for_arrays() -> None:
    """On a worker (once per process): ``heap.heap_for_arrays``. Dask's nanny starts workers
    with MALLOC_TRIM_THRESHOLD_=65536, which also freezes glibc's mmap threshold at 128 kB, so
    that every temporary array above it is a fresh mmap whose pages fault in again: the local
    step of a minibatch (many arrays of tokens x K) then cost about 3x its CPU time in the driver
    (measured: 58 ms against 18.5 ms per step of news-corpus LDA), and a batch sweep's N x K
    arrays at N = 10^7 up to 2.5 s of system time a sweep."""
    if not _TUNED:
        from .heap import heap_for_arrays

        _TUNED.append(heap_for_arrays())
