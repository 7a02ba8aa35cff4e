"""A picture of a fitted 2-D Gaussian mixture: the data coloured by most probable component,
each used component's posterior mean and its 2-sigma ellipse (from E[Lambda]^-1)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse

__all__ = ["find_mixture", "plot_mixture", "components_used"]


def find_mixture(model):
    """(x, z, mu, Lambda) of an observed 2-D Gaussian whose mean and precision are gated by one
    Categorical, or (x, z, theta, theta) when they are one gated GaussianWishart node theta; None
    when the model has no such mixture."""
    from ..graph.expressions import Gate
    from ..graph.nodes import Gaussian

    for node in model:
        if not (isinstance(node, Gaussian) and node.observed and node.event_shape == (2,)):
            continue
        mean = node.parents.get("mean", node.parents.get("parameters"))
        prec = node.parents.get("precision", mean)
        if isinstance(mean, Gate) and isinstance(prec, Gate) and mean.selector is prec.selector:
            if len(mean.selector.plates) == 1 and len(mean.node.plates) == 1:
                return node, mean.selector, mean.node, prec.node
    return None


def _precisions(node) -> np.ndarray:
    """E[Lambda_k] of a plate of precisions: a Wishart's mean, a GaussianWishart's "precision"."""
    return np.asarray(node.parameters.get("precision", node.mean), float)


def plot_mixture(model, filename=None, *, min_weight: float = 0.01) -> Figure | None:
    """The fitted mixture over its data, or None when the model is not a 2-D Gaussian mixture
    (see :func:`find_mixture`). Components holding less than ``min_weight`` of the data are left
    out. filename: also save it there."""
    found = find_mixture(model)
    if found is None or found[1].moments is None or found[2].natural is None:
        return None
    x_node, z_node, mu_node, lam_node = found
    x = np.asarray(x_node.data, float)
    r = z_node.family.indicator(np.asarray(z_node.mean, float))
    label = r.argmax(-1)
    weight = r.sum(0) / max(r.shape[0], 1)
    means = np.asarray(mu_node.mean, float)
    covs = np.linalg.inv(_precisions(lam_node))

    fig = Figure(figsize=(6.4, 5.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    cmap = matplotlib.colormaps["tab10"]
    used = [k for k in range(means.shape[0]) if weight[k] >= min_weight]
    for i, k in enumerate(used):
        colour = cmap(i % 10)
        pts = x[label == k]
        ax.scatter(pts[:, 0], pts[:, 1], s=9, color=colour, alpha=0.55, linewidths=0)
        vals, vecs = np.linalg.eigh(covs[k])
        angle = np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1]))
        width, height = 4 * np.sqrt(np.maximum(vals[::-1], 0))
        ax.add_patch(Ellipse(means[k], width, height, angle=angle, fill=False, color=colour,
                             linewidth=2))
        ax.scatter(*means[k], marker="x", s=70, color="black", zorder=5)
        ax.annotate(f"{k}: {weight[k]:.0%}", means[k], textcoords="offset points", xytext=(6, 6),
                    fontsize=9, weight="bold")
    leftover = [k for k in range(means.shape[0]) if weight[k] < min_weight]
    pts = x[np.isin(label, leftover)]
    if pts.size:
        ax.scatter(pts[:, 0], pts[:, 1], s=9, color="grey", alpha=0.5, linewidths=0)
    ax.set_title(f"{model.name}: {len(used)} of {means.shape[0]} components used "
                 f"(2-sigma ellipses of E[{lam_node.name}]^-1)", fontsize=10)
    ax.set_xlabel("x[0]")
    ax.set_ylabel("x[1]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(True, alpha=0.3)
    if filename is not None:
        path = Path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def components_used(model, *, min_weight: float = 0.01) -> int | None:
    """How many mixture components hold at least ``min_weight`` of the data under q(z), or None
    when the model is not a 2-D Gaussian mixture (see :func:`find_mixture`) or is not fitted."""
    found = find_mixture(model)
    if found is None or found[1].moments is None:
        return None
    r = np.asarray(found[1].mean, float)
    weight = r.reshape(-1, r.shape[-1]).sum(0) / max(r.reshape(-1, r.shape[-1]).shape[0], 1)
    return int(np.sum(weight >= min_weight))
