"""Row ranges of the data plate: what an executor that splits the sums needs to know.

A batch message to a global node is a sum over the data plate's elements (Winn & Bishop eq. (5)),
and so is the bound, so both split into contiguous row ranges ``lo..hi``: each range is the
evaluation restricted by ``Context(subset={plate: lo..hi})`` with the locals' moments of those
rows as overrides, and the full-data weights (Paquet eq. (6) with scale 1). ``Chunked`` walks the
ranges in this process; ``DaskExecutor`` spreads them over workers.
"""
from __future__ import annotations

import numpy as np

from ..errors import GraphError, VMPError
from ..graph.leaves import Context
from .state import State


def data_plate(engine, name: str | None, who: str):
    """The plate to split: ``name``, or the largest plate of an observed node. A plate along which
    a node is one variable (``Node.joint_plates``: a Markov chain's steps) is never split: its
    blocks would cut the chain's forward-backward recursion."""
    model = engine.model
    joint = {p.name: n for n in model.nodes.values() for p in n.joint_plates}
    if name is not None:
        if name not in model.plates:
            raise VMPError(f"{who}: no plate named '{name}' (plates: {', '.join(model.plates)})")
        if name in joint:
            raise GraphError(f"{who}: '{joint[name].name}' is one {joint[name].family.name} along plate '{name}' "
                             f"(a Markov chain's steps): split an outer plate (whole chains), not its steps")
        return model.plates[name]
    observed = [p for n in model.nodes.values() if n.has_data for p in n.plates if p.name not in joint]
    if not observed:
        raise VMPError(f"{who}: model '{model.name}' has no observed node on a plate to partition")
    return max(observed, key=lambda p: p.size)


def local_names(engine, plate) -> list[str]:
    """The hidden nodes on ``plate`` (the locals: z of a mixture, of LDA)."""
    return [node.name for node in engine.hidden if plate in node.plates]


def rows_of(moments: tuple, axis: int, lo: int, hi: int) -> tuple:
    """Rows lo..hi of each component along ``axis`` (views)."""
    index = (slice(None),) * axis + (slice(lo, hi),)
    return tuple(m[index] for m in moments)


def rows_context(plate: str, lo: int, hi: int, local: dict, state: State | None = None,
                 stable: bool = False) -> Context:
    """The evaluation of rows lo..hi of ``plate``: the locals' moments of those rows as overrides;
    ``stable``: the model evaluates no other rows (a holder's), so its memos hold."""
    return Context(subset={plate: np.arange(lo, hi)}, overrides=local, state=state, stable=stable)


def rows_bound(engine, plate, ctx: Context, natural: dict) -> float:
    """The rows' share of the ELBO: the factors on the data plate restricted to ``ctx`` (full-data
    weights) plus the entropies m_i H[q_i] of the locals' rows (``natural``, moments in
    ``ctx.overrides``)."""
    total = 0.0
    for f in engine.factors.values():
        if plate in f.child.plates:
            total += float(f.elog(engine.factor_weight(f), cached=ctx.stable, ctx=ctx))
    for name, nat in natural.items():
        node = engine.nodes[name]
        h = node.family.entropy(nat, ctx.overrides[name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += float(np.sum(h))
    return total
