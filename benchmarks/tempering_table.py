"""Annealing and global variational tempering against plain SVI (Mandt et al.), 10 seeds.

Mixture: the 4-cluster data of benchmarks/paisley_gmm.py, K = 8, minibatches of 25. LDA: a corpus
sampled from LDA (K = 5, V = 50, 300 documents), minibatches of 20 documents. Methods: SVI;
annealing, T falling linearly from 5 to 1 over the first half of the steps; global tempering over
20 temperatures from 1 to 10, and local tempering over 10 (mixture only here: tempering on LDA is
benchmarks/tempering_lda.py's experiment). Reports the final ELBO (at T = 1, locals optimized on
all training data) and the held-out bound per datapoint (10% of the plate held out).

    python benchmarks/tempering_table.py [--seeds 10] [--out docs/figures/tempering.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import vmp  # noqa: E402
from vmp.models import gaussian_mixture, lda  # noqa: E402
from paisley_gmm import data as mixture_data  # noqa: E402


def lda_corpus(seed=0, k=5, v=50, docs=300, length=60):
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    d, w, c = [], [], []
    for doc in range(docs):
        counts = rng.multinomial(length, rng.dirichlet(np.full(k, 0.3)) @ beta)
        nz = np.flatnonzero(counts)
        d += [doc] * nz.size
        w += nz.tolist()
        c += counts[nz].tolist()
    return np.array(d), np.array(w), np.array(c, float), v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "figures" / "tempering.md")
    args = ap.parse_args(argv)
    x = mixture_data()
    d, w, c, v = lda_corpus()
    half = args.steps // 2
    methods = {
        "SVI": lambda: [],
        "annealing (T: 5 -> 1)": lambda: [vmp.Annealing.linear(5.0, half)],
        "global tempering": lambda: [vmp.Tempering(np.geomspace(1.0, 10.0, 20), samples=50)],
        "local tempering": lambda: [vmp.LocalTempering(np.geomspace(1.0, 10.0, 10))],
    }
    rows = []
    for name, build, plate, size in (("mixture", lambda: gaussian_mixture(x, 8), "data", 25),
                                     ("LDA", lambda: lda(d, w, c, 5, n_words=v), "documents", 20)):
        for label, policies in methods.items():
            if name == "LDA" and "tempering" in label:
                rows.append((name, label, None, None, None))
                continue
            elbos, held = [], []
            for seed in range(args.seeds):
                res = build().fit(method="stochastic", subsample=vmp.Minibatch(plate, size, holdout=0.1),
                                  step=vmp.RobbinsMonro(tau=1.0, kappa=0.7), iterations=args.steps,
                                  evaluate_every=args.steps, seed=seed, policies=policies(), progress=False)
                elbos.append(res.final_elbo)
                held.append(res.history["evaluations"]["heldout"][-1])
            rows.append((name, label, np.mean(elbos), np.std(elbos), np.mean(held)))
            print(f"{name:8s} {label:24s} ELBO {np.mean(elbos):10.2f} +- {np.std(elbos):7.2f}  "
                  f"held-out bound per datapoint {np.mean(held):9.4f}", flush=True)
    table = ["| model | method | final ELBO (mean of seeds) | sd | held-out bound per datapoint |",
             "|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r[0]} | {r[1]} | n/a | | n/a |" if r[2] is None else
                     f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.4f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(table) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
