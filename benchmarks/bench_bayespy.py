"""Benchmark: batch VMP on the Bayesian Gaussian mixture against BayesPy's VB.

The data of benchmarks/bench_mixture.py (N = 100,000 points from K = 10 seeded clusters, D = 2 and 8),
the factorized mixture ``vmp.models.gaussian_mixture(x, K, **FACTORIZED)`` (benchmarks/_bench.py) declared in both libraries with the same priors
(pi ~ Dir(1), mu_k ~ N(m0, (1e-2 S^-1)^-1), Lambda_k ~ W(D, S^-1 / D), S the data covariance;
in BayesPy, its documented GMM: Dirichlet, Categorical, Gaussian, Wishart and
Mixture(z, Gaussian, mu, Lambda), with Wishart's V = D S, the inverse scale) and the same initial
q: vmp's initialization (k-means++ means, one E-step) copied into BayesPy's natural parameters.

One iteration is, in both, one coordinate sweep over the hidden nodes in vmp's schedule order and
the lower bound (BayesPy's ``VB.update()`` computes it every iteration): vmp runs
``steps.sweep`` then ``Engine.elbo``; ``model.fit(iterations=I, tol=0)`` is also timed, its
k-means++ initialization and history included, as the time per iteration a user sees. Times are CPU seconds (``time.process_time``) with BLAS on
--threads threads (default 1), so the load of a shared machine does not count; wall seconds are
printed beside them. BayesPy runs --bayespy-iterations iterations only (it is slow); both start
from the same q, so their bounds after each of those iterations must agree (printed as the
largest relative difference: the two libraries ran the same computation).

    python benchmarks/bench_bayespy.py                     # N=100000, K=10, D=2 and 8
    python benchmarks/bench_bayespy.py --n 20000 --dims 8 --iterations 5 --bayespy-iterations 2
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
for path in (str(HERE.parent), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

from _bench import FACTORIZED  # noqa: E402


def thread_env(threads: int) -> None:
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)


def require_bayespy():
    try:
        import bayespy.nodes as nodes
        from bayespy.inference import VB
    except ImportError:
        sys.exit("bench_bayespy.py: BayesPy is needed for the comparison; install it with "
                 "`pip install bayespy` (or `pip install -e '.[dev]'`)")
    return nodes, VB


def bayespy_mixture(x, k: int, prior: dict, state, order: list):
    """BayesPy's GMM with vmp's priors, its q set from vmp's ``state``; returns (VB, nodes)."""
    import numpy as np

    bp, VB = require_bayespy()
    n, d = x.shape
    nodes = {"pi": bp.Dirichlet(prior["alpha"]),
             "mu": bp.Gaussian(prior["m0"], prior["P0"], plates=(k,)),
             "Lambda": bp.Wishart(prior["nu0"], np.linalg.inv(prior["W0"]), plates=(k,))}
    nodes["z"] = bp.Categorical(nodes["pi"], plates=(n,))
    y = bp.Mixture(nodes["z"], bp.Gaussian, nodes["mu"], nodes["Lambda"])
    y.observe(x)
    phi = {  # vmp's natural parameters in BayesPy's conventions (tests/test_bayespy.py)
        "pi": lambda e: [e[0] + 1.0],
        "mu": lambda e: list(e),
        "Lambda": lambda e: [e[0], e[1] + 0.5 * (d + 1)],
        "z": lambda e: list(e),
    }
    for name, node in nodes.items():
        node.phi = [np.array(p, float) for p in phi[name](state.natural[name])]
        node._update_moments_and_cgf()
    return VB(y, *[nodes[name] for name in order]), nodes


