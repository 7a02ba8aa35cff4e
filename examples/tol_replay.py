"""Replay stopping rules for stochastic fits on recorded runs (docs/stochastic.md, "Stopping a
stochastic fit").

Records 400-step mixture SVI fits (3,000 points of 3 blobs, 3 components, Minibatch(500),
seeds 0 to 11) with the bound evaluated at every step on the estimator a fit with
evaluate_every=5 uses (the same 2,500-row evaluation subsample; evaluations draw nothing, so the
trajectory is the one of the tests, bit for bit), and held-out runs recorded after the rule was
chosen on those 12 (``CONFIGS``: seeds 12 to 17, N = 10,000 with K = 5 and minibatches of 200,
RobbinsMonro kappa 0.5 and 0.9, vmp.Adaptive()). It replays on those series:

- the hindsight plateau P at step resolution: the first step k >= 1 after which no evaluated
  bound exceeds b_k by more than tol |b_k| (tests/test_stopping.py uses the same definition on
  the evaluations every 5 steps);
- vmp's rule (:func:`vmp.inference.stopping.stop_at`, learning-curve extrapolation) and the
  rule it replaced (the least-squares rise across a window of 5 evaluations at slope + 2
  standard errors, at most tol |mean|, 2 windows in a row: :func:`window_stop`), for evaluation
  spacings 1, 2, 5 and 10 steps and tol 3e-4, 1e-3, 1e-4;
- the spread of the free per-step minibatch bound (``history["bound_estimate"]``) against
  tol |b|.

    python examples/tol_replay.py [--record] [--record-held-out]
    (JSON cached in docs/figures/tol_replay.json and tol_replay_heldout.json)
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

import vmp  # noqa: E402
from vmp.inference.stopping import stop_at  # noqa: E402
from vmp.models import gaussian_mixture  # noqa: E402

OUT = ROOT / "docs" / "figures" / "tol_replay.json"
HELD_OUT = ROOT / "docs" / "figures" / "tol_replay_heldout.json"

#: configurations recorded after the rule was chosen on seeds 0 to 11 of the first one:
#: (name, points, components, minibatch, step, seeds)
CONFIGS = [
    ("N=3000 K=3 S=500, seeds 12-17", 3000, 3, 500, None, range(12, 18)),
    ("N=10000 K=5 S=200", 10000, 5, 200, None, range(4)),
    ("RobbinsMonro kappa=0.5", 3000, 3, 500, ("rm", 0.5), range(4)),
    ("RobbinsMonro kappa=0.9", 3000, 3, 500, ("rm", 0.9), range(4)),
    ("Adaptive", 3000, 3, 500, ("adaptive",), range(4)),
]


def blobs(n: int, seed: int) -> np.ndarray:
    """tests/golden_fits.py's _blobs."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    return centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2))


def run(seed: int, iterations: int, n: int = 3000, k: int = 3, size: int = 500, step=None) -> dict:
    """One fit with the bound evaluated at every step on the subsample of an evaluate_every=5
    fit (5 minibatches' rows)."""
    c0 = time.process_time()
    model = gaussian_mixture(blobs(n, seed), k)
    more = {}
    if step is not None:
        more["step"] = vmp.Adaptive() if step[0] == "adaptive" else vmp.RobbinsMonro(kappa=step[1])
    r = model.fit(method="stochastic", subsample=vmp.Minibatch("data", size, evaluation_size=5 * size),
                  evaluate_every=1, seed=seed, progress=False, iterations=iterations, **more)
    ev = r.history["evaluations"]
    print(f"seed {seed}: {time.process_time() - c0:.1f} s CPU", flush=True)
    return {"iteration": ev["iteration"].tolist(), "elbo": ev["elbo"].tolist(), "stderr": ev["stderr"].tolist(),
            "bound_estimate": r.history["bound_estimate"].tolist()}


def record(seeds, iterations: int) -> dict:
    return {str(seed): run(seed, iterations) for seed in seeds}


def record_held_out(iterations: int) -> dict:
    return {name: {str(seed): run(seed, iterations, n, k, size, step) for seed in seeds}
            for name, n, k, size, step, seeds in CONFIGS}


def plateau(it: np.ndarray, b: np.ndarray, tol: float) -> int:
    """The first evaluated step after which no evaluation exceeds its bound by more than tol."""
    return next(int(t) for k, t in enumerate(it) if t > 0 and b[k:].max() - b[k] <= tol * abs(b[k]))


