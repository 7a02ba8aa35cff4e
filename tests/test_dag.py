"""The model's DAG without networkx (vmp/graph/dag.py) against networkx itself: the same
nodes, edges and attributes in the same order, the same topological order (the update
order of a fit), and a cycle found where networkx finds one (its message: tests/test_errors.py)."""
from __future__ import annotations

import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

from tests.golden_fits import FITS
from tests.rule_cases import CASES
from vmp.graph.dag import structure, topological_order


def _models():
    for name, build in CASES.items():
        yield name, build()[0]
    for name, (build, _) in FITS.items():
        yield name, build()


MODELS = list(_models())


@pytest.mark.parametrize("name,model", MODELS, ids=[n for n, _ in MODELS])
def test_order_is_networkx_topological_sort(name, model):
    g = model.graph
    nodes, edges = structure(model)
    assert list(g.nodes) == list(nodes)
    assert [dict(g.nodes[n]) for n in g.nodes] == list(nodes.values())
    assert sorted(g.edges) == sorted({(u, v) for u, v, _ in edges})
    assert topological_order(nodes, edges) == list(nx.topological_sort(g))


def test_order_on_random_dags_and_cycles():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 12))
        names = [f"n{i}" for i in rng.permutation(n)]
        nodes = {k: {} for k in names}
        edges = []
        for _ in range(int(rng.integers(0, 3 * n))):
            a, b = sorted(rng.integers(n, size=2))
            if a != b or trial % 4 == 0:  # every fourth graph may have loops and back edges
                u, v = (names[b], names[a]) if trial % 4 == 0 and rng.random() < 0.2 else (names[a], names[b])
                edges.append((u, v, "r"))
        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        g.add_edges_from((u, v) for u, v, _ in edges)
        expected = list(nx.topological_sort(g)) if nx.is_directed_acyclic_graph(g) else None
        assert topological_order(nodes, edges) == expected


def test_a_fit_does_not_import_networkx():
    code = ("import sys, numpy as np, vmp\n"
            "from vmp.models import matrix_factorization\n"
            "rng = np.random.default_rng(0)\n"
            "m = matrix_factorization(rng.integers(5, size=20), rng.integers(6, size=20), rng.normal(size=20), 2)\n"
            "m.fit(iterations=2, progress=False)\n"
            "print('networkx' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

