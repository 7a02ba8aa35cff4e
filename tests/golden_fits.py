"""Fits whose final natural parameters were recorded before the inference layer owned its state
(tests/data/golden_fits.npz, written by ``python -m tests.golden_fits``): the refactor must give
the same bits for the same seed. The minibatch fits and option (b) were recorded again when
their initialization changed on purpose (globals from one minibatch's sweep, no locals kept,
bound estimated on a subsample); batch and option (a) PerNode fits keep the first record."""
from __future__ import annotations

import numpy as np

import vmp
from models import lda, matrix_factorization
from tests.helpers import factorized_mixture


def _blobs(n=120, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    return centers[rng.integers(3, size=n)] + rng.normal(size=(n, 2))


def _mf(factorized, seed=0, m=8, n=9, k=2, r=50):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(m, size=r), rng.integers(n, size=r)
    return matrix_factorization(rows, cols, rng.normal(size=r), k, n_users=m, n_items=n, factorized=factorized)


def _lda(seed=0):
    rng = np.random.default_rng(seed)
    d = np.repeat(np.arange(12), 5)
    w = rng.integers(8, size=d.size)
    return lda(d, w, rng.integers(1, 4, size=d.size).astype(float), 3, n_words=8, eta=0.01)  # as recorded


def _mixture():
    return factorized_mixture(_blobs(), 3)


FITS = {
    "batch_mixture": (_mixture, dict(iterations=15, tol=0.0, seed=0)),
    "batch_mf": (lambda: _mf(False), dict(iterations=10, tol=0.0, seed=1)),
    "pernode_a_mixture": (_mixture, dict(method="stochastic", subsample=vmp.PerNode(children=10),
                                         update="per-node", iterations=12, evaluate_every=4, seed=2)),
    "pernode_b_mf": (lambda: _mf(False), dict(method="stochastic", subsample=vmp.PerNode(children=3),
                                              update="global", iterations=12, evaluate_every=5, seed=3)),
    "pernode_a_mf_factorized": (lambda: _mf(True), dict(method="stochastic", subsample=vmp.PerNode(children=2),
                                                        update="per-node", iterations=8, evaluate_every=0,
                                                        step=vmp.RobbinsMonro(tau=2.0, kappa=0.7), seed=4)),
    "minibatch_svi_plus": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 20),
                                          policies=[vmp.SVIPlus(effective=8)], iterations=12,
                                          evaluate_every=6, seed=5)),
    "minibatch_local_tempering": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 20),
                                                 policies=[vmp.LocalTempering([1.0, 2.0, 4.0])],
                                                 iterations=10, evaluate_every=5, seed=6)),
    "minibatch_annealing_global": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 30),
                                                  update="global", policies=[vmp.Annealing.linear(3.0, 6)],
                                                  iterations=10, evaluate_every=5, seed=7)),
    "minibatch_lda": (_lda, dict(method="stochastic", subsample=vmp.Minibatch("documents", 4, local_tol=1e-4),
                                 iterations=8, evaluate_every=4, seed=8)),
    "minibatch_tempering": (_mixture, dict(method="stochastic", subsample=vmp.Minibatch("data", 20),
                                           policies=[vmp.Tempering([1.0, 2.0], samples=10)],
                                           iterations=8, evaluate_every=4, seed=9)),
}


def run(name: str, strategies=None):
    """The fit ``name``; ``strategies``: the evaluator's (None the default, () the reference)."""
    build, kwargs = FITS[name]
    model = build()
    if strategies is not None:
        model.compile(strategies=strategies)
    kwargs = dict(kwargs, progress=False)
    result = model.fit(**kwargs)
    natural = dict(result.state.natural)
    return model, result, natural


def record(path: str) -> None:
    arrays = {}
    for name in FITS:
        _, result, natural = run(name)
        for node, parts in natural.items():
            for i, a in enumerate(parts):
                arrays[f"{name}/{node}/{i}"] = a
        arrays[f"{name}/#elbo"] = np.asarray(result.elbo, float)
    np.savez_compressed(path, **arrays)


if __name__ == "__main__":
    import pathlib

    record(str(pathlib.Path(__file__).parent / "data" / "golden_fits.npz"))
