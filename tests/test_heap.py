"""vmp.heap_for_arrays: arrays freed by one sweep serve the next without page faults (glibc)."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest

PROBE = """
import resource, sys
import numpy as np
import vmp
tuned = vmp.heap_for_arrays() if sys.argv[1] == "tuned" else None
for _ in range(2):
    a = np.ones(4 << 20)  # 32 MB, as one sweep's N x K array
    del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.ones(4 << 20)
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True).stdout
    tuned, faults = out.split()
    return tuned, int(faults)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's; other C libraries keep their defaults")
def test_a_freed_large_array_is_reused_without_page_faults():
    tuned, faults = _faults("tuned")
    assert tuned == "True" and faults < 8
    _, untuned = _faults("default")
    assert untuned >= 16  # a fresh mmap: 32 MB fault in again (4 kB or 2 MB pages)


def test_worker_environ_keeps_dasks_one_blas_thread_per_worker():
    """Setting WORKER_ENVIRON alone as the nanny's pre-spawn environment dropped Dask's
    OMP_NUM_THREADS=1 (and MKL's, OpenBLAS's): each worker's BLAS then ran a thread per core."""
    dask = pytest.importorskip("dask")
    from vmp.inference.heap import WORKER_ENVIRON, worker_environ

    with dask.config.set({"distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MALLOC_TRIM_THRESHOLD_": 65536}}):
        env = worker_environ()
    assert env["OMP_NUM_THREADS"] == 1
    assert {k: env[k] for k in WORKER_ENVIRON} == WORKER_ENVIRON
