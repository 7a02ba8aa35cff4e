"""Is vmp.Adaptive()'s coupled default safe on every ready-made model fitted stochastically?

Small synthetic data per model of ``vmp.models`` (below), 200 steps of stochastic VMP with
Minibatch over the data plate (or PerNode with options (a) and (b) for the bilinear models and a
few others), for each of ``vmp.Adaptive()`` (coupled, the default), ``vmp.Adaptive(coupled=False)``
(Ranganath et al.'s rule) and ``vmp.RobbinsMonro()`` (default), seeds 0, 1, 2. The exact bound
(``evaluate="full"``) every 5 steps. Columns per case and schedule, over the seeds:

- fails: runs that raised, produced a NaN bound, or diverged (final bound below the first
  evaluation's);
- warn: monitor events (``history["events"]``) plus Python warnings;
- final: the bound after the last step (mean; min..max);
- to 1%: per seed, the first evaluated step from which the bound stays within 1% of the best
  final bound of the case's 9 runs ("-": never);
- to 0.1%: the same at 0.1% (1% of a bound in the thousands is reached at the first evaluation);
- fall: the largest drop of the bound below its running best, over the seeds;
- f max: the largest factor f of a coupled run (``history["adaptive_factor"]``).

The "batch" line of each model is batch VMP from the same initialization (200 sweeps), the
fixed point the stochastic fits aim at (a different local optimum for some seeds is possible).

    OMP_NUM_THREADS=1 python benchmarks/adaptive_models.py [--steps 200] [--seeds 3] [--only lda hmm]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import vmp  # noqa: E402
from vmp import models  # noqa: E402
from _bench import FACTORIZED  # noqa: E402


def builders(seed: int = 0) -> dict:
    """Name -> a function building the model on small synthetic data drawn with ``seed``."""
    r = np.random.default_rng(seed)
    n = 600
    x = np.array([[-3, 0], [3, 0], [0, 4]])[r.integers(3, size=n)] + r.normal(size=(n, 2))
    w, z = r.normal(size=(6, 2)), r.normal(size=(n, 2))
    y_fa = z @ w.T + 0.3 * r.normal(size=(n, 6))
    a = r.normal(size=(n, 3))
    y_lr = a @ np.array([1.0, -2, 0.5]) + 0.3 * r.normal(size=n)
    c, b = r.integers(2, size=n), np.array([[1.0, 2, 0], [-2, 0, 1]])
    y_mr = np.einsum("nd,nd->n", a, b[c]) + 0.2 * r.normal(size=n)
    p = r.dirichlet(np.ones(20), size=3)
    counts = np.stack([r.multinomial(30, p[k]) for k in r.integers(3, size=n)])
    f, s = 2 * r.normal(size=(3, 4)), (r.random((n, 3)) < 0.5).astype(float)
    y_fm = s @ f + 0.3 * r.normal(size=(n, 4))
    outcomes = (r.random(n) < 0.3).astype(int)
    users, items, k = 60, 50, 2
    pairs = r.choice(users * items, size=1200, replace=False)
    uu, ii = pairs // items, pairs % items
    ratings = np.einsum("nk,nk->n", r.normal(size=(users, k))[uu], r.normal(size=(items, k))[ii])
    ratings = ratings + 0.3 * r.normal(size=len(uu))
    theta, beta = r.gamma(0.5, 1, size=(users, k)), r.gamma(0.5, 1, size=(items, k))
    pc = r.poisson((theta @ beta.T).ravel()[pairs])
    keep = pc > 0
    topics, vocabulary, n_docs = 3, 30, 100
    phi = r.dirichlet(0.2 * np.ones(vocabulary), size=topics)
    docs, words, wc = [], [], []
    for d in range(n_docs):
        bag = r.multinomial(40, r.dirichlet(0.3 * np.ones(topics)) @ phi)
        nz = np.flatnonzero(bag)
        docs += [d] * len(nz)
        words += list(nz)
        wc += list(bag[nz])
    states = np.cumsum(r.random((40, 30)) > 0.9, axis=1) % 2
    sequences = 4.0 * states + r.normal(size=states.shape)
    return {
        "gaussian_mixture": lambda: models.gaussian_mixture(x, 3, **FACTORIZED),
        "factor_analysis": lambda: models.factor_analysis(y_fa, 3),
        "linear_regression": lambda: models.linear_regression(a, y_lr),
        "mixture_of_regressions": lambda: models.mixture_of_regressions(a, y_mr, 2),
        "multinomial_mixture": lambda: models.multinomial_mixture(counts, 3),
        "factorial_mixture": lambda: models.factorial_mixture(y_fm, 3),
        "beta_bernoulli": lambda: models.beta_bernoulli(outcomes),
        "lda": lambda: models.lda(np.array(docs), np.array(words), np.array(wc), topics,
                                  n_documents=n_docs, n_words=vocabulary),
        "hmm": lambda: models.hmm(sequences, 2),
        "matrix_factorization": lambda: models.matrix_factorization(uu, ii, ratings, k, n_users=users,
                                                                    n_items=items),
        "matrix_factorization (factorized)": lambda: models.matrix_factorization(
            uu, ii, ratings, k, n_users=users, n_items=items, factorized=True),
        "poisson_factorization": lambda: models.poisson_factorization(uu[keep], ii[keep], pc[keep], k,
                                                                      n_users=users, n_items=items),
    }


CASES = [  # (model, subsample, update)
    ("gaussian_mixture", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("gaussian_mixture", lambda: vmp.PerNode(children=10), "per-node"),
    ("gaussian_mixture", lambda: vmp.PerNode(children=10), "global"),
    ("factor_analysis", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("factor_analysis", lambda: vmp.PerNode(children=10), "per-node"),
    ("linear_regression", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("mixture_of_regressions", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("multinomial_mixture", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("factorial_mixture", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("beta_bernoulli", lambda: vmp.Minibatch("data", 30), "per-node"),
    ("lda", lambda: vmp.Minibatch("documents", 10), "per-node"),
    ("hmm", lambda: vmp.Minibatch("sequences", 4), "per-node"),
    ("matrix_factorization", lambda: vmp.PerNode(children=1), "per-node"),
    ("matrix_factorization", lambda: vmp.PerNode(children=1), "global"),
    ("matrix_factorization (factorized)", lambda: vmp.PerNode(children=1), "per-node"),
    ("matrix_factorization (factorized)", lambda: vmp.PerNode(children=1), "global"),
    ("poisson_factorization", lambda: vmp.PerNode(children=1), "per-node"),
    ("poisson_factorization", lambda: vmp.PerNode(children=1), "global"),
]
SCHEDULES = {"coupled": lambda: vmp.Adaptive(), "rule": lambda: vmp.Adaptive(coupled=False),
             "RobbinsMonro": lambda: vmp.RobbinsMonro()}


def run(build, subsample, update: str, step, steps: int, seed: int) -> dict:
    """One stochastic fit: its evaluated bounds, events, warnings, error and largest f."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = build().fit(method="stochastic", subsample=subsample, update=update, step=step,
                                 iterations=steps, seed=seed, evaluate_every=5, evaluate="full")
        except Exception as error:  # a raise is a result here
            return {"error": f"{type(error).__name__}: {error}", "warn": len(caught)}
    ev = result.history["evaluations"]
    factors = result.history.get("adaptive_factor", {})
    return {"error": None, "iteration": np.asarray(ev["iteration"]), "elbo": np.asarray(ev["elbo"], float),
            "warn": len(caught) + len(result.history["events"]),
            "f": max((float(np.max(v)) for v in factors.values()), default=np.nan)}


