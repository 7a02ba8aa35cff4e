"""Initial q: each node at its prior message, then seeded symmetry breaking.

A mixture started at its prior is a symmetric saddle: every component gets the same update.
By default the means of Gaussian components gated by a Categorical start at data points chosen
k-means++-style (Arthur & Vassilvitskii 2007), gated Dirichlet rows get random pseudo-counts
(as scikit-learn's LDA), each gate's selector is then updated from them (an E-step), and
Gaussians in an inner product start at a draw from their prior. ``init={name: value}`` is applied
last: a mean for Gaussian/Normal nodes, probabilities for Categorical nodes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..errors import GraphError
from ..graph.expressions import Dot, Gate, random_nodes


def initialize(engine, rng: np.random.Generator, init: Any = None) -> None:
    for node in engine.hidden:
        own = engine.factors[node.name]
        node.set_natural(own.messages(node))
    if init == "prior":
        return
    if init is not None and not isinstance(init, dict):
        raise GraphError("init= takes 'prior' or a dict from node names to initial means/probabilities")
    _break_symmetry(engine, rng)
    for name, value in (init or {}).items():
        _set_mean(engine.model[name], np.asarray(value, float))


def _set_mean(node, value: np.ndarray) -> None:
    if node.observed:
        raise GraphError(f"init: node '{node.name}' is observed")
    f = node.family
    if f is fam.Gaussian:
        prec = -2.0 * node.natural[1]
        node.set_natural((np.einsum("...ij,...j->...i", prec, np.broadcast_to(value, node.moments[0].shape)), node.natural[1]))
    elif f is fam.Normal:
        node.set_natural((-2.0 * node.natural[1] * value, node.natural[1]))
    elif f is fam.Categorical:
        node.set_natural((np.log(np.broadcast_to(value, node.moments[0].shape)),))
    else:
        raise GraphError(f"init: cannot set the mean of {f.name} node '{node.name}'; give a Gaussian, Normal or Categorical")


def _expressions(engine):
    """(child, expression, top) for every expression inside every parent role, reached
    through ``inputs()`` so that any kind of glue (gate, gather, dot, sum...) is traversed."""
    def walk(expr):
        yield expr
        for inner in expr.inputs():
            yield from walk(inner)

    for node in engine.model.nodes.values():
        for top in node.parents.values():
            for expr in walk(top):
                yield node, expr, top


def _break_symmetry(engine, rng) -> None:
    """Break the symmetry of gated components, then set each gate's selector from them.

    Gaussian components that are the gated mean of observed data start at k-means++ centers;
    other gated Gaussians, and the Gaussians of an inner product, start at a draw from their
    prior. The schedule runs parents before children, so the first sweep starts from these
    responsibilities (an E-step from k-means++ centers, as EM and scikit-learn do).
    """
    done, selectors = set(), []
    for child, expr, top in _expressions(engine):
        if isinstance(expr, Gate) and not expr.node.observed and expr.node.name not in done:
            p = expr.node
            if p.family in (fam.Gaussian, fam.Normal):
                direct = expr is top and child.observed and p.plates == (expr.gated_plate,)
                data = np.asarray(child.data, float).reshape((-1,) + p.event_shape) if direct else None
                if direct and child.mask is not None:
                    data = data[child.mask.reshape(-1)]
                if direct and len(data) >= expr.gated_plate.size:
                    _set_mean(p, kmeanspp(data, expr.gated_plate.size, rng))
                else:
                    _set_mean(p, p.family.sample(p.natural, rng))
                done.add(p.name)
            elif p.family is fam.Dirichlet:
                noise = rng.gamma(100.0, 0.01, size=p.natural[0].shape)
                p.set_natural((p.natural[0] + noise,))
                done.add(p.name)
        if isinstance(expr, Gate) and expr.node.name in done and not expr.selector.observed \
                and expr.selector not in selectors:
            selectors.append(expr.selector)
        if isinstance(expr, Dot):
            for n in random_nodes(expr):
                if n.family in (fam.Gaussian, fam.Normal) and n.name not in done and not n.observed:
                    _set_mean(n, n.family.sample(n.natural, rng))
                    done.add(n.name)
    for z in sorted(selectors, key=engine.hidden.index, reverse=True):
        engine.update(z)


def kmeanspp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k rows of x, the first uniform and each next with probability proportional to D(x)^2."""
    flat = x.reshape(len(x), -1)
    centers = [flat[rng.integers(len(flat))]]
    d2 = np.sum((flat - centers[0]) ** 2, axis=1)
    for _ in range(1, k):
        total = d2.sum()
        i = rng.choice(len(flat), p=d2 / total) if total > 0 else rng.integers(len(flat))
        centers.append(flat[i])
        d2 = np.minimum(d2, np.sum((flat - flat[i]) ** 2, axis=1))
    return np.stack(centers).reshape((k,) + x.shape[1:])