def _window_rise(values: np.ndarray, z: float) -> float:
    """The rule vmp used before: the least-squares rise across the window at slope + z
    standard errors (from the residuals)."""
    x = np.arange(len(values)) - (len(values) - 1) / 2.0
    y = values - values.mean()
    beta = float(x @ y / (x @ x))
    residual = y - beta * x
    se = float(np.sqrt(residual @ residual / (len(values) - 2) / (x @ x)))
    return (beta + z * se) * len(values)


def window_stop(it, b, tol, every, window=5, patience=2, z=2.0) -> int | None:
    """The step at which the former rule ends a fit evaluated every ``every`` steps."""
    keep = (it > 0) & (it % every == 0)
    its, vals = it[keep], b[keep]
    for j in range(window + patience - 2, len(vals)):
        if all(_window_rise(w, z) <= tol * abs(w.mean())
               for w in (vals[j + 1 - window - k:j + 1 - k] for k in range(patience))):
            return int(its[j])
    return None


def curve_stop(it, b, tol, every) -> int | None:
    """The step at which vmp's rule ends a fit evaluated every ``every`` steps."""
    keep = (it > 0) & (it % every == 0)
    its, vals = it[keep], b[keep]
    return next((int(its[j]) for j in range(len(vals)) if stop_at(its[:j + 1], vals[:j + 1], tol) is not None),
                None)


def score(rule, data, tol, every, end=400) -> tuple:
    """(early, within 10%, stop - P per run) of a rule on recorded runs; a run that does not
    stop counts as stopping at ``end``."""
    plateaus = [plateau(it, b, tol) for it, b in data]
    stops = [rule(it, b, tol, every) for it, b in data]
    stops = [end if s is None else s for s in stops]
    early = sum(s < 0.9 * p for s, p in zip(stops, plateaus))
    within = sum(0.9 * p <= s <= 1.1 * p for s, p in zip(stops, plateaus))
    return early, within, [s - p for s, p in zip(stops, plateaus)]


RULES = {"vmp (curves)": curve_stop, "window 5, 2 in a row": window_stop}


def table(data, tols, spacings) -> dict:
    """Print and return one row per tol, spacing and rule."""
    n = len(data)
    print("| tol | spacing | rule | early | within 10% | stop - P, median (range) |")
    print("|---|---|---|---|---|---|")
    totals = {name: [0, 0, 0] for name in RULES}
    for tol in tols:
        for every in spacings:
            for name, rule in RULES.items():
                early, within, lag = score(rule, data, tol, every)
                totals[name] = [totals[name][0] + early, totals[name][1] + within, totals[name][2] + n]
                print(f"| {tol:g} | {every} | {name} | {early} of {n} | {within} of {n} | "
                      f"{int(np.median(lag))} ({min(lag)} to {max(lag)}) |")
    for name, (early, within, cases) in totals.items():
        print(f"{name}: early {early} of {cases}, within 10% {within} of {cases}")
    return totals


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record", action="store_true", help="record the 12 runs again")
    ap.add_argument("--record-held-out", action="store_true", help="record the held-out runs again")
    args = ap.parse_args(argv)
    if args.record or not OUT.exists():
        OUT.write_text(json.dumps(record(range(12), 400)))
    if args.record_held_out or not HELD_OUT.exists():
        HELD_OUT.write_text(json.dumps(record_held_out(400)))
    runs = json.loads(OUT.read_text())
    data = [(np.array(r["iteration"]), np.array(r["elbo"])) for r in runs.values()]
    print("plateau at tol 3e-4 (step resolution):", [plateau(it, b, 3e-4) for it, b in data])
    print("plateau at tol 3e-4 (every 5 steps):  ", [plateau(it[::5], b[::5], 3e-4) for it, b in data])
    print("\nseeds 0 to 11 (the rule was chosen on these)")
    table(data, [3e-4, 1e-3, 1e-4], [1, 2, 5, 10])
    held = json.loads(HELD_OUT.read_text())
    everything = []
    for name, group in held.items():
        series = [(np.array(r["iteration"]), np.array(r["elbo"])) for r in group.values()]
        everything += series
        print(f"\nheld out: {name}")
        table(series, [3e-4, 1e-3], [1, 2, 5, 10])
    print("\nheld out, all runs")
    table(everything, [3e-4, 1e-3], [1, 2, 5, 10])
    spread = [np.std(np.array(r["bound_estimate"])[-200:]) for r in runs.values()]
    level = [3e-4 * abs(b[-1]) for _, b in data]
    print(f"per-step bound estimate: sd over the last 200 steps {min(spread):.0f} to {max(spread):.0f}; "
          f"3e-4 |b| = {min(level):.2f} to {max(level):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