def steps_to(r: dict, level: float) -> str:
    """The first evaluated step from which the bound stays at or above ``level``."""
    if r["error"]:
        return "x"
    below = np.flatnonzero(r["elbo"] < level)
    if len(below) == 0:
        return str(r["iteration"][0])
    return "-" if below[-1] + 1 == len(r["elbo"]) else str(r["iteration"][below[-1] + 1])


def fall(r: dict) -> float:
    """The largest drop of the bound below its running best."""
    e = r["elbo"]
    return float(np.max(np.maximum.accumulate(e) - e))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    build = builders()
    start = time.process_time()
    print("| model | subsample | option | schedule | fails | warn | final (mean; min..max) | to 1% | to 0.1% "
          "| fall | f max |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    batch_done = set()
    for name, subsample, update in CASES:
        if args.only and name not in args.only:
            continue
        if name not in batch_done:
            batch_done.add(name)
            bound = build[name]().fit(method="batch", iterations=200, seed=0).elbo[-1]
            print(f"| {name} | batch | | | | | {bound:.1f} | | | | |")
        runs = {s: [run(build[name], subsample(), update, make(), args.steps, seed) for seed in range(args.seeds)]
                for s, make in SCHEDULES.items()}
        finals = [r["elbo"][-1] for rs in runs.values() for r in rs if not r["error"]]
        best = max(finals) if finals else np.nan
        option = "(a)" if update == "per-node" else "(b)"
        label = type(subsample()).__name__
        for s, rs in runs.items():
            ok = [r for r in rs if not r["error"]]
            fails = sum(1 for r in rs if r["error"] or np.isnan(r["elbo"]).any() or r["elbo"][-1] < r["elbo"][0])
            fin = np.array([r["elbo"][-1] for r in ok])
            final = f"{fin.mean():.1f}; {fin.min():.1f}..{fin.max():.1f}" if len(fin) else "-"
            print(f"| {name} | {label} | {option} | {s} | {fails} | {sum(r['warn'] for r in rs)} | {final} | "
                  f"{', '.join(steps_to(r, best - 0.01 * abs(best)) for r in rs)} | "
                  f"{', '.join(steps_to(r, best - 0.001 * abs(best)) for r in rs)} | "
                  f"{max((fall(r) for r in ok), default=np.nan):.1f} | "
                  f"{max((r['f'] for r in ok), default=np.nan):.2f} |", flush=True)
        for r in (r for rs in runs.values() for r in rs if r["error"]):
            print(f"    raised: {r['error'][:200]}")
    print(f"\nCPU {time.process_time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
