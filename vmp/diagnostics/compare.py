"""Several fits of one model side by side: a table of final ELBO, time and work, and the ELBO
of every fit against observed-node accesses and against step time in one plot.

``fits`` is an ordered mapping from a label (``"batch"``, ``"svi"``, ...) to ``(model, result)``;
adding a method to a comparison is adding an entry.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .dashboard import log_ticks, set_elbo_axis
from .history import normalized
from .mixture import components_used

__all__ = ["comparison_rows", "comparison_table", "plot_comparison", "write_comparison"]


def _state(result) -> str:
    if getattr(result, "diverged", False):
        return "DIVERGED"
    if (result.extra or {}).get("method") == "stochastic":
        return "ran"
    return "converged" if result.converged else "not converged"


def comparison_rows(fits: dict) -> list[dict]:
    """One dict per fit: label, method, state, iterations, final_elbo, seconds, accesses (the
    final cumulative count), clusters (components used, for a 2-D Gaussian mixture; else None)."""
    rows = []
    for label, (model, result) in fits.items():
        h = normalized(result)
        acc = h["evaluations"]["accesses"]
        acc = acc[np.isfinite(acc)]
        extra = result.extra or {}
        method = str(extra.get("method", "batch"))
        if extra.get("update"):
            method += f", {extra['update']} update"
        rows.append({"label": str(label), "method": method, "state": _state(result),
                     "iterations": int(result.iterations), "final_elbo": float(result.final_elbo),
                     "seconds": float(getattr(result, "seconds", float("nan"))),
                     "accesses": float(acc[-1]) if acc.size else float("nan"),
                     "clusters": components_used(model) if model is not None else None})
    return rows


def _num(x, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def comparison_table(rows: list[dict]) -> str:
    """A Markdown table of :func:`comparison_rows` (the clusters column only when known)."""
    clusters = any(r["clusters"] is not None for r in rows)
    header = ["fit", "method", "state", "iterations", "final ELBO", "seconds", "accesses"]
    header += ["clusters used"] if clusters else []
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        cells = [r["label"], r["method"], r["state"], str(r["iterations"]),
                 _num(r["final_elbo"], ".6g"), _num(r["seconds"], ".3g"), _num(r["accesses"], ",.0f")]
        if clusters:
            cells.append(_num(r["clusters"], "d"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _eval_seconds(h) -> np.ndarray:
    """Cumulative step time at each evaluation (0 before the first step)."""
    steps, secs = h["iteration"], np.nan_to_num(h["step_seconds"])
    cum = np.cumsum(secs) if secs.size == steps.size else np.full(steps.size, np.nan)
    at = dict(zip(steps.tolist(), cum.tolist()))
    return np.array([0.0 if e == 0 else at.get(e, np.nan) for e in h["evaluations"]["iteration"].tolist()])


def plot_comparison(results: dict, filename=None) -> Figure:
    """The evaluated ELBO of each result against observed-node accesses (left, log x) and
    against the cumulative wall time of its steps (right; ELBO evaluations excluded), overlaid.
    The y-axes show the ELBO (higher is better) on the dashboard's rule (linear unless the
    bounds span more than a factor of ten). The initial bound (no access, no time yet) is left
    out. The time legend gives each fit's total step time, the end of its curve (and its whole
    wall time, evaluations and setup included). ``results`` maps labels to FitResults.
    filename: also save it there."""
    fig = Figure(figsize=(11.5, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    by_access, by_time = fig.subplots(1, 2)
    series = {}
    for label, result in results.items():
        h = normalized(result)
        ev = h["evaluations"]
        acc, elbo = np.asarray(ev["accesses"], float), np.asarray(ev["elbo"], float)
        secs = _eval_seconds(h)
        keep = np.isfinite(elbo) & (ev["iteration"] > 0)
        series[label] = (acc[keep], secs[keep], elbo[keep], result)
    everything = np.concatenate([s[2] for s in series.values()]) if series else np.zeros(0)
    cmap = matplotlib.colormaps["tab10"]
    for i, (label, (acc, secs, elbo, result)) in enumerate(series.items()):
        colour = cmap(i % 10)
        name = f"{label}: final {result.final_elbo:.6g}" + (" (DIVERGED)" if result.diverged else "")
        ok = np.isfinite(acc) & (acc > 0)
        by_access.plot(acc[ok], elbo[ok], color=colour, marker="o", markersize=3, linewidth=1.4,
                       label=name)
        ok = np.isfinite(secs)
        steps = np.nansum(normalized(result)["step_seconds"])
        by_time.plot(secs[ok], elbo[ok], color=colour, marker="o", markersize=3, linewidth=1.4,
                     label=f"{label}: {steps:.3g} s of steps ({result.seconds:.3g} s in all)")
    accesses = np.concatenate([s[0] for s in series.values()]) if series else np.zeros(0)
    if np.any(np.isfinite(accesses) & (accesses > 0)):
        by_access.set_xscale("log")
        log_ticks(by_access, "x", accesses)
    for ax in (by_access, by_time):
        ax.grid(True, alpha=0.3)
        set_elbo_axis(ax, everything)
        if ax.lines:
            ax.legend(fontsize=8, loc="best")
    by_access.set_xlabel("observed-node element accesses (log scale)")
    by_access.set_title("ELBO against observed-node accesses", fontsize=10)
    by_time.set_xlabel("seconds of steps (ELBO evaluations excluded)")
    by_time.set_title("ELBO against step time", fontsize=10)
    fig.suptitle("The fits compared (initial bound not shown)", fontsize=10)
    if filename is not None:
        path = Path(filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def write_comparison(fits: dict, directory) -> list[Path]:
    """Write ``comparison.md`` (the table, and a link to each fit's sub-report found in
    ``directory/<label>/``, so write those first) and
    ``comparison.png`` (:func:`plot_comparison`) into ``directory``; return the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    rows = comparison_rows(fits)
    text = ["# Comparison of fits", "", comparison_table(rows), "![ELBO against accesses](comparison.png)", ""]
    text += [f"- [`{r['label']}/`]({r['label']}/summary.txt): report of the {r['method']} fit"
             for r in rows if (out / r["label"]).is_dir()]
    table = out / "comparison.md"
    table.write_text("\n".join(text) + "\n", encoding="utf-8")
    png = out / "comparison.png"
    plot_comparison({label: result for label, (_, result) in fits.items()}, png)
    return [table, png]
