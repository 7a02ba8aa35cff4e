"""Where a Dask partition's batch sweep spends its time, in one process: each global's target
and the bound over all N rows (the Serial path, whose memos reuse the data-plate sums and the
summed messages) against the same computations restricted to rows 0..N/2 (a partition's
Context, where those memos are off), and on a holder's partition model under the stable Context a
Dask worker uses (the memos on). CPU time, fastest of 3, BLAS as set by OMP_NUM_THREADS.

    OMP_NUM_THREADS=1 python examples/profile_partition.py --n 1000000
"""
from __future__ import annotations

import argparse
import os
import pickle
import time

import numpy as np

import vmp
import vmp.models
from vmp.inference.engine import Engine
from vmp.inference.partition import rows_bound, rows_context, rows_of
from vmp.inference.partition_model import partition_blob

from _bench import FACTORIZED  # the mixture measured here


def cpu(f, repeat: int = 3) -> float:
    best = np.inf
    for _ in range(repeat):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--d", type=int, default=4)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(a.n, a.d)) + rng.integers(0, 5, size=(a.n, 1))
    model = vmp.models.gaussian_mixture(x, a.k, **FACTORIZED)
    state = model.fit(iterations=2, tol=0, seed=0, progress=False).state
    engine = Engine(model)
    half = a.n // 2
    local = {"z": rows_of(state.moments["z"], 0, 0, half)}
    ctx = rows_context("data", 0, half, local, state)
    holder = Engine(pickle.loads(partition_blob(model, {"data": (0, half)})))
    kept = rows_context("data", 0, half, {"z": tuple(np.ascontiguousarray(m) for m in local["z"])}, state, stable=True)
    print(f"N = {a.n:,}, K = {a.k}, D = {a.d}; BLAS threads {os.environ.get('OMP_NUM_THREADS', 'as installed')}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| computation | all N rows, unrestricted (ms CPU) | rows 0..N/2, restricted (ms CPU) "
          "| rows 0..N/2 on a holder, stable Context (ms CPU) |")
    print("|---|---|---|---|")
    for name in ("pi", "mu", "Lambda"):
        node = model[name]
        print(f"| target of {name} | {cpu(lambda: engine.target(state, node)) * 1e3:.1f} | "
              f"{cpu(lambda: engine.target(state, node, ctx=ctx)) * 1e3:.1f} | "
              f"{cpu(lambda: holder.target(state, holder.nodes[name], ctx=kept)) * 1e3:.1f} |")
    print(f"| target of z | {cpu(lambda: engine.target(state, model['z'])) * 1e3:.1f} | - | - |")
    natural = {"z": rows_of(state.natural["z"], 0, 0, half)}
    print(f"| bound | {cpu(lambda: engine.elbo(state)) * 1e3:.1f} | "
          f"{cpu(lambda: rows_bound(engine, model.plates['data'], ctx, natural)) * 1e3:.1f} | "
          f"{cpu(lambda: rows_bound(holder, holder.model.plates['data'], kept, natural)) * 1e3:.1f} |")

if __name__ == "__main__":
    main()
