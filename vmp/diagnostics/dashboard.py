"""The convergence dashboard: a matplotlib Figure of the fit's history (``result.history``).

Panels (see docs/diagnostics.md):

- ELBO against iteration (every evaluation; batch VMP evaluates after each sweep);
- ELBO against observed-node accesses, log x-axis; the y-axis shows -ELBO on a log scale when
  every evaluated bound is negative (the label says so), the ELBO itself otherwise;
- the ELBO increment between evaluations (log scale; decreases as red triangles);
- the wall time of each step (ELBO evaluations excluded);
- the step size rho of each stepped node against iteration (log y; all ones for batch VMP);
- the relative change of each node's natural parameters against iteration (log y);
- the held-out ELBO per element, when the fit held data out;
- temperature / effective batch size, only when the history has such keys.

A diverged fit (``result.diverged``) gets a red title with its message and a red line at the
last recorded iteration. The figure is made with matplotlib's object API (no pyplot, so no
display is needed and nothing is left open); Jupyter shows a returned Figure inline.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator

from .history import OPTIONAL, normalized

__all__ = ["plot", "elbo_axis", "log_ticks"]

_BLUE, _RED, _GREY = "#1f5fa8", "#c0392b", "#7f7f7f"


def _finite(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a[~np.isfinite(a)] = np.nan
    return a


def _colours(n: int):
    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def _method(result) -> str:
    return str((getattr(result, "extra", None) or {}).get("method", "batch"))


def _title(result) -> str:
    method = _method(result)
    it = int(result.iterations)
    final = result.final_elbo
    value = f"{final:.6g}" if math.isfinite(final) else str(final)
    steps = f"{it} iteration{'s' if it != 1 else ''}"
    if getattr(result, "diverged", False):
        state = f"DIVERGED ({method} VMP) after {steps}"
    elif method == "stochastic":
        update = (result.extra or {}).get("update")
        state = f"stochastic VMP{f' ({update} update)' if update else ''}: {steps}"
    else:
        state = f"{'converged' if result.converged else 'not converged'} after {steps}"
    return textwrap.fill(f"{state} \u2014 final ELBO {value} \u2014 {result.message}", 150)


def elbo_axis(elbo) -> tuple[bool, str]:
    """(negate, label): plot -ELBO on a log axis when every finite evaluated bound is negative."""
    ok = np.asarray(elbo, float)
    ok = ok[np.isfinite(ok)]
    if ok.size and np.all(ok < 0):
        return True, "-ELBO (log scale; every ELBO < 0)"
    return False, "ELBO"


def _compact(t, _=None) -> str:
    """1500 -> 1.5k, 2e6 -> 2M: short labels for counts."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(t) >= size:
            return f"{t / size:.3g}{suffix}"
    return f"{t:.3g}"