def run(x, k: int, iterations: int, bp_iterations: int, seed: int) -> dict:
    import numpy as np

    from vmp.inference import steps
    from vmp.inference.engine import Engine
    from vmp.inference.init import initialize
    from vmp.models import gaussian_mixture

    model = gaussian_mixture(x, n_components=k, **FACTORIZED)
    engine = Engine(model)
    start = initialize(engine, np.random.default_rng(seed))
    order = [node.name for node in engine.hidden]
    d = x.shape[1]
    cov = np.atleast_2d(np.cov(x, rowvar=False)) + 1e-6 * np.eye(d)
    prec = np.linalg.inv(cov)
    prior = {"alpha": np.ones(k), "m0": x.mean(0), "P0": 1e-2 * prec, "nu0": float(d), "W0": prec / d}

    out = {"vmp_cpu": [], "vmp_wall": [], "vmp_bound": [], "bp_cpu": [], "bp_wall": [], "bp_bound": []}
    state = start
    for _ in range(iterations):
        c0, t0 = time.process_time(), time.perf_counter()
        state, _ = steps.sweep(engine, state, engine.hidden)
        bound = engine.elbo(state)
        out["vmp_cpu"].append(time.process_time() - c0)
        out["vmp_wall"].append(time.perf_counter() - t0)
        out["vmp_bound"].append(bound)

    c0, t0 = time.process_time(), time.perf_counter()
    fit = gaussian_mixture(x, n_components=k, **FACTORIZED).fit(iterations=iterations, tol=0, seed=seed)
    out["fit_cpu"] = (time.process_time() - c0) / fit.iterations
    out["fit_wall"] = (time.perf_counter() - t0) / fit.iterations

    vb, _ = bayespy_mixture(x, k, prior, start, order)
    out["bp_start"], out["vmp_start"] = vb.compute_lowerbound(), engine.elbo(start)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(bp_iterations):
            c0, t0 = time.process_time(), time.perf_counter()
            vb.update(verbose=False)
            out["bp_cpu"].append(time.process_time() - c0)
            out["bp_wall"].append(time.perf_counter() - t0)
            out["bp_bound"].append(vb.L[vb.iter - 1])
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--dims", type=int, nargs="+", default=[2, 8])
    p.add_argument("--iterations", type=int, default=10, help="vmp iterations")
    p.add_argument("--bayespy-iterations", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="BLAS threads")
    args = p.parse_args(argv)
    thread_env(args.threads)

    import numpy as np

    from _bench import limit_threads
    from bench_mixture import make_data

    require_bayespy()
    import bayespy

    blas = limit_threads(args.threads)
    load = os.getloadavg()
    print(f"Gaussian mixture: N={args.n}, K={args.k}, seed={args.seed}; vmp {args.iterations} iterations, "
          f"BayesPy {bayespy.__version__} {args.bayespy_iterations} iterations from the same q; "
          f"numpy {np.__version__}, BLAS {blas}; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    rows = []
    for d in args.dims:
        x, _ = make_data(args.n, args.k, d, args.seed)
        r = run(x, args.k, args.iterations, args.bayespy_iterations, args.seed)
        j = min(args.iterations, args.bayespy_iterations)
        agree = max(abs(a - b) / abs(b) for a, b in zip(r["vmp_bound"][:j] + [r["vmp_start"]],
                                                        r["bp_bound"][:j] + [r["bp_start"]]))
        vmp_cpu, bp_cpu = float(np.mean(r["vmp_cpu"])), float(np.mean(r["bp_cpu"]))
        rows.append((d, vmp_cpu, bp_cpu, r["fit_cpu"]))
        print(f"  D={d}: vmp {vmp_cpu:.4f} s/iteration CPU (wall {np.mean(r['vmp_wall']):.4f}); "
              f"BayesPy {bp_cpu:.3f} s/iteration CPU (wall {np.mean(r['bp_wall']):.3f}); "
              f"bounds after {j} iterations: vmp {r['vmp_bound'][j - 1]:.6e}, BayesPy {r['bp_bound'][j - 1]:.6e} "
              f"(largest relative difference {agree:.1e}); vmp's model.fit {r['fit_cpu']:.4f} s/iteration CPU "
              f"(wall {r['fit_wall']:.4f}, its initialization included)", flush=True)
    print()
    print(f"ratios, mean CPU time per iteration (load average at the end {os.getloadavg()[0]:.2f}):")
    for d, vmp_cpu, bp_cpu, fit_cpu in rows:
        print(f"  D={d}: BayesPy / vmp = {bp_cpu / vmp_cpu:.1f}x; BayesPy / vmp's model.fit = "
              f"{bp_cpu / fit_cpu:.1f}x (goal at D = 8: at least 10x)")


if __name__ == "__main__":
    main()
