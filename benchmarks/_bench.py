"""Helpers shared by the benchmark scripts: CPU-time timing, BLAS threads, mixture sizes, a
sweep timed node by node."""
from __future__ import annotations

import time

#: models.gaussian_mixture as the mixture benchmarks here measure it: factorized q(mu_k) q(Lambda_k)
#: (nodes "mu", "Lambda"), Dirichlet(1) weights and E[Lambda_k] = S^-1 a priori
FACTORIZED = {"covariance": "factorized", "weights": "dirichlet", "alpha": 1.0, "scale": "data"}


def best_cpu(f, repeat: int) -> float:
    """The fastest of ``repeat`` calls of f in CPU seconds (process_time), after one warm-up;
    on a shared machine CPU time leaves out the waits for a core."""
    f()
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return min(times)


def limit_threads(n: int) -> str:
    """Pin BLAS (and OpenMP) to n threads in this process; what is in force, as text."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        return "unchanged (threadpoolctl not installed)"
    threadpool_limits(n)
    return ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info())


def mixture_arguments(p) -> None:
    """--n, --k, --dims of the mixture benchmarks (N = 100,000, K = 10, D = 2 and 8)."""
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--dims", type=int, nargs="+", default=[2, 8])


def sweep_by_hand(model, repeat: int = 2) -> dict:
    """More sweeps on the fitted model, timing each node's update and the ELBO (fastest of
    ``repeat``)."""
    from vmp.inference.engine import Engine

    engine = Engine(model)
    best: dict = {}
    for _ in range(repeat):
        parts = {}
        t_all = time.perf_counter()
        for node in engine.update_order():
            t0 = time.perf_counter()
            engine.update(node)
            parts[f"update {node.name}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        engine.elbo()
        parts["elbo"] = time.perf_counter() - t0
        parts["sweep+elbo"] = time.perf_counter() - t_all
        best = {k: min(v, best.get(k, float("inf"))) for k, v in parts.items()}
    return best
