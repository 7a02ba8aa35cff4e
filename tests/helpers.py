"""Shared helpers for the tests: random valid posteriors for any node, finite differences, a
hand-written coordinate ascent of the variational Student-t (regression), and the factorized
Gaussian mixture many tests were written for."""
from __future__ import annotations

import numpy as np


def factorized_mixture(data, n_components: int, **options):
    """``models.gaussian_mixture`` with factorized q(mu_k) q(Lambda_k) (nodes "mu", "Lambda"),
    Dirichlet weights of concentration 1 and E[Lambda_k] = S^-1 a priori (``scale="data"``): the
    model the tests of the engine (bits, memos, executors, missing data) were written for; its
    numbers are recorded (tests/data/golden_fits.npz)."""
    from models import gaussian_mixture

    options = {"covariance": "factorized", "weights": "dirichlet", "alpha": 1.0, "scale": "data", **options}
    return gaussian_mixture(data, n_components, **options)


def random_natural(node, rng: np.random.Generator):
    return node.family.random_natural(rng, node.plate_shape, node.event_shape)


def randomize(model, rng: np.random.Generator) -> None:
    """Give every hidden node a random valid q."""
    model.compile()
    for node in model.nodes.values():
        if not node.observed:
            node.set_natural(random_natural(node, rng))


def set_moments(node, moments) -> None:
    """Give ``node`` these moments in its model's state (natural parameters left as they are)."""
    model = node.model
    model.state = model.state.updated({node.name: (model.state.natural[node.name], tuple(moments))})


def central_difference(f, node, weight, direction, h: float = 1e-4) -> float:
    """(E[log p](m + h d) - E[log p](m - h d)) / 2h for the factor ``f`` along ``direction`` in
    ``node``'s moments m (restored afterwards)."""
    base = node.moments
    set_moments(node, [m + h * d for m, d in zip(base, direction)])
    up = f.elog(weight, cached=False)
    set_moments(node, [m - h * d for m, d in zip(base, direction)])
    down = f.elog(weight, cached=False)
    set_moments(node, base)
    return (up - down) / (2 * h)


def student_t_cavi(x, y, order, sweeps, nu=3.0, a0=1.0, b0=1.0, p0=1.0, weights="w"):
    """Coordinate ascent of the variational Student-t regression y_n ~ N(w.x_n, 1/(tau lam_n)),
    w ~ N(0, I/p0), tau ~ Gamma(a0, b0), lam_n ~ Gamma(nu/2, nu/2) (Archambeau & Verleysen 2007's
    updates), every factor at its prior first, then the nodes named in ``order`` (``weights``:
    w's name; x = ones for a location). Returns (E[w], Cov[w], a, b, lam's shapes, lam's rates)."""
    n, d = x.shape
    m, s = np.zeros(d), np.eye(d) / p0
    a, b = a0, b0
    la, lb = np.full(n, nu / 2), np.full(n, nu / 2)
    for _ in range(sweeps):
        for name in order:
            e_tau, e_lam = a / b, la / lb
            r = (y - x @ m) ** 2 + np.einsum("nd,de,ne->n", x, s, x)
            if name == weights:
                s = np.linalg.inv(p0 * np.eye(d) + e_tau * (x.T * e_lam) @ x)
                m = s @ (e_tau * (x.T * e_lam) @ y)
            elif name == "tau":
                a, b = a0 + n / 2, b0 + 0.5 * (e_lam * r).sum()
            else:
                la, lb = np.full(n, nu / 2 + 0.5), nu / 2 + 0.5 * e_tau * r
    return m, s, a, b, la, lb
