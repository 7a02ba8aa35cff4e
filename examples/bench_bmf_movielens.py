"""Benchmark: Bayesian matrix factorization (batch VMP) on MovieLens (ml-latest-small).

Reads ratings.csv (columns userId,movieId,rating,timestamp), maps the ids to 0..M-1 and 0..N-1,
and fits models.matrix_factorization with K factors and tau ~ Gamma, both the structured
q(u_m) q(v_n) (factorized=False) and the fully factorized q(u_mk) q(v_nk) (factorized=True),
for a fixed number of sweeps (tol=0). Prints seconds per sweep (fit time / sweeps, fastest of
--repeat identical fits, as the machine may be shared; the fit includes initialization and the
initial ELBO), a hand-timed sweep broken down by node, the training RMSE of E[u_m].E[v_n] and
E[tau].

    python examples/bench_bmf_movielens.py [path/to/ratings.csv] [--k 10] [--iterations 10]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT = ROOT.parent / "shared" / "data" / "movielens-small" / "ratings.csv"


def load(path: pathlib.Path):
    if not path.is_file():
        sys.exit(f"bench_bmf_movielens.py: ratings file not found: {path}\n"
                 "Give the path to MovieLens ml-latest-small ratings.csv as the first argument "
                 "(https://grouplens.org/datasets/movielens/).")
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    try:
        cu, ci, cr = header.index("userId"), header.index("movieId"), header.index("rating")
    except ValueError:
        sys.exit(f"bench_bmf_movielens.py: {path} has columns {header}; expected userId,movieId,rating,...")
    raw = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(cu, ci, cr))
    _, users = np.unique(raw[:, 0].astype(np.int64), return_inverse=True)
    _, items = np.unique(raw[:, 1].astype(np.int64), return_inverse=True)
    return users.ravel(), items.ravel(), raw[:, 2].astype(float)


def rmse(model, users, items, ratings, offset=0.0) -> float:
    pred = offset + np.einsum("rk,rk->r", model["u"].mean[users], model["v"].mean[items])
    return float(np.sqrt(np.mean((pred - ratings) ** 2)))


def sweep_by_hand(model, repeat: int = 2) -> dict:
    """More sweeps on the fitted model, timing each node's update and the ELBO (fastest of
    ``repeat``)."""
    from vmp.inference.engine import Engine

    engine = Engine(model)
    best: dict = {}
    for _ in range(repeat):
        parts = {}
        t_all = time.perf_counter()
        for node in engine.schedule():
            t0 = time.perf_counter()
            engine.update(node)
            parts[f"update {node.name}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        engine.elbo()
        parts["elbo"] = time.perf_counter() - t0
        parts["sweep+elbo"] = time.perf_counter() - t_all
        best = {k: min(v, best.get(k, np.inf)) for k, v in parts.items()}
    return best


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", default=str(DEFAULT), help=f"ratings.csv (default {DEFAULT})")
    p.add_argument("--k", type=int, default=10, help="number of factors")
    p.add_argument("--iterations", type=int, default=10, help="VMP sweeps per fit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2, help="timed fits per variant; the fastest is reported")
    p.add_argument("--center", action="store_true", help="subtract the global mean rating first")
    p.add_argument("--only", choices=("structured", "factorized"), help="run one variant")
    p.add_argument("--no-sweep", action="store_true", help="skip the hand-timed extra sweep")
    args = p.parse_args(argv)

    users, items, ratings = load(pathlib.Path(args.path))
    import vmp  # noqa: F401
    from vmp.models import matrix_factorization

    offset = float(ratings.mean()) if args.center else 0.0
    target = ratings - offset
    m, n = int(users.max()) + 1, int(items.max()) + 1
    print(f"MovieLens: {ratings.size} ratings, {m} users x {n} items (density {ratings.size / (m * n):.4f}); "
          f"K={args.k}, {args.iterations} sweeps, tol=0, seed={args.seed}, best of {args.repeat} fits"
          + (f", centred at {offset:.3f}" if args.center else ""))
    print(f"ratings: mean {ratings.mean():.3f}, std {ratings.std():.3f} "
          f"(RMSE of predicting the global mean)")

    variants = [("structured", False), ("factorized", True)]
    if args.only:
        variants = [v for v in variants if v[0] == args.only]
    rows = []
    for label, factorized in variants:
        t0 = time.perf_counter()
        model = matrix_factorization(users, items, target, n_factors=args.k, factorized=factorized)
        build = time.perf_counter() - t0
        res = model.fit(iterations=args.iterations, tol=0, seed=args.seed)
        fit_s = [res.seconds]
        for _ in range(args.repeat - 1):  # the same fit again (same seed): keep the fastest time
            fit_s.append(model.fit(iterations=args.iterations, tol=0, seed=args.seed).seconds)
        steps = np.diff(res.elbo)
        monotone = bool(np.all(steps >= -1e-9 * np.abs(res.elbo[1:])))
        row = dict(label=label, build=build, total=min(fit_s), iters=res.iterations,
                   per=min(fit_s) / max(res.iterations, 1), rmse=rmse(model, users, items, ratings, offset),
                   tau=float(model["tau"].mean), elbo=res.final_elbo, monotone=monotone, message=res.message)
        if not args.no_sweep:
            row["sweep"] = sweep_by_hand(model, args.repeat)
        rows.append(row)
        print(f"  done {label}: fits took {[round(t, 1) for t in fit_s]} s ({res.message})",
              file=sys.stderr, flush=True)

    head = (f"{'q':<11} {'sweeps':>6} {'build s':>7} {'fit s':>8} {'s/sweep':>8} {'train RMSE':>10} "
            f"{'E[tau]':>8} {'1/sqrt(E[tau])':>14} {'final ELBO':>12} {'monotone':>8}")
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['label']:<11} {r['iters']:>6} {r['build']:>7.2f} {r['total']:>8.2f} {r['per']:>8.3f} "
              f"{r['rmse']:>10.4f} {r['tau']:>8.3f} {1 / np.sqrt(r['tau']):>14.4f} {r['elbo']:>12.1f} "
              f"{str(r['monotone']):>8}")
    for r in rows:
        if "sweep" in r:
            parts = ", ".join(f"{k} {v:.3f}s" for k, v in r["sweep"].items())
            print(f"{r['label']} sweep by hand: {parts}")


if __name__ == "__main__":
    main()
