"""vmp.Adaptive() against a grid of Robbins-Monro schedules on SVI for a Gaussian mixture (or LDA).

Synthetic data as in bench_mixture.py (K seeded clusters in D dimensions), the mixture of
models.gaussian_mixture with K components, Minibatch(size) over its data; with ``--model lda``
a corpus sampled from LDA as in bench_lda.py (``--n`` documents of 150 words over a
vocabulary of 300, K topics), models.lda with K topics, Minibatch(size) over its documents.
For every seed: vmp.Adaptive(coupled=False) (Ranganath et al. 2013, per node, no tuning;
``--coupled``: the default) and vmp.RobbinsMonro(tau, kappa) for tau in {1, 10, 64}, kappa in
{0.5, 0.7, 0.9} (rho_1 = 1). The
best Robbins-Monro run of a seed is the one with the highest bound after the last step; the
table gives, for a level 1% (and 0.1%) below that bound, the first evaluated step at which each
reaches it.

    python benchmarks/adaptive_mixture.py [--n 5000] [--k 5] [--size 100] [--iterations 200] [--seeds 5]
    python benchmarks/adaptive_mixture.py --model lda --n 300 --size 30 --iterations 100 --every 10

``--samples n``, ``--per element`` and ``--coupled`` run those options of vmp.Adaptive; ``--reuse PATH`` takes
the Robbins-Monro runs from a JSON this script wrote with the same data options (only the
Adaptive runs are fitted).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import vmp  # noqa: E402
from bench_lda import synthetic_corpus, triples  # noqa: E402
from bench_mixture import make_data  # noqa: E402
from models import gaussian_mixture, lda  # noqa: E402

GRID = [(tau, kappa) for tau in (1, 10, 64) for kappa in (0.5, 0.7, 0.9)]


def reached(result, level: float) -> float:
    """The first evaluated step with a bound at or above ``level`` (inf if none)."""
    ev = result["evaluations"]
    hits = [t for t, b in zip(ev["iteration"], ev["elbo"]) if b >= level]
    return float(hits[0]) if hits else float("inf")


def builder(args, seed):
    """(a function building a fresh model, the plate its Minibatch draws from)."""
    if args.model == "lda":
        x = synthetic_corpus(args.k, 300, args.n, np.random.default_rng(seed))
        d, w, c = triples(x)
        return (lambda: lda(d, w, c, args.k, n_documents=x.shape[0], n_words=x.shape[1])), "documents"
    x, _ = make_data(args.n, args.k, args.d, seed)
    return (lambda: gaussian_mixture(x, args.k)), "data"


def run(build, plate, size, iterations, every, seed, step) -> dict:
    model = build()
    t0 = time.perf_counter()
    res = model.fit(method="stochastic", subsample=vmp.Minibatch(plate, size), step=step, iterations=iterations,
                    evaluate_every=every, seed=seed, progress=False)
    ev = res.history["evaluations"]
    return {"evaluations": {"iteration": ev["iteration"].tolist(), "elbo": ev["elbo"].tolist()},
            "final": float(ev["elbo"][-1]), "diverged": bool(res.diverged),
            "accesses": int(res.history["accesses"][-1]),
            "seconds": time.perf_counter() - t0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["mixture", "lda"], default="mixture")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=pathlib.Path, default=None, help="default docs/figures/adaptive_<model>.json")
    ap.add_argument("--samples", type=int, default=0, help="vmp.Adaptive(samples=...)")
    ap.add_argument("--per", default="node", choices=["node", "element"], help="vmp.Adaptive(per=...)")
    ap.add_argument("--coupled", action="store_true", help="vmp.Adaptive(coupled=True) (written to *_coupled.json)")
    ap.add_argument("--reuse", type=pathlib.Path, default=None,
                    help="take the Robbins-Monro runs from this JSON (written with the same data options)")
    args = ap.parse_args(argv)
    args.out = args.out or ROOT / "docs" / "figures" / f"adaptive_{args.model}{'_coupled' if args.coupled else ''}.json"
    runs: dict = {}
    rows = ["| seed | best RobbinsMonro (tau, kappa) | its final bound | Adaptive final bound | "
            "steps to 1%: RM / Adaptive (ratio) | steps to 0.1%: RM / Adaptive (ratio) |", "|---|---|---|---|---|---|"]
    for seed in range(args.seeds):
        build, plate = builder(args, seed)
        if args.reuse:
            old = json.loads(args.reuse.read_text())["runs"][str(seed)]
            seed_runs = {key: old[key] for key in old if key.startswith("RM")}
        else:
            seed_runs = {f"RM tau={tau} kappa={kappa}": run(build, plate, args.size, args.iterations, args.every, seed,
                                                             vmp.RobbinsMonro(tau=tau, kappa=kappa))
                         for tau, kappa in GRID}
        seed_runs["Adaptive"] = run(build, plate, args.size, args.iterations, args.every, seed,
                                    vmp.Adaptive(samples=args.samples, per=args.per, coupled=args.coupled))
        runs[seed] = seed_runs
        best = max((key for key in seed_runs if key.startswith("RM")), key=lambda key: seed_runs[key]["final"])
        target = seed_runs[best]["final"]
        cells = []
        for frac in (0.01, 0.001):
            level = target - frac * abs(target)
            rm, ad = reached(seed_runs[best], level), reached(seed_runs["Adaptive"], level)
            cells.append(f"{rm:.0f} / {ad:.0f} ({ad / rm:.2f})")
        rows.append(f"| {seed} | {best[3:]} | {target:.6g} | {seed_runs['Adaptive']['final']:.6g} | "
                    f"{cells[0]} | {cells[1]} |")
        print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs}, indent=1))
    print("\n".join(rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
