"""The convergence dashboard: a matplotlib Figure of the fit's history (``result.history``).

Panels (see docs/diagnostics.md):

- ELBO against iteration (every evaluation; batch VMP evaluates after each sweep);
- ELBO against observed-node accesses, the initial bound at 0 (x: linear up to the first
  step's accesses, logarithmic beyond);
- the ELBO increment between evaluations (log scale; decreases as red triangles);
- the wall time of each step (ELBO evaluations excluded);
- the step size rho of each stepped node against iteration (log y; left out for batch VMP,
  where every rho is 1);
- the relative change of each node's natural parameters against iteration (log y);
- the held-out ELBO per element, when the fit held data out;
- temperature / effective batch size, only when the history has such keys;
- a stream's chunk (``model.stream``): the bound per element of every chunk so far, and each
  global's relative change by chunk (:mod:`vmp.diagnostics.stream_panels`).

Both ELBO panels plot the ELBO itself (higher is better, upwards) on one rule
(:func:`elbo_axis`): a linear axis, unless the evaluations span more than a factor of ten, then
a symmetric log axis, its limits over the finite values (evaluations that are not finite are red
crosses on the top edge). An initial bound far below the rest is drawn as a marker on the bottom
edge with its value, so the later evaluations stay readable. Monitor events
(``history["events"]``: backoff, stop, skip, warn) are one band per node and action with their
count (:mod:`vmp.diagnostics.marks`); a per-node panel labels the LEGEND_NODES nodes still moving
most. A diverged fit (``result.diverged``) gets a red title with its message and a red line at
the last recorded iteration; an interrupted one says so in its title, wrapped to the figure. The figure is made with matplotlib's object API (no pyplot, so no
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
from matplotlib.ticker import (FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator,
                               SymmetricalLogLocator)

from . import marks
from .history import OPTIONAL, normalized
from .stream_panels import chunk_panels

__all__ = ["plot", "elbo_axis", "set_elbo_axis", "log_ticks"]

_BLUE, _RED, _GREY = "#1f5fa8", "#c0392b", "#7f7f7f"
#: the title's size in points and its lines at most (a longer message is cut with an ellipsis)
TITLE_POINTS, TITLE_LINES = 10, 4
#: fits of fewer iterations than this get the whole range 0..T with half a step of margin
_FEW = 10


def _finite(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a[~np.isfinite(a)] = np.nan
    return a


def _colours(n: int):
    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def _method(result) -> str:
    return str((getattr(result, "extra", None) or {}).get("method", "batch"))


def _title(result, width_inches: float) -> str:
    """The fit's state, final bound and message, wrapped to the figure's width (an average
    character is taken as 0.6 em) in at most TITLE_LINES lines."""
    method = _method(result)
    it = int(result.iterations)
    final = result.final_elbo
    value = f"{final:.6g}" if math.isfinite(final) else str(final)
    steps = f"{it} iteration{'s' if it != 1 else ''}"
    if getattr(result, "diverged", False):
        state = f"DIVERGED ({method} VMP) after {steps}"
    elif getattr(result, "interrupted", False):
        state = f"INTERRUPTED ({method} VMP) after {steps}"
    elif method == "stochastic":
        update = (result.extra or {}).get("update")
        state = f"stochastic VMP{f' ({update} update)' if update else ''}: {steps}"
    else:
        state = f"{'converged' if result.converged else 'not converged'} after {steps}"
    chars = int(width_inches * 72 / (0.6 * TITLE_POINTS))
    lines = textwrap.wrap(f"{state} \u2014 final ELBO {value} \u2014 {result.message}", chars,
                          break_long_words=True)
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES]
        lines[-1] = lines[-1][:chars - 1] + "\u2026"
    return "\n".join(lines)


#: a log axis only when the values span more than this factor (a log scale over a few percent
#: looks exactly like a linear one, with worse ticks)
LOG_SPAN = 10.0


def elbo_axis(elbo) -> tuple[str, str]:
    """(scale, label) of an ELBO axis: "linear", unless every finite value has one sign and
    their magnitudes span more than LOG_SPAN, then "symlog" (a log scale that keeps the sign:
    higher is still better, upwards)."""
    ok = np.asarray(elbo, float)
    ok = np.abs(ok[np.isfinite(ok)])
    signs = np.sign(np.asarray(elbo, float)[np.isfinite(elbo)])
    if ok.size and ok.min() > 0 and np.all(signs == signs[0]) and ok.max() / ok.min() > LOG_SPAN:
        return "symlog", "ELBO (symmetric log scale)"
    return "linear", "ELBO"


def set_elbo_axis(ax, elbo) -> None:
    """Apply :func:`elbo_axis` to the y-axis of ``ax`` for the values ``elbo``."""
    scale, label = elbo_axis(elbo)
    ax.set_ylabel(label)
    if scale == "symlog":
        ok = np.abs(np.asarray(elbo, float))
        ax.set_yscale("symlog", linthresh=float(np.nanmin(ok[ok > 0])))


def _initial_far_below(elbo) -> bool:
    """Is the first evaluation (the initial bound) far below the later ones (more than three
    times their spread)? Then it is drawn as an edge marker, not on the scale."""
    later = elbo[1:][np.isfinite(elbo[1:])]
    if later.size < 2 or not np.isfinite(elbo[0]):
        return False
    span = later.max() - later.min()
    return span > 0 and elbo[0] < later.min() - 3 * span


def _elbo_curve(ax, x, elbo, *, x0_label: str, what: str = "iteration") -> None:
    """The ELBO against ``x`` on the shared rule: the y-axis from :func:`elbo_axis` over the
    points on scale; an initial bound far below as a triangle on the bottom edge at its x."""
    shown = elbo.copy()
    far = _initial_far_below(elbo)
    if far:
        shown[0] = np.nan
    set_elbo_axis(ax, shown)
    keep = np.isfinite(x)
    ax.plot(x[keep], shown[keep], color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    if not far:
        marks.finite_limits(ax, x, shown, what=what)
    if far:
        later = shown[np.isfinite(shown)]
        lo, hi = later.min(), later.max()
        span = hi - lo
        ax.set_ylim(lo - 0.15 * span, hi + 0.1 * span)
        if np.isfinite(x[0]):
            ax.plot([x[0]], [0.0], marker="v", color=_BLUE, markersize=7, clip_on=False,
                    transform=ax.get_xaxis_transform(), linestyle="none")
        ax.annotate(f"\u25bc {x0_label}: {elbo[0]:.4g} (below)", xy=(0.02, 0.03),
                    xycoords="axes fraction", fontsize=8, color=_GREY)
    last = np.flatnonzero(np.isfinite(elbo))
    if last.size:
        ax.axhline(elbo[last[-1]], color=_GREY, linewidth=0.8, linestyle=":")


def _iteration_axis(ax) -> None:
    """Whole iterations on the x-axis (a fit of 3 sweeps gets ticks 0, 1, 2, 3, not 0.5)."""
    ax.xaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))


def _events(result) -> list[dict]:
    events = (getattr(result, "history", None) or {}).get("events")
    events = [] if events is None else list(events)
    return [e for e in events if isinstance(e, dict) and e.get("iteration") is not None]


def _mark_events(ax, result, to_x=None) -> None:
    """The monitor events of the fit, one band per node and action (:func:`marks.mark_events`).
    ``to_x`` maps an iteration to the panel's x (accesses)."""
    marks.mark_events(ax, marks.event_groups(_events(result)), to_x)


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


