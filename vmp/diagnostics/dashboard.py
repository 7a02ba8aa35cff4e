"""The convergence dashboard: a matplotlib Figure of whatever history the fit recorded.

Panels: the ELBO against iterations (and against every work axis the fit recorded, such as
data accesses), the ELBO increment |ELBO_t - ELBO_{t-1}| on a log scale with decreases in red,
and any other recorded history series against iterations.

The figure is made with matplotlib's object API (no pyplot, so no display is needed and nothing
is left open); it is drawn by the Agg canvas, and Jupyter shows a returned Figure inline.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .history import X_AXES, series

__all__ = ["plot"]

_BLUE, _RED, _GREY = "#1f5fa8", "#c0392b", "#7f7f7f"


def _finite(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a[~np.isfinite(a)] = np.nan
    return a


def _title(result) -> str:
    state = "converged" if result.converged else "not converged"
    final = result.final_elbo
    value = f"{final:.6g}" if math.isfinite(final) else str(final)
    return (f"{state} after {result.iterations} iteration{'s' if result.iterations != 1 else ''}"
            f" \u2014 final ELBO {value} \u2014 {result.message}")


def _elbo_panel(ax, x: np.ndarray, elbo: np.ndarray, xlabel: str) -> None:
    ax.plot(x, elbo, color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    ok = np.isfinite(elbo)
    if ok.any():
        last = np.flatnonzero(ok)[-1]
        ax.axhline(elbo[last], color=_GREY, linewidth=0.8, linestyle=":")
        # the initial bound is often far below the rest: keep the later sweeps readable
        later = elbo[1:][np.isfinite(elbo[1:])]
        if later.size >= 2 and np.isfinite(elbo[0]):
            lo, hi = later.min(), later.max()
            span = hi - lo
            if span > 0 and elbo[0] < lo - 3 * span:
                ax.set_ylim(lo - 0.15 * span, hi + 0.1 * span)
                ax.annotate(f"initial {elbo[0]:.4g} (below)", xy=(0.02, 0.03),
                            xycoords="axes fraction", fontsize=8, color=_GREY)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ELBO")
    ax.set_title(f"ELBO against {xlabel}", fontsize=10)
    ax.grid(True, alpha=0.3)


def _increment_panel(ax, elbo: np.ndarray) -> None:
    ax.set_title("ELBO increment per iteration", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|ELBO_t - ELBO_(t-1)|")
    ax.grid(True, which="both", alpha=0.3)
    if elbo.size < 2:
        ax.text(0.5, 0.5, "no iterations recorded", ha="center", va="center",
                transform=ax.transAxes, color=_GREY)
        return
    diff = np.diff(elbo)
    it = np.arange(1, elbo.size)
    size = np.abs(diff)
    tiny = np.finfo(float).tiny
    shown = np.where(size > 0, size, np.nan)
    up, down = diff >= 0, diff < 0
    ax.plot(it, shown, color=_BLUE, linewidth=1.0, alpha=0.6)
    ax.scatter(it[up], np.maximum(shown[up], tiny), s=10, color=_BLUE, label="increase", zorder=3)
    if down.any():
        ax.scatter(it[down], shown[down], s=28, color=_RED, marker="v", label="decrease", zorder=4)
    zero = size == 0
    if zero.any():
        ax.annotate(f"{int(zero.sum())} iteration(s) with no change", xy=(0.02, 0.03),
                    xycoords="axes fraction", fontsize=8, color=_GREY)
    if np.isfinite(shown).any():
        ax.set_yscale("log")
    ax.legend(fontsize=8, loc="upper right")


def _series_panel(ax, x: np.ndarray, y: np.ndarray, name: str) -> None:
    ax.plot(x, y, color=_BLUE, marker="o", markersize=3, linewidth=1.2)
    ax.set_xlabel("iteration")
    ax.set_ylabel(name)
    ax.set_title(f"{name} against iteration", fontsize=10)
    ax.grid(True, alpha=0.3)


def plot(result, filename=None) -> Figure:
    """A dashboard of the fit's convergence diagnostics as a matplotlib Figure.

    filename: also save it there (format from the extension, e.g. .png, .svg, .pdf).
    """
    data = {k: _finite(v) for k, v in series(result).items()}
    elbo = data.pop("elbo")
    iterations = np.arange(elbo.size, dtype=float)
    axes_x = [("iteration", iterations)] + [(k, data.pop(k)) for k in X_AXES if k in data]
    panels = [("elbo", name, x) for name, x in axes_x] + [("increment", None, None)]
    panels += [("series", name, y) for name, y in data.items()]

    ncols = 2 if len(panels) > 1 else 1
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(5.2 * ncols, 3.6 * nrows + 0.5), layout="constrained")
    FigureCanvasAgg(fig)
    fig.suptitle(_title(result), fontsize=10)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (kind, name, values) in zip(axes, panels):
        if kind == "elbo":
            _elbo_panel(ax, values, elbo, name)
        elif kind == "increment":
            _increment_panel(ax, elbo)
        else:
            _series_panel(ax, iterations, values, name)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if filename is not None:
        path = Path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig
