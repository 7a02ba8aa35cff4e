"""vmp.render: the DOT source of every ready-made model, the image files, the fallback without Graphviz."""
from __future__ import annotations

import re
import shutil
import warnings
import xml.etree.ElementTree as ET

import graphviz
import numpy as np
import pytest

import models
import vmp
import vmp.render
from vmp.cli import SPECS
from vmp.render import GraphvizMissingWarning, render

HAVE_DOT = shutil.which("dot") is not None


def build(name: str, **options):
    """A small instance of models.MODELS[name] on synthetic data."""
    spec = SPECS[name]
    return spec.build(models.MODELS[name], spec.synthetic(60, 0), 3, options)


VARIANTS = [(name, {}) for name in sorted(models.MODELS)] + [("matrix_factorization", {"factorized": True})]
IDS = [name + ("-factorized" if opts else "") for name, opts in VARIANTS]


# ----- a small reader of the DOT source that graphviz.Digraph writes (one statement a line) -----
def _unquote(token: str) -> str:
    return token[1:-1].replace('\\"', '"') if token.startswith('"') else token


_ID = r'("(?:[^"\\]|\\.)*"|[^\s\[\]{};]+)'


def parse(source: str):
    """(clusters, nodes, edges): clusters maps id -> (attributes text, enclosing cluster ids),
    nodes maps id -> (attributes text, enclosing cluster ids), edges is a set of (tail, head)."""
    clusters, nodes, edges, stack = {}, {}, set(), []
    for line in source.splitlines():
        s = line.strip()
        m = re.match(r"subgraph " + _ID + r" \{$", s)
        if m:
            cid = _unquote(m.group(1))
            clusters[cid] = ["", tuple(stack)]
            stack.append(cid)
            continue
        if s == "}":
            if stack:
                stack.pop()
            continue
        m = re.match(_ID + r" -> " + _ID + r"(?: \[.*\])?$", s)
        if m:
            edges.add((_unquote(m.group(1)), _unquote(m.group(2))))
            continue
        m = re.match(_ID + r" \[(.*)\]$", s)
        if m and m.group(1) not in ("graph", "node", "edge"):
            nodes[_unquote(m.group(1))] = (m.group(2), tuple(stack))
            continue
        if stack and "label=" in s:
            clusters[stack[-1]][0] += s
    return clusters, nodes, edges


def cluster_label(attrs: str) -> str:
    m = re.search(r'label="([^"]*)"', attrs)
    return m.group(1) if m else ""


@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_dot_source_shows_nodes_plates_and_edges(name, options):
    model = build(name, **options)
    dot = render(model)
    assert isinstance(dot, graphviz.Digraph)
    clusters, nodes, edges = parse(dot.source)
    g = model.graph

    for node in model:  # every random node, with its family; observed ones filled
        attrs, _ = nodes[node.name]
        assert f"<b>{node.name}</b>" in attrs and node.family.name in attrs
        assert "shape=ellipse" in attrs
        if node.observed:
            assert "style=filled" in attrs and "fillcolor=lightgrey" in attrs
        else:
            assert "filled" not in attrs
    for key, data in g.nodes(data=True):  # deterministic glue as boxes
        if data["kind"] == "deterministic":
            assert "shape=box" in nodes[key][0]
    assert set(g.edges) <= edges

    for cid, (attrs, _) in clusters.items():  # plates: labelled "name = size" at the bottom right
        assert cid.startswith("cluster_")
        assert re.fullmatch(r"\S+ = \d+", cluster_label(attrs))
        assert "labeljust=r" in attrs and "labelloc=b" in attrs
    labels = {cluster_label(a) for a, _ in clusters.values()}
    for plate in model.plates.values():
        assert f"{plate.name} = {plate.size}" in labels

    # each node sits in the cluster of its innermost plate, clusters nested like its plates
    for key, data in g.nodes(data=True):
        _, enclosing = nodes[key]
        want = [f"{p.name} = {p.size}" for p in data["expr"].plates]
        assert [cluster_label(clusters[c][0]) for c in enclosing] == want, key


def test_single_plate_clusters_are_named_after_the_plate():
    clusters, nodes, _ = parse(render(build("gaussian_mixture")).source)
    assert {"cluster_components", "cluster_data"} <= set(clusters)
    assert nodes["theta"][1] == ("cluster_components",)
    assert nodes["x"][1] == ("cluster_data",)
    assert nodes["pi"][1] == ()
    label = nodes["theta"][0]
    assert "GaussianWishart (components=3) x (2,)" in label


