"""Record, on the mixture SVI runs of examples/tol_replay.py, the global nodes' natural parameters
and gradients g_t = lambda^temp - lambda at every step, next to the bound evaluated at every
step; replay stopping rules that read the parameters (:mod:`vmp.inference.gain`'s statistic G_t,
the bound one coordinate pass over the global nodes would still gain, and scikit-learn's naive
mean change of the global parameters) against the trend's P (tol_replay.plateau_trend), beside
vmp's curve rule (docs/stochastic.md, "Stopping a stochastic fit").

    python examples/tol_gain.py [--record] [--held-out] [--realistic NAME]
    (raw recordings cached in .cache/tol_gain/*.npz, not committed)
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
from functools import partial

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import vmp  # noqa: E402
from tol_replay import (CONFIGS, REALISTIC_CONFIGS, blobs, curve_stop, mixture_data, plateau_trend,  # noqa: E402
                        rise_left)
from vmp.inference import gain as G  # noqa: E402
from vmp.models import gaussian_mixture  # noqa: E402

CACHE = ROOT / ".cache" / "tol_gain"


def record(x: np.ndarray, k: int, size: int, seed: int, iterations: int, step=None) -> dict:
    """One fit with the bound at every step on an evaluate_every=5 fit's subsample; per step the
    natural parameters and gradients of the stepped nodes, flattened per node."""
    model = gaussian_mixture(x, k)
    nat, grad = [], []

    def keep(t, fit):
        nat.append({n: [np.array(a) for a in fit.state.natural[n]] for n in fit.nodes})
        grad.append({n: [np.array(a) for a in g] for n, g in fit.gradients.items()})

    more = {} if step is None else {"step": step}
    r = model.fit(method="stochastic", subsample=vmp.Minibatch("data", size, evaluation_size=5 * size),
                  evaluate_every=1, seed=seed, progress=False, iterations=iterations, callback=keep, **more)
    names = list(nat[0])
    out = {"elbo": np.asarray(r.history["evaluations"]["elbo"]), "names": np.array(names)}
    for n in names:
        for i in range(len(nat[0][n])):
            out[f"nat/{n}/{i}"] = np.stack([s[n][i] for s in nat])
            out[f"grad/{n}/{i}"] = np.stack([s[n][i] for s in grad])
    out["change"] = np.array([np.mean([r.history["change"][n][j] for n in names]) for j in range(iterations)])
    return out


def families_of(x_dim: int, k: int) -> dict:
    """The mixture's global nodes' families (vmp.models.gaussian_mixture)."""
    model = gaussian_mixture(np.zeros((4, x_dim)), k)
    fit = model.stochastic(subsample=vmp.Minibatch("data", 2), iterations=1, progress=False)
    return {n: node.family for n, node in fit.nodes.items()}


def load(path: pathlib.Path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def series(run: dict, families: dict, memory: float) -> np.ndarray:
    """G_t after every step t = 1..T (the fit's statistic, replayed from the recording)."""
    names = [str(n) for n in run["names"]]
    parts = {n: sorted(int(k.split("/")[2]) for k in run if k.startswith(f"nat/{n}/")) for n in names}
    steps = len(run["elbo"]) - 1
    avg, out = None, np.empty(steps)
    for j in range(steps):
        grads = {n: tuple(run[f"grad/{n}/{i}"][j] for i in parts[n]) for n in names}
        nat = {n: tuple(run[f"nat/{n}/{i}"][j] for i in parts[n]) for n in names}
        avg = G.average(avg, grads, j + 1, memory)
        out[j] = G.gain(families, nat, avg) if j >= 1 else np.inf
    return out


def gain_stop(it, b, stat, tol, every, c=1.0, patience=2, first=8) -> int | None:
    """The first evaluated step (every ``every`` steps, from the ``first``-th evaluation) at which
    stat <= c tol |b| at ``patience`` evaluations in a row."""
    keep = (it > 0) & (it % every == 0)
    its = it[keep]
    ok = stat[its - 1] <= c * tol * np.abs(b[its])
    run = 0
    for j, good in enumerate(ok):
        run = run + 1 if good else 0
        if run >= patience and j + 1 >= first:
            return int(its[j])
    return None


def table(title: str, runs: list, tols, spacings, rules: dict) -> dict:
    """Per rule: within 10% of the trend's P, early (rise left > 0 at stops before 0.9 P), never
    stopped, median stop - P."""
    print(f"\n{title}\n| rule | within 10% | early | early leaving > 2 tol | max left | never stopped | "
          "stop - P median (steps) | median (stop - P) / P |\n|---|---|---|---|---|---|---|---|")
    out = {}
    for name, rule in rules.items():
        rows = []
        for tol in tols:
            for every in spacings:
                for run in runs:
                    it, b = np.arange(len(run["elbo"])), run["elbo"]
                    stop = rule(it, b, run, tol, every)
                    p = plateau_trend(it, b, tol)
                    end = int(it[-1]) if stop is None else stop
                    rows.append((end, p, stop is None, rise_left(it, b, end, tol)))
        within = sum(abs(s - p) <= 0.1 * p for s, p, _, _ in rows)
        early = [left for s, p, _, left in rows if s < 0.9 * p]
        never = sum(n for _, _, n, _ in rows)
        late = np.median([s - p for s, p, _, _ in rows])
        frac = np.median([(s - p) / p for s, p, _, _ in rows])
        print(f"| {name} | {within} of {len(rows)} | {len(early)} | {sum(x > 2 for x in early)} | "
              f"{max(early, default=0):.1f} | {never} | {late:.0f} | {frac:.2f} |", flush=True)
        out[name] = (within, len(early), sum(x > 2 for x in early))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--grid", action="store_true")
    args = ap.parse_args(argv)
    CACHE.mkdir(parents=True, exist_ok=True)
    for seed in range(12):
        path = CACHE / f"train_{seed}.npz"
        if args.record or not path.exists():
            c0 = time.process_time()
            np.savez(path, **record(blobs(3000, seed), 3, 500, seed, 400))
            print(f"seed {seed}: {time.process_time() - c0:.1f} s CPU", flush=True)
    fam = families_of(2, 3)
    runs = [load(CACHE / f"train_{seed}.npz") for seed in range(12)]
    print(f"families: { {n: f.__name__ for n, f in fam.items()} }")
    return 0


if __name__ == "__main__":
    sys.exit(main())
