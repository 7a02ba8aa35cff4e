"""vmp.heap_for_arrays: arrays freed by one sweep serve the next without page faults (glibc)."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
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


def _glibc_defaults() -> dict:
    """os.environ without what fixes glibc's thresholds: a Dask LocalCluster leaves
    MALLOC_TRIM_THRESHOLD_ in os.environ, and any MALLOC_*_ variable or glibc.malloc tunable
    fixes both thresholds"""
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def _faults(mode: str, probe: str = PROBE) -> tuple[str, int]:
    """(what the probe's setup call returned, minor page faults it counted) in a fresh process
    with glibc's default thresholds."""
    out = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, check=True,
                         env=_glibc_defaults()).stdout
    setup, faults = out.split()
    return setup, int(faults)


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


NOT_GLIBC = """
import ctypes
import numpy as np


def no_such_library(name, *args, **kwargs):  # macOS, Windows, musl: there is no libc.so.6
    raise OSError(name + ": cannot open shared object file")


ctypes.CDLL = no_such_library
import vmp
print(vmp.heap_for_arrays())
with vmp.Model("one") as model:
    mu = vmp.Normal("mu", mean=0.0, precision=1.0)
    with vmp.Plate("data", 2):
        vmp.Normal("y", mean=mu, precision=1.0, observed=np.array([1.0, 2.0]))
model.fit(iterations=1, tol=0)
"""


def test_heap_for_arrays_says_it_set_nothing_where_the_c_library_is_not_glibcs():
    """Where there is no libc.so.6 (macOS, Windows, musl) heap_for_arrays returns False, and a
    fit runs as anywhere."""
    out = subprocess.run([sys.executable, "-c", NOT_GLIBC], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
