"""The dashboards of a diverged and of an interrupted fit, as docs/diagnostics.md shows them
(docs/figures/dashboard_diverged.png, dashboard_interrupted.png).

The diverged one is a history as a failing fit records it: 40 stepped nodes, the bound finite
for 150 steps and then not, a monitor warning about one node at every other step and the domain
monitor's stop with a long message. The interrupted one is a real stochastic fit of a Gaussian
mixture ended by SIGINT (Ctrl-C) after 30 steps.

    python examples/dashboard_figures.py [--out docs/figures]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import signal
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from vmp.inference import FitResult  # noqa: E402
from vmp.models import gaussian_mixture  # noqa: E402


def diverged() -> FitResult:
    t, evaluations = 300, 61
    rng = np.random.default_rng(0)
    elbo = np.r_[-5e4 + 4e4 * (1 - np.exp(-np.arange(31) / 8)), np.full(evaluations - 31, np.nan)]
    names = [f"node_{i}" for i in range(40)]
    events = [{"iteration": 6 + 2 * i, "source": "ElboMonitor", "node": "node_3", "action": "warn",
               "message": "the step of node_3 is too large"} for i in range(95)]
    events.append({"iteration": t, "source": "DomainMonitor", "node": "node_7", "action": "stop",
                   "message": "node 'node_7': the step leaves the Gamma domain at 3 element(s)"})
    history = {"iteration": np.arange(1, t + 1), "accesses": 100 * np.arange(1, t + 1),
               "step_seconds": 1e-3 * (1 + 0.1 * rng.random(t)),
               "rho": {n: (10 + np.arange(t)) ** -0.6 for n in names},
               "change": {n: np.abs(rng.normal(size=t)) * (1 + i) for i, n in enumerate(names)},
               "evaluations": {"iteration": 5 * np.arange(evaluations), "accesses": 500 * np.arange(evaluations),
                               "elbo": elbo, "stderr": np.zeros(evaluations), "heldout": np.array([])},
               "events": events}
    message = ("stopped by a monitor: node 'node_7': the step leaves the Gamma domain at 3 element(s) after "
               "the bound stopped being finite at iteration 155")
    return FitResult(elbo, False, t, message, extra={"method": "stochastic", "update": "per-node"},
                     history=history, diverged=True)


def interrupted() -> FitResult:
    rng = np.random.default_rng(0)
    model = gaussian_mixture(np.r_[rng.normal(0, 1, (300, 2)), rng.normal(5, 1, (300, 2))], 3)

    def ctrl_c(t, fit):
        if t == 30:
            os.kill(os.getpid(), signal.SIGINT)

    return model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50), iterations=100, seed=0,
                     progress=False, callback=ctrl_c)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "figures"))
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out)
    diverged().plot(out / "dashboard_diverged.png")
    interrupted().plot(out / "dashboard_interrupted.png")
    print(f"wrote {out / 'dashboard_diverged.png'} and {out / 'dashboard_interrupted.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
