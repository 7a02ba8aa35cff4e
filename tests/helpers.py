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
