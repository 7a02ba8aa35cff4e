"""Shared helpers for the tests: random valid posteriors for any node."""
from __future__ import annotations

import numpy as np


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