def test_factorized_matrix_factorization_nests_factors_in_users_and_items():
    model = build("matrix_factorization", factorized=True)
    clusters, nodes, _ = parse(render(model).source)
    u_clusters = nodes["u"][1]
    assert u_clusters[0] == "cluster_users"
    assert cluster_label(clusters[u_clusters[1]][0]) == "factors = 3"
    assert clusters[u_clusters[1]][1] == ("cluster_users",)   # factors inside users
    v_clusters = nodes["v"][1]
    assert v_clusters[0] == "cluster_items" and cluster_label(clusters[v_clusters[1]][0]) == "factors = 3"
    assert u_clusters[1] != v_clusters[1]                     # one cluster per nesting


def test_gate_selector_edge_is_marked_and_roles_label_edges():
    source = render(build("gaussian_mixture")).source
    assert re.search(r'z -> "theta\[z\]" \[label=" selects" style=dashed\]', source)
    assert re.search(r'"theta\[z\]" -> x \[label=" parameters"\]', source)


def test_names_with_colons_and_markup_are_safe(tmp_path):
    with vmp.Model("odd <names>") as model:
        rate = vmp.Gamma("rate:1", 2.0, 1.0)
        with vmp.Plate("n&m", 3):
            vmp.Gamma("y<", 2.0, rate, observed=np.ones(3))
    source = render(model).source
    assert "rate_1" in source and "&lt;" in source and "n&m = 3" in source
    if HAVE_DOT:
        render(model, tmp_path / "odd.svg")
        ET.parse(tmp_path / "odd.svg")


@pytest.mark.skipif(not HAVE_DOT, reason="the Graphviz dot program is not installed")
@pytest.mark.parametrize("name,options", VARIANTS, ids=IDS)
def test_svg_is_written_and_parses(tmp_path, name, options):
    model = build(name, **options)
    out = tmp_path / f"{name}.svg"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dot = model.render(str(out))
    assert isinstance(dot, graphviz.Digraph)
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    text = out.read_text()
    for node in model:
        assert node.name in text


@pytest.mark.skipif(not HAVE_DOT, reason="the Graphviz dot program is not installed")
def test_png_pdf_and_jupyter(tmp_path):
    model = build("lda")
    render(model, tmp_path / "m.png")
    render(model, tmp_path / "m.pdf")
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "m.pdf").read_bytes()[:4] == b"%PDF"
    bundle = model._repr_mimebundle_()
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_fallback_without_graphviz_writes_dot_and_warns_once(tmp_path, monkeypatch):
    monkeypatch.setattr(vmp.render.shutil, "which", lambda *a, **k: None)
    model = build("gaussian_mixture")
    out = tmp_path / "sub" / "model.svg"
    with pytest.warns(GraphvizMissingWarning) as record:
        dot = render(model, out)
    assert len(record) == 1
    message = str(record[0].message)
    assert "apt-get install graphviz" in message and "model.dot" in message
    assert isinstance(dot, graphviz.Digraph)
    assert not out.exists()
    written = (tmp_path / "sub" / "model.dot").read_text()
    assert written == dot.source and written.startswith("digraph")


def test_fallback_when_dot_is_not_on_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    model = build("lda")
    with pytest.warns(GraphvizMissingWarning):
        render(model, tmp_path / "lda.png")
    assert (tmp_path / "lda.dot").read_text().startswith("digraph")
    # Jupyter display still works: the DOT text instead of the image
    assert model._repr_mimebundle_() == {"text/plain": model.render().source}


def test_dot_extension_writes_source_without_warning(tmp_path):
    model = build("lda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dot = render(model, tmp_path / "lda.dot")
    assert (tmp_path / "lda.dot").read_text() == dot.source


def test_unknown_extension_is_an_error(tmp_path):
    with pytest.raises(ValueError, match=r"\.svg"):
        render(build("lda"), tmp_path / "lda.txt")
    with pytest.raises(ValueError):
        render(build("lda"), tmp_path / "noextension")


def test_a_chain_gets_its_self_loop_from_the_family_capability():
    """The self-loop of a node that is one variable along its innermost plate reads
    ``Family.joint_plates`` (through ``node.joint_plates``), not an attribute of the chain class."""
    with vmp.Model("hmm") as model:
        pi0 = vmp.Dirichlet("pi0", np.ones(2))
        with vmp.Plate("K", 2):
            a = vmp.Dirichlet("A", np.ones((2, 2)))
            mu = vmp.Normal("mu", 0.0, 0.5)
        with vmp.Plate("S", 2), vmp.Plate("T", 5):
            z = vmp.CategoricalMarkovChain("z", pi0, a)
            vmp.Normal("x", mu[z], 1.0, observed=np.zeros((2, 5)))
    source = render(model).source
    loops = re.findall(r"(\w+) -> (\w+) \[label=\" T: t -> t\+1\"", source)
    assert len(loops) == 1 and loops[0][0] == loops[0][1]
    assert source.count("t -> t+1") == 1
