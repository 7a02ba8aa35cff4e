"""Fits used by the state tests (checkpoint, resume, interrupt), importable by a fresh process:
``python -m tests.state_cases resume NAME CHECKPOINT OUT`` resumes one from a checkpoint."""
from __future__ import annotations

import sys

import numpy as np

import vmp
from tests.golden_fits import _blobs, _mf
from models import gaussian_mixture

N = 6  # steps before the checkpoint; the uninterrupted fits run 2 N


def _mixture():
    return gaussian_mixture(_blobs(90), 3)


CASES = {
    "batch": (_mixture, dict(tol=0.0, seed=0)),
    "pernode_a": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2), evaluate_every=4,
                                          seed=1)),
    "pernode_b": (lambda: _mf(False), dict(method="stochastic", subsample=vmp.PerNode(children=3), update="global",
                                           evaluate_every=5, seed=2, monitors=[vmp.NoiseMonitor(window=3, action="backoff")])),
    "minibatch_svi_plus": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15, holdout=0.2),
                                          policies=[vmp.SVIPlus(effective=5)], evaluate_every=4, seed=3)),
    "minibatch_local_tempering": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15),
                                                 policies=[vmp.LocalTempering([1.0, 2.0, 4.0])], evaluate_every=5,
                                                 seed=4, monitors=[vmp.ElboMonitor(action="backoff")])),
    "adaptive_a": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2), evaluate_every=4,
                                           seed=5, step={"u": vmp.Adaptive(samples=3), "default": vmp.Adaptive()})),
    "adaptive_minibatch_b": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15), update="global",
                                            step=vmp.Adaptive(samples=2), evaluate_every=5, seed=6,
                                            monitors=[vmp.NoiseMonitor(window=3, action="backoff")])),
}


def fit(name: str, iterations: int, **more):
    build, kwargs = CASES[name]
    model = build()
    return model, model.fit(**dict(kwargs, iterations=iterations, progress=False, **more))


if __name__ == "__main__":
    command, name, checkpoint, out = sys.argv[1:5]
    assert command == "resume", command
    _, result = fit(name, 2 * N, resume=checkpoint)
    result.save(out)
