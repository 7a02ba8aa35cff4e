"""The dashboard's panels of a stream (docs/streams.md), from ``result.extra["stream_chunks"]``
(each chunk's record): the bound per element of each chunk's fit, a chunk flagged as a change in
the data (``vmp.DriftWarning``) as a red cross; and the relative change of every global's
natural parameters, ||lambda_b - lambda_{b-1}|| / ||lambda_{b-1}||, after each chunk (log scale)."""
from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator


def chunk_panels(result, colours: tuple[str, str]) -> list:
    """[(draw, args)] of the stream panels (none for a fit that is not a stream's chunk);
    ``colours``: (line, alarm)."""
    records = (getattr(result, "extra", None) or {}).get("stream_chunks") or []
    if not records:
        return []
    return [(_bound_panel, (records, colours)), (_change_panel, (records, colours))]


def _chunk_axis(ax, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("chunk")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _bound_panel(ax, records: list, colours: tuple[str, str]) -> None:
    _chunk_axis(ax, "bound per element, by chunk", "chunk's ELBO / element")
    chunk = np.array([r["chunk"] for r in records], float)
    per = np.array([r["bound_per_element"] for r in records], float)
    drift = np.array([bool(r["drift"]) for r in records])
    ax.plot(chunk, per, color=colours[0], marker="o" if chunk.size <= 60 else None, markersize=3, linewidth=1.3)
    if drift.any():
        ax.scatter(chunk[drift], per[drift], color=colours[1], marker="x", s=45, zorder=3,
                   label="drift: the data may have changed")
        ax.legend(loc="best", fontsize=8)


def _change_panel(ax, records: list, colours: tuple[str, str]) -> None:
    _chunk_axis(ax, "relative change of each global, by chunk", "||\u0394\u03bb|| / ||\u03bb|| (log scale)")
    chunk = np.array([r["chunk"] for r in records], float)
    drawn = False
    for name in sorted({k for r in records for k in r["change"]}):
        value = np.array([r["change"].get(name, np.nan) for r in records], float)
        value = np.where(value > 0, value, np.nan)
        if np.isfinite(value).any():
            ax.plot(chunk, value, marker="o" if chunk.size <= 60 else None, markersize=2.5, linewidth=1.2, label=name)
            drawn = True
    if not drawn:
        ax.annotate("no change yet (the first chunk)", xy=(0.5, 0.5), xycoords="axes fraction", ha="center",
                    color="0.5")
        return
    ax.set_yscale("log")
    ax.legend(loc="best", fontsize=8, ncols=2 if len(records[0]["change"]) > 4 else 1)
