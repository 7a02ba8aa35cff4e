"""Large arrays from the heap, an opt-in: glibc's allocator tuned so that a sweep's fresh arrays
reuse the memory the last sweep freed. ``import vmp`` and a fit change no allocator setting; the
Dask executor's workers call :func:`heap_for_arrays` (docs/scale.md gives its measured gain), and
a user may call it in their own process (``vmp.heap_for_arrays()``).

numpy asks the C library for every array. glibc serves a request above its mmap threshold
(128 kB to 32 MB, moving with use) by a fresh ``mmap``, whose pages fault in when first written,
and numpy marks arrays of 4 MB or more for transparent huge pages, which the kernel then zeroes
and compacts. A batch sweep over N = 10^7 points allocates its N x K arrays (q(z)'s natural
parameters and moments, the messages, their temporaries) anew each time, so each sweep paid
that again: 0.3 to 2.5 s of system time on top of about 1.0 s of work (mixture, K = 10, D = 4,
one process; docs/scale.md). With arrays of up to ``max_bytes`` served from the heap, freed
arrays are reused and a sweep takes 1.0 s every time.
"""
from __future__ import annotations

#: glibc's mallopt parameters
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: arrays up to MMAP_THRESHOLD come from the heap; it is given back to the system above
#: TRIM_THRESHOLD of free memory at its top
MMAP_THRESHOLD, TRIM_THRESHOLD = 1 << 30, 64 << 20


def heap_for_arrays(max_bytes: int = MMAP_THRESHOLD, trim_bytes: int = TRIM_THRESHOLD) -> bool:
    """Serve allocations of up to ``max_bytes`` from the heap, and give the heap's free top back
    to the system only above ``trim_bytes``, for this whole process (glibc's ``mallopt``; it also
    stops glibc from moving the threshold by itself). Returns whether the C library took both
    settings (False on other C libraries: their defaults stay). Dask workers of a
    ``DaskExecutor`` call it on their first task; in your own process it is your choice: memory
    freed by large arrays then stays with the process for reuse, up to ``trim_bytes`` above what
    is in use at the heap's top."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, int(max_bytes))) and \
            bool(libc.mallopt(M_TRIM_THRESHOLD, int(trim_bytes)))
    except (OSError, AttributeError):
        return False


#: the same settings as environment variables of processes about to start, with every thread in
#: the main malloc arena (``MALLOC_ARENA_MAX=1``: a thread's own arena serves an array above
#: 64 MB by a fresh mmap whatever the threshold, and ``mallopt`` after start cannot move a thread
#: that has one): for Dask workers, merged into Dask's own by :func:`worker_environ` (a Nanny's
#: ``env=`` is set after its worker has started: too late)
WORKER_ENVIRON = {"MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD), "MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
                  "MALLOC_ARENA_MAX": "1"}


def worker_environ() -> dict:
    """Dask's ``distributed.nanny.pre-spawn-environ`` as now configured (by default one BLAS
    and OpenMP thread per worker: ``OMP_NUM_THREADS=1`` ...) with :data:`WORKER_ENVIRON` on top:
    for ``dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ()})`` before
    the cluster starts. Setting :data:`WORKER_ENVIRON` alone replaces Dask's defaults, and each
    worker's BLAS then starts a thread per core."""
    import dask

    return {**dask.config.get("distributed.nanny.pre-spawn-environ", default={}), **WORKER_ENVIRON}
