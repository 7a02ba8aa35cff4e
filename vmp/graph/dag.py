"""The model's DAG as plain dicts, and its topological order without importing networkx (a
tenth of a second on a process's first fit). ``Model.graph`` builds its networkx.DiGraph from
the same structure, so both see the same nodes and edges in the same order."""
from __future__ import annotations

from .expressions import Constant, Expression
from .node import Node


def structure(model) -> tuple[dict, list]:
    """(nodes: name -> attributes, edges: [(parent, child, role)]) in the order a DiGraph built
    by add_node / add_edge calls would hold them: the random nodes, then each parent
    expression as met (a deterministic one before its own inputs' edges)."""
    nodes: dict = {n.name: {"expr": n, "kind": "observed" if n.observed else "latent"} for n in model.nodes.values()}
    edges: list = []

    def visit(expr: Expression, child: str, role: str) -> None:
        if isinstance(expr, Constant) or not (isinstance(expr, Node) or expr.inputs()):
            return  # a constant, or glue over constants only (a matrix given by value)
        if expr.transparent:
            for inner in expr.inputs():
                visit(inner, child, role)
            return
        key = expr.name
        if not isinstance(expr, Node):
            nodes.setdefault(key, {}).update(expr=expr, kind="deterministic")
            for inner in expr.inputs():
                visit(inner, key, role)
        nodes.setdefault(key, {})
        edges.append((key, child, role))

    for node in model.nodes.values():
        for role, expr in node.parents.items():
            visit(expr, node.name, role)
    return nodes, edges


def topological_order(nodes: dict, edges: list) -> list | None:
    """The nodes, parents before children, in networkx.topological_sort's order (Kahn's
    generations: the nodes without parents in insertion order, then each generation's
    children in the order their edges were first added); None if there is a cycle."""
    children: dict = {n: {} for n in nodes}
    for parent, child, _ in edges:
        children[parent].setdefault(child, None)
    indegree = dict.fromkeys(nodes, 0)
    for kids in children.values():
        for child in kids:
            indegree[child] += 1
    order = [n for n, d in indegree.items() if d == 0]
    waiting = {n: d for n, d in indegree.items() if d}
    start = 0
    while start < len(order):
        generation, start = order[start:], len(order)
        for node in generation:
            for child in children[node]:
                waiting[child] -= 1
                if not waiting[child]:
                    order.append(child)
                    del waiting[child]
    return None if waiting else order
