"""Replay stopping rules for stochastic fits on recorded runs (docs/stochastic.md, "Stopping a
stochastic fit").

Records 400-step mixture SVI fits (3,000 points of 3 blobs, 3 components, Minibatch(500),
seeds 0 to 11) with the bound evaluated at every step on the estimator a fit with
evaluate_every=5 uses (the same 2,500-row evaluation subsample; evaluations draw nothing, so the
trajectory is the one of the tests, bit for bit), then replays rules on those series:

- the hindsight plateau P at step resolution: the first step k >= 1 after which no evaluated
  bound exceeds b_k by more than tol |b_k| (tests/test_adaptive.py uses the same definition on
  the evaluations every 5 steps);
- vmp's rule (``_flat``: the least-squares rise across a window of evaluations at slope + z
  standard errors, at most tol |mean|, ``patience`` windows in a row) for evaluation spacings 1,
  2 and 5 steps, windows and z;
- the spread of the free per-step minibatch bound (``history["bound_estimate"]``) against
  tol |b|.

    python examples/tol_replay.py [--tol 3e-4] [--record]   (JSON cached in docs/figures/tol_replay.json)
"""
from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from vmp.inference.loop import _flat  # noqa: E402
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


def stop(it, b, tol, every, window, patience) -> int | None:
    """The step at which vmp's rule (with these constants, TOL_Z set by :class:`_Z`) ends a fit
    evaluated every ``every`` steps."""
    keep = (it > 0) & (it % every == 0)
    its, vals = it[keep], b[keep]
    for j in range(window + patience - 2, len(vals)):
        if all(_flat(vals[j + 1 - window - k:j + 1 - k], tol) is not None for k in range(patience)):
            return int(its[j])
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tol", type=float, default=3e-4)
    ap.add_argument("--record", action="store_true", help="record the runs again")
    args = ap.parse_args(argv)
    if args.record or not OUT.exists():
        OUT.write_text(json.dumps(record(range(12), 400)))
    runs = json.loads(OUT.read_text())
    data = [(np.array(r["iteration"]), np.array(r["elbo"])) for r in runs.values()]
    plateaus = [plateau(it, b, args.tol) for it, b in data]
    print("plateau (step resolution):", plateaus)
    print("plateau (every 5 steps):  ", [plateau(it[::5], b[::5], args.tol) for it, b in data])
    rows = []
    for every, window, patience, z in itertools.product([1, 2, 5], [3, 5, 8, 10, 15, 20], [1, 2], [0.0, 1.0, 2.0]):
        with _Z(z):
            stops = [stop(it, b, args.tol, every, window, patience) for it, b in data]
        stops = [400 if s is None else s for s in stops]
        early = sum(s < 0.9 * p for s, p in zip(stops, plateaus))
        within = sum(0.9 * p <= s <= 1.1 * p for s, p in zip(stops, plateaus))
        rows.append((early, -within, every, window, patience, z, [s - p for s, p in zip(stops, plateaus)]))
    rows.sort(key=lambda r: (r[0] > 0, r[1], r[0]))
    print("| spacing | window | patience | z | early | within 10% | stop - plateau (steps) |")
    print("|---|---|---|---|---|---|---|")
    shown = [r for r in rows if (r[2], r[3], r[4], r[5]) == (5, 5, 2, 2.0)] + rows[:6]
    shown += [r for r in rows if r[0] > 0][:3]
    for early, within, every, window, patience, z, lag in shown:
        print(f"| {every} | {window} | {patience} | {z:g} | {early} of 12 | {-within} of 12 | "
              f"{min(lag)} to {max(lag)} |")
    spread = [np.std(np.array(r["bound_estimate"])[-200:]) for r in runs.values()]
    level = [args.tol * abs(b[-1]) for _, b in data]
    print(f"per-step bound estimate: sd over the last 200 steps {min(spread):.0f} to {max(spread):.0f}; "
          f"tol |b| = {min(level):.2f} to {max(level):.2f}")
    return 0


class _Z:
    """Set vmp's TOL_Z for the replay (``_flat`` reads the module constant)."""

    def __init__(self, z):
        self.z = z

    def __enter__(self):
        from vmp.inference import loop
        self.saved, loop.TOL_Z = loop.TOL_Z, self.z

    def __exit__(self, *exc):
        from vmp.inference import loop
        loop.TOL_Z = self.saved


if __name__ == "__main__":
    sys.exit(main())