def log_ticks(ax, which: str, values) -> None:
    """Readable ticks on a log axis: within less than a decade, a few evenly spaced plain
    numbers (matplotlib would label only crowded minor ticks such as 2x10^3); over wider
    ranges, short count labels (2k, 50k, 1M) on x and matplotlib's powers of ten on y."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size and v.max() / v.min() < 10:
        axis.set_major_locator(MaxNLocator(5))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(_compact if which == "x" else (lambda t, _: f"{t:.6g}")))
    elif which == "x":
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(_compact))
    else:
        return
    axis.set_minor_formatter(NullFormatter())


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=_GREY,
            fontsize=9)


def _diverged_line(ax, result, x) -> None:
    if getattr(result, "diverged", False) and np.size(x) and np.isfinite(x).any():
        ax.axvline(np.nanmax(x), color=_RED, linewidth=1.2, linestyle="--")


def _elbo_iteration_panel(ax, result, it, elbo) -> None:
    ax.set_title("ELBO against iteration", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO")
    ax.grid(True, alpha=0.3)
    if not elbo.size:
        _empty(ax, "no ELBO evaluated")
        return
    ax.plot(it, elbo, color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    ok = np.isfinite(elbo)
    if ok.any():
        last = np.flatnonzero(ok)[-1]
        ax.axhline(elbo[last], color=_GREY, linewidth=0.8, linestyle=":")
        # the initial bound is often far below the rest: keep the later evaluations readable
        later = elbo[1:][np.isfinite(elbo[1:])]
        if later.size >= 2 and np.isfinite(elbo[0]):
            lo, hi = later.min(), later.max()
            span = hi - lo
            if span > 0 and elbo[0] < lo - 3 * span:
                ax.set_ylim(lo - 0.15 * span, hi + 0.1 * span)
                ax.annotate(f"initial {elbo[0]:.4g} (below)", xy=(0.02, 0.03),
                            xycoords="axes fraction", fontsize=8, color=_GREY)
    _diverged_line(ax, result, it)


def _elbo_accesses_panel(ax, result, acc, elbo) -> None:
    ax.set_title("ELBO against observed-node accesses", fontsize=10)
    ax.set_xlabel("observed-node element accesses (log scale)")
    ax.grid(True, alpha=0.3)
    negate, label = elbo_axis(elbo)
    ax.set_ylabel(label)
    y = -elbo if negate else elbo
    keep = np.isfinite(acc) & (acc > 0) & np.isfinite(y)
    if not keep.any():
        _empty(ax, "no accesses recorded")
        return
    ax.plot(acc[keep], y[keep], color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    ax.set_xscale("log")
    log_ticks(ax, "x", acc[keep])
    if negate:
        ax.set_yscale("log")
        log_ticks(ax, "y", y[keep])
    skipped = int(np.sum(np.isfinite(acc) & (acc <= 0)))
    if skipped:
        ax.annotate("initial bound (0 accesses) not shown", xy=(0.02, 0.03),
                    xycoords="axes fraction", fontsize=8, color=_GREY)
    if getattr(result, "diverged", False):
        ax.axvline(np.nanmax(acc[np.isfinite(acc) & (acc > 0)]), color=_RED, linewidth=1.2,
                   linestyle="--")


def _increment_panel(ax, it, elbo) -> None:
    ax.set_title("ELBO increment between evaluations", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|ELBO change|")
    ax.grid(True, alpha=0.3)
    if elbo.size < 2:
        _empty(ax, "fewer than two evaluations")
        return
    diff = np.diff(elbo)
    x = it[1:]
    size = np.abs(diff)
    tiny = np.finfo(float).tiny
    shown = np.where(size > 0, size, np.nan)
    up, down = diff >= 0, diff < 0
    ax.plot(x, shown, color=_BLUE, linewidth=1.0, alpha=0.6)
    ax.scatter(x[up], np.maximum(shown[up], tiny), s=10, color=_BLUE, label="increase", zorder=3)
    if down.any():
        ax.scatter(x[down], shown[down], s=28, color=_RED, marker="v", label="decrease", zorder=4)
    zero = size == 0
    if zero.any():
        ax.annotate(f"{int(zero.sum())} evaluation(s) with no change", xy=(0.02, 0.03),
                    xycoords="axes fraction", fontsize=8, color=_GREY)
    if np.isfinite(shown).any():
        ax.set_yscale("log")
    ax.legend(fontsize=8, loc="upper right")


def _per_node_panel(ax, result, steps, values: dict, title: str, ylabel: str, log: bool,
                    note: str | None = None) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    drawn = False
    for colour, (name, arr) in zip(_colours(len(values)), values.items()):
        arr = _finite(arr)
        x = steps if steps.size == arr.size else np.arange(1, arr.size + 1, dtype=float)
        if log:
            arr = np.where(arr > 0, arr, np.nan)
        if not np.isfinite(arr).any():
            continue
        ax.plot(x, arr, color=colour, linewidth=1.3, label=name,
                marker="o" if arr.size <= 60 else None, markersize=2.5)
        drawn = True
    if not drawn:
        _empty(ax, "nothing recorded")
        return
    if log:
        ax.set_yscale("log")
        finite = [a[np.isfinite(a) & (a > 0)] for a in map(_finite, values.values())]
        finite = np.concatenate(finite) if finite else np.zeros(0)
        if finite.size and finite.max() == finite.min():  # constant (batch rho = 1)
            v = float(finite.min())
            ax.set_ylim(v / 2.5, v * 2.5)
            ax.set_yticks([v / 2, v, v * 2], labels=[f"{t:g}" for t in (v / 2, v, v * 2)])
            ax.yaxis.set_minor_locator(NullLocator())
            note = note or f"every node: {v:g}"
        else:
            log_ticks(ax, "y", finite)
    ax.legend(fontsize=8, loc="best", ncols=2 if len(values) > 4 else 1)
    if note:
        ax.annotate(note, xy=(0.02, 0.03), xycoords="axes fraction", fontsize=8, color=_GREY)
    _diverged_line(ax, result, steps)


def _seconds_panel(ax, result, steps, seconds) -> None:
    ax.set_title("time per step (ELBO evaluations excluded)", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("milliseconds")
    ax.grid(True, alpha=0.3)
    ms = _finite(seconds) * 1e3
    if not np.isfinite(ms).any():
        _empty(ax, "no step times recorded")
        return
    x = steps if steps.size == ms.size else np.arange(1, ms.size + 1, dtype=float)
    ax.plot(x, ms, color=_GREY, linewidth=0.8, alpha=0.7)
    if ms.size >= 10:
        k = max(ms.size // 20, 2)
        smooth = np.convolve(np.nan_to_num(ms), np.ones(k) / k, mode="valid")
        ax.plot(x[k - 1:], smooth, color=_BLUE, linewidth=1.6, label=f"mean of {k}")
        ax.legend(fontsize=8, loc="upper right")
    total = np.nansum(ms) / 1e3
    ax.annotate(f"total {total:.3g} s over {ms.size} steps", xy=(0.02, 0.03),
                xycoords="axes fraction", fontsize=8, color=_GREY)
    ax.set_ylim(bottom=0)
    _diverged_line(ax, result, steps)


def _heldout_panel(ax, result, it, heldout) -> None:
    ax.set_title("held-out ELBO per element", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("held-out ELBO / element")
    ax.grid(True, alpha=0.3)
    ax.plot(it, heldout, color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    _diverged_line(ax, result, it)


def _panels(result) -> list:
    """[(kind, args)] for the panels this history supports, in display order."""
    h = normalized(result)
    ev = h["evaluations"]
    it, elbo, acc = _finite(ev["iteration"]), _finite(ev["elbo"]), _finite(ev["accesses"])
    steps = _finite(h["iteration"])
    batch = _method(result) == "batch"
    rho = h["rho"]
    rho_title = "step size rho" + (" (batch VMP: 1)" if batch else "")
    panels = [
        (_elbo_iteration_panel, (result, it, elbo)),
        (_elbo_accesses_panel, (result, acc, elbo)),
        (_per_node_panel, (result, steps, rho, rho_title, "rho (log scale)", True)),
        (_per_node_panel, (result, steps, h["change"], "relative change of natural parameters",
                           "||\u0394\u03bb|| / ||\u03bb|| (log scale)", True)),
        (_increment_panel, (it, elbo)),
        (_seconds_panel, (result, steps, h["step_seconds"])),
    ]
    held = _finite(ev["heldout"])
    if held.size and held.size == it.size:
        panels.append((_heldout_panel, (result, it, held)))
    for key in OPTIONAL:
        if key in h:
            value = h[key]
            values = value if isinstance(value, dict) else {key: value}
            panels.append((_per_node_panel, (result, steps, values, key.replace("_", " "),
                                             key.replace("_", " "), False)))
    return panels


def plot(result, filename=None) -> Figure:
    """A dashboard of the fit's convergence diagnostics as a matplotlib Figure.

    filename: also save it there (format from the extension, e.g. .png, .svg, .pdf).
    """
    panels = _panels(result)
    ncols = 2
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(5.4 * ncols, 3.5 * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    diverged = bool(getattr(result, "diverged", False))
    fig.suptitle(_title(result), fontsize=10, color=_RED if diverged else "black",
                 fontweight="bold" if diverged else "normal")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (draw, args) in zip(axes, panels):
        draw(ax, *args)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    if filename is not None:
        path = Path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig
