"""Draw a model as a Graphviz diagram: random nodes, deterministic glue, plates as clusters.

Latent random nodes are ellipses (dashed for an auxiliary the engine declared: a logit link's
Polya-gamma variable), observed ones are filled grey, deterministic expressions
(gates ``mu[z]``, gathers ``u[ratings]``, ``dot(u, v)``, ``c*tau``) are boxes. A Markov chain
(z_0 -> z_1 -> ... over its time plate) is one node with a self-loop labelled with that plate. Each plate is a
``cluster_<name>`` subgraph labelled ``name = size`` at its bottom right; a node sits in the
cluster of its innermost plate, and plates nest in the order of the node's ``plates`` tuple.

``render(model)`` only builds the ``graphviz.Digraph`` (Graphviz itself is needed to turn it into
an image, in Jupyter too); ``render(model, "net.svg")`` also writes the image, or, when the
Graphviz ``dot`` program is missing, the DOT source next to it as ``net.dot`` with one warning.

Graphviz's layout time grows steeply with the number of nodes (an HMM unrolled by hand over 80
steps, about 400 nodes, did not finish in minutes). So a diagram of more than ``LARGE`` nodes is
laid out with straight edges and bounded layout passes (seconds instead of minutes; its title
says so), and every layout runs under a time limit (``timeout``, default ``LAYOUT_SECONDS``):
past it the DOT source is written instead, with a :class:`LayoutTimeoutWarning`.
"""
from __future__ import annotations

import html
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import graphviz

__all__ = ["render", "diagram", "write", "GraphvizMissingWarning", "LayoutTimeoutWarning",
           "SOURCE_SUFFIXES", "LARGE", "LAYOUT_SECONDS"]

#: suffixes written as DOT source rather than rendered
SOURCE_SUFFIXES = (".dot", ".gv")

#: diagrams with more nodes than this get the fast layout (straight edges, bounded passes)
LARGE = 150
#: default time limit of one Graphviz layout, in seconds
LAYOUT_SECONDS = 30.0
#: Graphviz attributes of the fast layout: edges as straight lines (spline routing around the
#: plates is what takes minutes), few network-simplex and crossing-minimization passes, and the
#: drawing scaled down to 30 x 30 inches (a 400-node PNG is otherwise 16,000 pixels square and
#: takes half a minute to rasterize)
FAST_LAYOUT = {"splines": "false", "nslimit": "1", "nslimit1": "1", "mclimit": "0.1", "size": "30,30"}

_FONT = "Helvetica"
_OBSERVED_FILL = "lightgrey"


class GraphvizMissingWarning(UserWarning):
    """The Graphviz ``dot`` program is not installed: the DOT source was written instead."""


class LayoutTimeoutWarning(UserWarning):
    """Graphviz did not finish the layout within the time limit: the DOT source was written."""


class LayoutTimeout(Exception):
    pass


class Diagram(graphviz.Digraph):
    """A ``graphviz.Digraph`` that displays in Jupyter as SVG, laid out under the time limit;
    without Graphviz, or past the limit, as DOT text with a line saying why."""

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        try:
            return {"image/svg+xml": _pipe(self, "svg", LAYOUT_SECONDS).decode("utf-8")}
        except (graphviz.ExecutableNotFound, FileNotFoundError):
            return {"text/plain": self.source}
        except (LayoutTimeout, subprocess.CalledProcessError) as err:
            return {"text/plain": f"// {err}\n{self.source}"}


