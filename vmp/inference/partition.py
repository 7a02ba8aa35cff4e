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
from ..graph.expressions import Gather
from ..graph.leaves import Context
from .state import State


def data_plate(engine, name: str | None, who: str, cut: bool):
    """The plate to split: ``name``, or the largest plate of an observed node whose rows can be
    evaluated apart (:func:`apart`; ``cut``: the pieces hold only their rows of observed data):
    never a Markov chain's steps nor a plate whose factors read other rows of it."""
    model = engine.model
    why = apart(engine, cut)
    if name is not None:
        if name not in model.plates:
            raise VMPError(f"{who}: no plate named '{name}' (plates: {', '.join(model.plates)})")
        if name in why:
            raise GraphError(f"{who}: {why[name]}")
        return model.plates[name]
    observed = [p for n in model.nodes.values() if n.has_data for p in n.plates]
    usable = [p for p in observed if p.name not in why]
    if not usable:
        if observed:
            raise GraphError(f"{who}: model '{model.name}' has no plate it can split: "
                             + "; ".join(why[p] for p in dict.fromkeys(p.name for p in observed)))
        raise VMPError(f"{who}: model '{model.name}' has no observed node on a plate to partition")
    return max(usable, key=lambda p: p.size)


def apart(engine, cut: bool) -> dict[str, str]:
    """The plates whose rows cannot be evaluated apart, each with why: a plate along which a
    node is one variable (``Node.joint_plates``: blocks of a Markov chain's steps would cut its
    forward-backward recursion), and a plate whose factors read a node of it at other rows (a
    gather ``u[index]`` from the plate onto itself: a block's messages land on rows of other
    blocks). Where the pieces hold only their rows of observed data (``cut``: a holder of a
    partitioned executor) an observed node gathered so counts too; ``Chunked`` reads such data
    whole."""
    from .partition_model import glue

    why: dict[str, str] = {}
    for node in engine.model.nodes.values():
        for p in node.joint_plates:
            why.setdefault(p.name, f"'{node.name}' is one {node.family.name} along plate '{p.name}' (a Markov "
                                   f"chain's steps): split an outer plate (whole chains), not its steps")
        for expr in glue(node):
            source = getattr(expr, "node", None)
            if isinstance(expr, Gather) and expr.plate.name == source.plates[0].name and (
                    cut or not source.observed):
                why.setdefault(expr.plate.name, f"'{node.name}' reads '{source.name}' at other rows of plate "
                                                f"'{expr.plate.name}' (the gather {source.name}[...]), so blocks of "
                                                f"its rows are not independent: split another plate, or use Serial")
    return why


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
