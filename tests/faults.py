"""Fault injection on a Dask cluster: a worker process killed (SIGKILL) at a chosen moment of a
fit. Used by tests/test_executor_dask.py (a few moments) and benchmarks/dask_faults.py (a sweep)."""
from __future__ import annotations

import os
import signal
import threading
import time


def killed_run(client, fit, moment: float):
    """Run ``fit()`` while a thread kills one of ``client``'s worker processes (the one of lowest
    pid) ``moment`` seconds after the fit starts; returns (the fit's result, whether the kill
    came before the fit returned)."""
    done = threading.Event()
    killed = []

    def kill():
        if done.wait(moment):
            return
        pids = client.run(os.getpid)
        if not done.is_set():
            os.kill(min(pids.values()), signal.SIGKILL)
            killed.append(time.perf_counter())

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    try:
        result = fit()
    finally:
        done.set()
        thread.join()
    return result, bool(killed)