def _pipe(dot: graphviz.Digraph, fmt: str, timeout: float | None) -> bytes:
    """Run Graphviz on ``dot`` and return the image; LayoutTimeout past ``timeout`` seconds
    (the process is killed), CalledProcessError when Graphviz fails."""
    program = shutil.which(dot.engine or "dot")
    if program is None:
        raise graphviz.ExecutableNotFound((dot.engine or "dot",))
    try:
        done = subprocess.run([program, f"-T{fmt}"], input=dot.source.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        raise LayoutTimeout(f"Graphviz did not finish the layout of {_size(dot)} within "
                            f"{timeout:g} s") from None
    return done.stdout


def _size(dot: graphviz.Digraph) -> str:
    return getattr(dot, "size_text", "the diagram")


# ----- labels ---------------------------------------------------------------------------------
def _shape_text(expr) -> str:
    """``(components=10) x (2,)``: plates then event shape; empty for a scalar without plates."""
    parts = []
    if expr.plates:
        parts.append("(" + ", ".join(f"{p.name}={p.size}" for p in expr.plates) + ")")
    if expr.event_shape:
        parts.append(str(tuple(expr.event_shape)))
    return " x ".join(parts)


def _random_label(node) -> str:
    detail = " ".join(s for s in (node.family.name, _shape_text(node)) if s)
    notes = []
    if getattr(node, "clamp", None) is not None:
        notes.append(f"{int((~node.clamp.observed).sum())} masked inferred")
    if getattr(node, "barren", None) is not None:
        notes.append(f"{int(node.barren.sum())} barren pruned")
    if node.owner is not None:
        notes.append(f"auxiliary of '{node.owner.name}'")
    extra = f'<br/><font point-size="9">{html.escape("; ".join(notes))}</font>' if notes else ""
    return (f'<<b>{html.escape(node.name)}</b><br/>'
            f'<font point-size="10">{html.escape(detail)}</font>{extra}>')


def _kind_of_expression(expr) -> str:
    from .graph.expressions import Dot, Gate, Gather, Product, Rows, Scaled, Sticks
    from .graph.linear import RandomMap

    if isinstance(expr, Rows):
        return f"rows over {expr.dim_plate.name}"
    if isinstance(expr, Sticks):
        return f"sticks over {expr.dim_plate.name}"
    if isinstance(expr, Gate):
        return f"gate over {expr.gated_plate.name}"
    if isinstance(expr, Gather):
        return f"gather from {expr.node.plates[0].name}"
    if isinstance(expr, Dot):
        return "inner product" if expr.shared is None else f"inner product over {expr.shared.name}"
    if isinstance(expr, Scaled):
        return "scaled"
    if isinstance(expr, Product):
        return f"scaled by {expr.scale.name}"
    if isinstance(expr, RandomMap):
        return f"matrix product, rows over {expr.rows.dim_plate.name}"
    return type(expr).__name__.lower()


def _deterministic_label(expr) -> str:
    return (f'<{html.escape(expr.name)}<br/>'
            f'<font point-size="9">{html.escape(_kind_of_expression(expr))}</font>>')


def _edge_label(g, tail: str, head: str, role: str) -> tuple[str | None, dict]:
    """(label, extra attributes) of the edge tail -> head."""
    from .graph.expressions import Gate

    head_expr = g.nodes[head]["expr"]
    if g.nodes[head]["kind"] != "deterministic":
        return role, {}
    if isinstance(head_expr, Gate) and head_expr.selector.name == tail:
        return "selects", {"style": "dashed"}
    return None, {}


# ----- plates ---------------------------------------------------------------------------------
def _cluster_ids(paths: set[tuple]) -> dict[tuple, str]:
    """A cluster name for each plate path (outermost first): ``cluster_<plate>``, qualified by
    the outer plates (``cluster_users/factors``) when one plate occurs at several nesting paths."""
    prefixes = {path[:i] for path in paths for i in range(1, len(path) + 1)}
    where: dict[str, set] = {}
    for prefix in prefixes:
        where.setdefault(prefix[-1].name, set()).add(prefix)
    ids, used = {}, set()
    for prefix in sorted(prefixes, key=lambda p: (len(p), [q.name for q in p])):
        name = prefix[-1].name
        if len(where[name]) == 1:
            cid = f"cluster_{name}"
        else:
            cid = "cluster_" + "/".join(p.name for p in prefix)
        base, n = cid, 2
        while cid in used:
            cid, n = f"{base}~{n}", n + 1
        used.add(cid)
        ids[prefix] = cid
    return ids


def _node_id(name: str, taken: set[str]) -> str:
    # graphviz.Digraph.edge() reads "a:b" as node a, port b; keep such names out of the ids
    nid = name.replace(":", "_")
    base, n = nid, 2
    while nid in taken:
        nid, n = f"{base}_{n}", n + 1
    taken.add(nid)
    return nid


def _titled(name: str, g) -> Diagram:
    """An empty diagram with the model's name as its title and the fonts and layout of its size."""
    dot = Diagram(name=name, format="svg")
    dot.size_text = f"{g.number_of_nodes()} nodes and {g.number_of_edges()} edges"
    title, size = f"<b>{html.escape(name)}</b>", 14
    if g.number_of_nodes() > LARGE:
        dot.attr(**FAST_LAYOUT)
        size = round(14 * math.sqrt(g.number_of_nodes() / 40))  # still legible once scaled down
        title += (f'<br/><font point-size="{round(0.75 * size)}">{g.number_of_nodes()} nodes: fast '
                  f'layout, straight edges</font>')
    dot.attr(label=f"<{title}>", labelloc="t", fontname=_FONT,
             fontsize=str(size), rankdir="TB", nodesep="0.35", ranksep="0.45")
    dot.attr("node", fontname=_FONT, fontsize="12")
    dot.attr("edge", fontname=_FONT, fontsize="9", color="gray30", fontcolor="gray25")
    return dot


def diagram(model, *, roles: bool = True) -> Diagram:
    """The model's network as a ``graphviz.Digraph`` (nothing is written or run).

    roles: label the edges into random nodes with the parent's role (mean, precision, ...).
    """
    g = model.graph
    dot = _titled(model.name, g)
    ids: dict[str, str] = {}
    taken: set[str] = set()
    members: dict[tuple, list[str]] = {}
    for name in g.nodes:
        ids[name] = _node_id(name, taken)
        members.setdefault(tuple(g.nodes[name]["expr"].plates), []).append(name)
    cluster_ids = _cluster_ids({path for path in members if path})

    def add_node(target, name: str) -> None:
        attrs = g.nodes[name]
        expr, kind = attrs["expr"], attrs["kind"]
        if kind == "deterministic":
            target.node(ids[name], label=_deterministic_label(expr), shape="box", fontsize="11",
                        color="gray35", margin="0.08,0.04", height="0.3")
        elif kind == "observed":
            target.node(ids[name], label=_random_label(expr), shape="ellipse", style="filled",
                        fillcolor=_OBSERVED_FILL)
        elif expr.owner is not None:  # an auxiliary the engine declared (a logit link's Polya-Gamma variable)
            target.node(ids[name], label=_random_label(expr), shape="ellipse", style="dashed")
        else:
            target.node(ids[name], label=_random_label(expr), shape="ellipse")
        for step in () if kind == "deterministic" else expr.joint_plates:
            # one variable along the plate (Family.joint_plates: a chain z_0 -> z_1 -> ...): a self-loop
            target.edge(ids[name], ids[name], label=f" {step.name}: t -> t+1", style="bold", dir="forward")

    def add_cluster(parent, prefix: tuple) -> None:
        plate = prefix[-1]
        with parent.subgraph(name=cluster_ids[prefix]) as sub:
            sub.attr(label=f"{plate.name} = {plate.size}", labeljust="r", labelloc="b",
                     style="rounded", color="gray45", fontname=_FONT, fontsize="11")
            fill(sub, prefix)

    def fill(target, prefix: tuple) -> None:
        for name in members.get(prefix, []):
            add_node(target, name)
        # sub-plates in the order their first node was declared
        children = dict.fromkeys(path[:len(prefix) + 1] for path in members
                                 if len(path) > len(prefix) and path[:len(prefix)] == prefix)
        for child in children:
            add_cluster(target, child)

    fill(dot, ())
    for tail, head, attrs in g.edges(data=True):
        role = attrs.get("role")
        label, extra = _edge_label(g, tail, head, role)
        if label and roles:
            extra = dict(extra, label=f" {label}")
        dot.edge(ids[tail], ids[head], **extra)
    return dot


# ----- files ----------------------------------------------------------------------------------
def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    fmt = suffix[1:]
    if suffix in SOURCE_SUFFIXES:
        return "dot-source"
    if fmt not in graphviz.FORMATS:
        raise ValueError(f"cannot tell the image format of '{path}': give a file name ending in "
                         f".svg, .png or .pdf (or .dot for the DOT source)")
    return fmt


def write(dot: graphviz.Digraph, filename, *, timeout: float | None = LAYOUT_SECONDS) -> Path:
    """Write ``dot`` to ``filename`` (format from the extension) and return the path written:
    ``filename`` itself, or the DOT source at ``filename`` with suffix .dot when Graphviz's
    ``dot`` program is missing (one :class:`GraphvizMissingWarning` then) or does not finish
    within ``timeout`` seconds (one :class:`LayoutTimeoutWarning`; None: no limit)."""
    path = Path(filename)
    fmt = _format_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "dot-source":
        path.write_text(dot.source, encoding="utf-8")
        return path
    try:
        data = _pipe(dot, fmt, timeout)
    except (graphviz.ExecutableNotFound, FileNotFoundError):
        reason, category = "the Graphviz 'dot' program is not on PATH", GraphvizMissingWarning
        advice = "install Graphviz (e.g. apt-get install graphviz) to get the image"
    except subprocess.CalledProcessError as err:
        detail = (err.stderr or b"").decode(errors="replace").strip().splitlines()
        reason, category = f"Graphviz failed ({detail[-1] if detail else err})", GraphvizMissingWarning
        advice = "install Graphviz (e.g. apt-get install graphviz) to get the image"
    except LayoutTimeout as err:
        reason, category = str(err), LayoutTimeoutWarning
        advice = ("draw a smaller model (fewer nodes: plates instead of nodes declared one by one), "
                  "or give render(..., timeout=None) to wait")
    else:
        path.write_bytes(data)
        return path
    fallback = path.with_suffix(".dot")
    fallback.write_text(dot.source, encoding="utf-8")
    warnings.warn(f"{reason}: wrote the DOT source to '{fallback}' instead of '{path}'; {advice}",
                  category, stacklevel=3)
    return fallback


def render(model, filename=None, *, timeout: float | None = LAYOUT_SECONDS) -> graphviz.Digraph:
    """The model's network diagram as a ``graphviz.Digraph`` (shown inline by Jupyter).

    filename: also write it there, the format from the extension (.svg, .png, .pdf, ...;
    .dot or .gv for the DOT source). Without the Graphviz ``dot`` program, or when its layout
    takes more than ``timeout`` seconds (None: no limit), the DOT source is written next to it
    with the suffix .dot and a warning says why and what to do.
    """
    dot = diagram(model)
    if filename is not None:
        write(dot, filename, timeout=timeout)
    return dot
