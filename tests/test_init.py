"""Initialization: every gate breaks symmetry, wherever it sits (a gate inside vmp.dot)."""
from __future__ import annotations

import numpy as np

import vmp


def _mixture_of_regressions(rng, n=80):
    x = np.c_[np.ones(n), rng.uniform(0.5, 2.0, size=n)]  # away from where the lines cross
    w_true = np.array([[1.0, 2.0], [-1.0, -2.0]])
    z = rng.integers(0, 2, n)
    y = np.einsum("nd,nd->n", x, w_true[z]) + 0.1 * rng.normal(size=n)
    with vmp.Model("mor") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate("K", 2):
            w = vmp.Gaussian("w", np.zeros(2), np.eye(2))
        with vmp.Plate("N", n):
            xn = vmp.Gaussian("x", np.zeros(2), np.eye(2), observed=x)
            zz = vmp.Categorical("z", pi)
            vmp.Normal("y", vmp.dot(w[zz], xn), 100.0, observed=y)
    return model, x, y, z


def test_gate_inside_dot_initializes_and_recovers_each_regression():
    """fit() used to crash in _break_symmetry ('Gate' object has no attribute 'observed').
    With separated components q(z) is one-hot at the truth, and q(w_k) is then the closed-form
    Bayesian linear regression on the rows of component k."""
    model, x, y, z = _mixture_of_regressions(np.random.default_rng(0))
    model.fit(iterations=200)
    r = model["z"].mean
    labels = r.argmax(1)
    assert np.all(r.max(1) > 1 - 1e-6)
    perm = np.array([labels[z == 0][0], labels[z == 1][0]])
    assert np.all(labels == perm[z])
    for k in range(2):
        rows = z == k
        prec = np.eye(2) + 100.0 * x[rows].T @ x[rows]
        mean = np.linalg.solve(prec, 100.0 * x[rows].T @ y[rows])
        q = model["w"].parameters
        assert np.allclose(q["mean"][perm[k]], mean, atol=1e-6)
        assert np.allclose(q["precision"][perm[k]], prec, rtol=1e-5)


def test_weighted_index_is_the_draw_of_generator_choice():
    """k-means++ draws its next center as rng.choice(n, p=p) would: the same index and the same
    generator state after, zeros in p included."""
    from vmp.inference.init import weighted_index

    for seed in range(60):
        r = np.random.default_rng(seed)
        n = int(r.integers(1, 3000))
        w = r.random(n) ** 3
        w[r.integers(n, size=n // 3)] = 0.0
        if w.sum() == 0:
            w[0] = 1.0
        p = w / w.sum()
        a, b = np.random.default_rng(seed + 100), np.random.default_rng(seed + 100)
        assert [int(a.choice(n, p=p)) for _ in range(4)] == [weighted_index(b, p) for _ in range(4)]
        assert a.bit_generator.state == b.bit_generator.state


def test_kmeanspp_draws_the_centers_of_the_direct_formula():
    """k-means++ with squared distances by ||x||^2 - 2 x.c + ||c||^2 and weighted_index picks the
    rows that the direct sum of squared differences and rng.choice pick."""
    from vmp.inference.init import kmeanspp

    def direct(x, k, rng):
        centers = [x[rng.integers(len(x))]]
        d2 = ((x - centers[0]) ** 2).sum(axis=1)
        for _ in range(1, k):
            centers.append(x[rng.choice(len(x), p=d2 / d2.sum())])
            d2 = np.minimum(d2, ((x - centers[-1]) ** 2).sum(axis=1))
        return np.stack(centers)

    for seed, d in [(0, 1), (1, 2), (2, 5), (3, 8)]:
        r = np.random.default_rng(seed)
        x = r.normal(size=(3000, d)) + r.choice([-4.0, 0.0, 4.0], size=(3000, 1))
        np.testing.assert_array_equal(kmeanspp(x, 6, np.random.default_rng(seed)), direct(x, 6, np.random.default_rng(seed)))


def _ready_models():
    from .rule_cases import CASES
    from .test_bound_paths import _models

    return {**{f"case {k}": (lambda f=f: f()[0]) for k, f in CASES.items()}, **_models()}


def test_every_initial_moment_is_the_moments_of_its_natural_parameters():
    """The initial State holds, for every node, exactly Family.moments of its natural parameters,
    at the prior (init='prior') and after the symmetry breaking (fails when a prior's moments are
    kept past a perturbation, or never computed)."""
    from vmp.inference.engine import Engine
    from vmp.inference.init import initialize

    for name, build in sorted(_ready_models().items()):
        engine = Engine(build())
        for init in ("prior", None):
            state = initialize(engine, np.random.default_rng(2), init)
            assert set(state.moments) == set(state.natural) == {n.name for n in engine.hidden}, name
            for node in engine.hidden:
                fresh = node.family.moments(tuple(state.natural[node.name]))
                assert len(state.moments[node.name]) == len(fresh) > 0, (name, node.name)
                for kept, new in zip(state.moments[node.name], fresh):
                    np.testing.assert_array_equal(kept, new, err_msg=f"{name}: {node.name}")

