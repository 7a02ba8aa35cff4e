"""Draws from the prior: ancestral sampling of every node, pushed through the glue.

The model's joint p(x) = prod_i p(x_i | pa_i) is sampled in topological order: each node is
drawn from its conditional ``node.conditional`` at the draws of its parents, read through the
glue (gates, gathers, dot products, sums, scales) by :func:`vmp.graph.draws.draw`. Observed
nodes are drawn too, ignoring their data: the prior predictive. The number of trials of a
Multinomial (its data's row sums) and the lengths of Markov chains are part of the design and
are kept.

Every array has a leading axis of ``n`` draws, then the node's plates, then its value's event
axes (none for a Categorical's integer value, the time plate for a chain's path). Elements of
weight 0 (absent: the padded steps of shorter sequences) and the steps of a chain past its
length are NaN.
"""
from __future__ import annotations

import numpy as np

from ..errors import GraphError, OptionError
from .draws import align, draw, full, plates_of


def sample_prior(model, n: int, seed=None) -> dict[str, np.ndarray]:
    """``n`` joint draws of every node of ``model`` from the prior, by node name (in declaration
    order). ``seed`` is an int, None or a numpy Generator."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise OptionError(f"model '{model.name}': sample_prior(n) needs a positive integer number of draws, "
                          f"got {n!r}")
    return ancestral(model, int(n), seed)


def ancestral(model, n: int, seed=None, given: dict | None = None) -> dict[str, np.ndarray]:
    """``n`` joint draws of every node from p(x | given): the nodes in ``given`` ({name: draws
    shaped (n,) + plates + event}, e.g. draws from a fitted q) take those values, the others are
    drawn from their conditionals in topological order."""
    _, order = model.compile()
    rng = np.random.default_rng(seed)
    memo: dict = dict(given or {})
    for name in order:
        if name in model.nodes and name not in memo:
            memo[name] = _draw(model[name], n, rng, memo)
    return {name: _absent_as_nan(model[name], memo[name]) for name in model.nodes}


def _draw(node, n: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
    """Draws of ``node`` from p(node | parents), its parents already in ``memo``."""
    values = {role: align(draw(expr, n, rng, memo), plates_of(expr, node.plates), node.plates)
              for role, expr in node.parents.items()}
    try:
        natural = node.conditional(values)
    except GraphError as err:
        raise GraphError(f"sample_prior: {err}") from None
    return node.family.sample(full(natural, node, n), rng)


def _absent_as_nan(node, values: np.ndarray) -> np.ndarray:
    """The draws with NaN at the elements that are not there: weight 0, or a chain's steps past
    its length."""
    absent = None if node.multiplicity is None else np.broadcast_to(node.multiplicity == 0, node.plate_shape)
    padding = getattr(node.factor, "padding", None)
    if padding is not None:
        absent = padding > 0 if absent is None else absent | (padding > 0)
    if absent is None or not absent.any():
        return values
    where = absent.reshape(absent.shape + (1,) * (values.ndim - 1 - absent.ndim))
    return np.where(where, np.nan, values)