def smoothed(values, window: int = 10) -> np.ndarray:
    """Trailing mean over ``window`` steps (fewer at the start) of a noisy per-step series."""
    v = np.asarray(values, float)
    csum = np.concatenate([[0.0], np.cumsum(v)])
    idx = np.arange(1, v.size + 1)
    lo = np.maximum(idx - window, 0)
    return (csum[idx] - csum[lo]) / (idx - lo)


def _elbo_iteration_panel(ax, result, it, elbo) -> None:
    bound = str((getattr(result, "extra", None) or {}).get("bound", "exact"))
    estimated = bound.startswith("estimate")
    ax.set_title("ELBO against iteration" + (" (estimated)" if estimated else ""), fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("ELBO")
    ax.grid(True, alpha=0.3)
    _iteration_axis(ax)
    if not elbo.size:
        _empty(ax, "no ELBO evaluated")
        return
    noisy = np.asarray((getattr(result, "history", None) or {}).get("bound_estimate", []), float)
    if noisy.size:
        window = max(10, noisy.size // 10)
        steps = np.arange(1, noisy.size + 1)
        ax.plot(steps, smoothed(noisy, window), color="0.6", linewidth=1.0,
                label=f"minibatch bound, {window}-step mean")
    _elbo_curve(ax, it, elbo, x0_label="initial")
    stderr = np.asarray((getattr(result, "history", None) or {}).get("evaluations", {}).get("stderr", []), float)
    if estimated and stderr.size == elbo.size and np.isfinite(stderr[-1]) and np.isfinite(elbo[-1]):
        # the subsample is fixed: its error is an offset shared by every evaluation
        lo, hi = ax.get_ylim()
        if 2 * stderr[-1] <= (hi - lo) / 2:
            ax.errorbar([it[-1]], [elbo[-1]], yerr=[2 * stderr[-1]], color=_BLUE, capsize=4, linewidth=1.2,
                        label="+- 2 standard errors (subsample)")
        else:
            ax.annotate(f"+- 2 standard errors of the subsample estimate: {2 * stderr[-1]:.3g}", xy=(0.02, 0.93),
                        xycoords="axes fraction", fontsize=8, color=_GREY)
    if estimated:
        ax.set_ylabel(ax.get_ylabel() + " (subsample estimate)")
    _mark_events(ax, result)
    _diverged_line(ax, result, it)
    _legend_if_labelled(ax)


def _elbo_accesses_panel(ax, result, acc, elbo, steps, step_acc) -> None:
    ax.set_title("ELBO against observed-node accesses", fontsize=10)
    ax.grid(True, alpha=0.3)
    keep = np.isfinite(acc) & (acc >= 0)
    positive = acc[keep & (acc > 0)]
    if not positive.size:
        ax.set_ylabel("ELBO")
        _empty(ax, "no accesses recorded")
        return
    # symlog: linear from 0 (the initial bound) to the first step's accesses, log beyond
    linthresh = float(positive.min())
    ax.set_xscale("symlog", linthresh=linthresh, linscale=0.4)
    subs = (1.0, 2.0, 5.0) if positive.max() / linthresh < 1e3 else (1.0,)
    ax.xaxis.set_major_locator(SymmetricalLogLocator(linthresh=linthresh, base=10, subs=subs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(_compact))
    ax.set_xlabel("observed-node element accesses (0, then log scale)")
    _elbo_curve(ax, np.where(keep, acc, np.nan), elbo, x0_label="initial, 0 accesses", what="accesses")
    lookup = dict(zip(steps.tolist(), step_acc.tolist())) if steps.size == step_acc.size else {}
    _mark_events(ax, result, to_x=lambda t: lookup.get(t, np.nan))
    if getattr(result, "diverged", False):
        ax.axvline(np.nanmax(positive), color=_RED, linewidth=1.2, linestyle="--")
    _legend_if_labelled(ax)


def _legend_if_labelled(ax) -> None:
    marks.legend(ax, loc="lower right")


def _increment_panel(ax, result, it, elbo) -> None:
    ax.set_title("ELBO increment between evaluations", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|ELBO change|")
    ax.grid(True, alpha=0.3)
    _iteration_axis(ax)
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
    _mark_events(ax, result)
    marks.legend(ax, loc="upper right")


def _per_node_panel(ax, result, steps, values: dict, title: str, ylabel: str, log: bool,
                    note: str | None = None) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    _iteration_axis(ax)
    drawn = False
    shown = marks.ranked(values)[:marks.LEGEND_NODES]
    colours = dict(zip(shown, _colours(len(shown))))
    for name in sorted(values, key=lambda n: n in colours):  # the labelled nodes on top
        arr = _finite(values[name])
        x = steps if steps.size == arr.size else np.arange(1, arr.size + 1, dtype=float)
        if log:
            arr = np.where(arr > 0, arr, np.nan)
        if not np.isfinite(arr).any():
            continue
        labelled = name in colours
        ax.plot(x, arr, color=colours.get(name, "0.75"), linewidth=1.3 if labelled else 0.7,
                label=name if labelled else None, marker="o" if arr.size <= 60 and labelled else None,
                markersize=2.5)
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
    _mark_events(ax, result)
    marks.legend(ax, hidden=len(values) - len(shown), loc="best", ncols=2 if len(shown) > 4 else 1)
    if note:
        ax.annotate(note, xy=(0.02, 0.03), xycoords="axes fraction", fontsize=8, color=_GREY)
    _diverged_line(ax, result, steps)


def _seconds_panel(ax, result, steps, seconds) -> None:
    ax.set_title("time per step (ELBO evaluations excluded)", fontsize=10)
    ax.set_xlabel("iteration")
    ax.set_ylabel("milliseconds")
    ax.grid(True, alpha=0.3)
    _iteration_axis(ax)
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
    _iteration_axis(ax)
    ax.plot(it, heldout, color=_BLUE, marker="o", markersize=3, linewidth=1.4)
    _diverged_line(ax, result, it)


def _panels(result) -> list:
    """[(kind, args)] for the panels this history supports, in display order."""
    h = normalized(result)
    ev = h["evaluations"]
    it, elbo, acc = _finite(ev["iteration"]), _finite(ev["elbo"]), _finite(ev["accesses"])
    steps = _finite(h["iteration"])
    rho = h["rho"]
    panels = [
        (_elbo_iteration_panel, (result, it, elbo)),
        (_elbo_accesses_panel, (result, acc, elbo, steps, _finite(h["accesses"]))),
        (_per_node_panel, (result, steps, h["change"], "relative change of natural parameters",
                           "||\u0394\u03bb|| / ||\u03bb|| (log scale)", True)),
        (_increment_panel, (result, it, elbo)),
        (_seconds_panel, (result, steps, h["step_seconds"])),
    ]
    if not _all_ones(rho):  # batch VMP: every rho is 1, a flat panel says nothing
        panels.insert(2, (_per_node_panel, (result, steps, rho, "step size rho", "rho (log scale)", True)))
    held = _finite(ev["heldout"])
    if held.size and held.size == it.size:
        panels.append((_heldout_panel, (result, it, held)))
    for key in OPTIONAL:
        if key in h:
            value = h[key]
            values = value if isinstance(value, dict) else {key: value}
            panels.append((_per_node_panel, (result, steps, values, key.replace("_", " "),
                                             key.replace("_", " "), False)))
    return panels + chunk_panels(result, (_BLUE, _RED))


def _last_iteration(result) -> int | None:
    h = normalized(result)
    found = np.concatenate([_finite(h["iteration"]), _finite(h["evaluations"]["iteration"])])
    found = found[np.isfinite(found)]
    return int(found.max()) if found.size else None


def _all_ones(per_node: dict) -> bool:
    values = [_finite(v) for v in per_node.values()]
    values = [v[np.isfinite(v)] for v in values]
    return all(np.all(v == 1.0) for v in values)


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
    fig.suptitle(_title(result, fig.get_figwidth()), fontsize=TITLE_POINTS, color=_RED if diverged else "black",
                 fontweight="bold" if diverged else "normal")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (draw, args) in zip(axes, panels):
        draw(ax, *args)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    last = _last_iteration(result)
    if last is not None and last < _FEW:  # whole iterations 0..T, not 0.95..1.05 around one point
        for ax in axes[:len(panels)]:
            if ax.get_xlabel() == "iteration":
                ax.set_xlim(-0.5, last + 0.5)
    if filename is not None:
        path = Path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig
