"""The model: a named DAG of nodes (networkx), entered with ``with``."""
from __future__ import annotations

import numpy as np

from ..errors import GraphError, OptionError
from . import context
from .expressions import Expression


class Model:
    """A Bayesian network. Declare nodes inside ``with Model(name):``; ``model["x"]`` finds one."""

    def __init__(self, name: str = "model"):
        self.name = name
        self.nodes: dict = {}
        self.plates: dict = {}
        self._compiled = None

    def __enter__(self) -> "Model":
        context._MODELS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        context._MODELS.remove(self)

    def _add(self, node) -> None:
        if node.name in self.nodes:
            raise GraphError(f"model '{self.name}': a node named '{node.name}' exists already")
        self._check_same_model(node)
        self.nodes[node.name] = node
        self._compiled = None

    def _check_same_model(self, node) -> None:
        """Refuse a parent declared in another model (its q would never be updated here)."""
        from .node import Node

        stack = [e for e in node.parents.values() if isinstance(e, Expression)]
        while stack:
            expr = stack.pop()
            if isinstance(expr, Node):
                if expr.model is not self:
                    raise GraphError(
                        f"model '{self.name}': node '{node.name}' has parent '{expr.name}' from model "
                        f"'{expr.model.name}'; declare '{expr.name}' inside this model's with-block")
            else:
                stack.extend(expr.inputs())

    def __getitem__(self, name: str):
        try:
            return self.nodes[name]
        except KeyError:
            known = ", ".join(self.nodes) or "none"
            raise GraphError(f"model '{self.name}': no node named '{name}' (nodes: {known})") from None

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def __iter__(self):
        return iter(self.nodes.values())

    # ----- structure --------------------------------------------------------------------
    def _resolve(self) -> None:
        for node in self.nodes.values():
            for role, value in list(node.parents.items()):
                if isinstance(value, str):
                    parent = self[value]
                    node.check_parent(role, parent)
                    node.parents[role] = parent

    @property
    def graph(self):
        """Random nodes and the deterministic expressions between them; edges parent -> child
        (a networkx.DiGraph)."""
        import networkx as nx  # imported on first use: it costs a tenth of a second at import vmp

        self._resolve()
        g = nx.DiGraph()
        for node in self.nodes.values():
            g.add_node(node.name, expr=node, kind="observed" if node.observed else "latent")

        def visit(expr: Expression, child: str, role: str) -> None:
            from .expressions import Constant
            from .node import Node

            if isinstance(expr, Constant):
                return
            key = expr.name
            if not isinstance(expr, Node):
                g.add_node(key, expr=expr, kind="deterministic")
                for inner in expr.inputs():
                    visit(inner, key, role)
            g.add_edge(key, child, role=role)

        for node in self.nodes.values():
            for role, expr in node.parents.items():
                visit(expr, node.name, role)
        return g

    def compile(self):
        """Check the graph (acyclic, conjugate, plates) and bind every factor. Cached."""
        if self._compiled is None:
            import networkx as nx

            g = self.graph
            if not nx.is_directed_acyclic_graph(g):
                cycle = " -> ".join(u for u, _ in nx.find_cycle(g))
                raise GraphError(f"model '{self.name}': the graph has a cycle: {cycle}")
            from .compiled import CompiledFactor

            factors = {name: CompiledFactor(node) for name, node in self.nodes.items()}
            order = [n for n in nx.topological_sort(g) if n in self.nodes]
            self._compiled = (factors, order)
        return self._compiled

    # ----- inference --------------------------------------------------------------------
    def fit(self, **options):
        """Fit q by variational message passing; see :func:`vmp.inference.fit`."""
        from ..inference import fit

        iterations = options.get("iterations", 1)
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise OptionError(f"model '{self.name}': fit(iterations=...) needs a positive integer, "
                              f"got {iterations!r}")
        return fit(self, **options)

    def elbo(self) -> float:
        """The exact evidence lower bound of the current q."""
        from ..inference.engine import Engine

        unfitted = [n.name for n in self.nodes.values() if not n.observed and n.moments is None]
        if unfitted:
            raise GraphError(f"model '{self.name}': no posterior yet (nodes {', '.join(unfitted)}); "
                             f"call model.fit() before model.elbo()")
        return Engine(self).elbo()

    def render(self, filename: str | None = None, **options):
        """The network diagram as a graphviz.Digraph; written to ``filename`` when given
        (``timeout=`` seconds for Graphviz's layout, see :func:`vmp.render.render`)."""
        from ..render import render

        return render(self, filename, **options)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.render()._repr_mimebundle_(include=include, exclude=exclude)

    def __repr__(self) -> str:
        return f"<Model {self.name}: {len(self.nodes)} nodes>"
