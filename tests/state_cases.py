"""Fits used by the state tests (checkpoint, resume, interrupt), importable by a fresh process:
``python -m tests.state_cases resume NAME CHECKPOINT OUT [NAME CHECKPOINT OUT ...]`` resumes each
named case from its checkpoint to 2 N steps and saves the result to OUT."""
from __future__ import annotations

import sys

import numpy as np

import vmp
from tests.golden_fits import _blobs, _mf
from models import gaussian_mixture, lda

N = 6  # steps before the checkpoint; the uninterrupted fits run 2 N


def _mixture():
    """The default mixture: GaussianWishart components, stick-breaking weights."""
    return gaussian_mixture(_blobs(90), 3)


def _lda():
    """30 documents of 15 tokens over 12 words, 3 topics."""
    rng = np.random.default_rng(7)
    d = np.repeat(np.arange(30), 15)
    w = (rng.integers(3, size=30)[d] * 4 + rng.integers(4, size=d.size)) % 12
    pairs, counts = np.unique(np.stack([d, w], 1), axis=0, return_counts=True)
    return lda(pairs[:, 0], pairs[:, 1], counts.astype(float), 3, n_words=12, alpha=0.2, eta=0.1)


CASES = {
    "batch": (_mixture, dict(tol=0.0, seed=0)),
    "pernode_joint_mixture": (_mixture, dict(method="stochastic", subsample=vmp.PerNode(children=5), evaluate_every=4,
                                             seed=11)),
    "pernode_a": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2), evaluate_every=4,
                                          seed=1)),
    "pernode_b": (lambda: _mf(False), dict(method="stochastic", subsample=vmp.PerNode(children=3), update="global",
                                           evaluate_every=5, seed=2, monitors=[vmp.NoiseMonitor(window=3, action="backoff")])),
    "minibatch_svi_plus": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15, holdout=0.2),
                                          policies=[vmp.SVIPlus(effective=5)], evaluate_every=4, seed=3)),
    "minibatch_local_tempering": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15),
                                                 policies=[vmp.LocalTempering([1.0, 2.0, 4.0])], evaluate_every=5,
                                                 seed=4, monitors=[vmp.ElboMonitor(action="backoff")])),
    "lda_tempering": (_lda, dict(method="stochastic", subsample=vmp.Minibatch("documents", 6), evaluate_every=4, seed=7,
                                 policies=[vmp.Tempering([1.0, 2.0, 4.0], samples=3, partition_rows=6, importance=2)])),
    "lda_local_tempering": (_lda, dict(method="stochastic", subsample=vmp.Minibatch("documents", 6), evaluate_every=4,
                                       seed=8, policies=[vmp.LocalTempering([1.0, 2.0, 4.0], importance=3)])),
    "adaptive_a": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2), evaluate_every=4,
                                           seed=5, step={"u": vmp.Adaptive(samples=3, coupled=False),
                                                         "default": vmp.Adaptive(coupled=False)})),
    "adaptive_element_b": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2),
                                                   update="global", evaluate_every=4, seed=7,
                                                   step={"u": vmp.Adaptive(per="element", coupled=False),
                                                         "default": vmp.Adaptive(per="element", samples=2,
                                                                                 coupled=False)})),
    "adaptive_coupled_a": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2), evaluate_every=4,
                                                   seed=9, step=vmp.Adaptive(coupled=True, per="element"))),
    "adaptive_coupled_b": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15), update="global",
                                          step=vmp.Adaptive(coupled=True), evaluate_every=5, seed=10)),
    "adaptive_minibatch_b": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 15), update="global",
                                            step=vmp.Adaptive(samples=2, coupled=False), evaluate_every=5, seed=6,
                                            monitors=[vmp.NoiseMonitor(window=3, action="backoff")])),
}


def fit(name: str, iterations: int, **more):
    build, kwargs = CASES[name]
    model = build()
    return model, model.fit(**dict(kwargs, iterations=iterations, progress=False, **more))


if __name__ == "__main__":
    command, triples = sys.argv[1], sys.argv[2:]
    assert command == "resume" and triples and len(triples) % 3 == 0, sys.argv[1:]
    for name, checkpoint, out in zip(triples[::3], triples[1::3], triples[2::3]):
        _, result = fit(name, 2 * N, resume=checkpoint)
        result.save(out)
