"""Shared helpers for the tests: random valid posteriors for any node."""
from __future__ import annotations

import numpy as np

from vmp import families as fam


def random_natural(node, rng: np.random.Generator):
    ps = node.plate_shape
    f = node.family
    if f is fam.Gaussian:
        d = node.event_shape[0]
        a = rng.normal(size=ps + (d, d))
        prec = a @ np.swapaxes(a, -1, -2) + np.eye(d)
        return f.natural_from(rng.normal(size=ps + (d,)), prec)
    if f is fam.Normal:
        return f.natural_from(rng.normal(size=ps), rng.uniform(0.5, 2.0, size=ps))
    if f is fam.Gamma:
        return f.natural_from(rng.uniform(0.5, 3.0, size=ps), rng.uniform(0.5, 3.0, size=ps))
    if f is fam.Wishart:
        d = node.event_shape[0]
        a = rng.normal(size=ps + (d, d))
        return f.natural_from(d + 1.0 + rng.uniform(size=ps), a @ np.swapaxes(a, -1, -2) / d + np.eye(d))
    if f is fam.Dirichlet:
        return f.natural_from(rng.uniform(0.5, 3.0, size=ps + node.event_shape))
    if f is fam.Categorical:
        return (rng.normal(size=ps + node.event_shape),)
    if f is fam.CategoricalMarkovChain:
        return (rng.normal(size=ps + node.event_shape), rng.normal(size=ps + node.event_shape * 2))
    raise AssertionError(f)


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
