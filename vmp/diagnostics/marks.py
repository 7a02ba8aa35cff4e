"""What the dashboard draws over its panels so that any fit stays readable, a diverged or
interrupted one included: monitor events as one band per node and action (with a count, not a
line per event), legends limited to the nodes that matter, and y-limits over the finite values
with the evaluations that were not finite marked on the panel's edge."""
from __future__ import annotations

import numpy as np

_RED, _GREY = "#c0392b", "#7f7f7f"
#: how monitor events are drawn: the colour tells the action
EVENT_COLOUR = {"backoff": "#e67e22", "stop": _RED, "skip": "#8e44ad", "warn": "#b7950b"}
#: a per-node panel labels at most this many nodes (the others are drawn in grey)
LEGEND_NODES = 8
#: the node of an event about the bound (no node)
BOUND = "the bound"


def event_groups(events: list[dict]) -> list[dict]:
    """Events grouped by (node, action): first and last iteration, count, the monitors and the
    first message; in order of first appearance."""
    groups: dict = {}
    for e in events:
        node = e.get("node") or BOUND
        key = (str(node), str(e.get("action", "warn")))
        source = str(e.get("source") or e.get("monitor") or "")
        it = float(e["iteration"])
        g = groups.get(key)
        if g is None:
            groups[key] = {"node": key[0], "action": key[1], "first": it, "last": it, "count": 1,
                           "sources": [source], "message": str(e.get("message", ""))}
        else:
            g["first"], g["last"], g["count"] = min(g["first"], it), max(g["last"], it), g["count"] + 1
            if source not in g["sources"]:
                g["sources"].append(source)
    return list(groups.values())


def mark_events(ax, groups: list[dict], to_x=None) -> None:
    """One band (a line when it spans one iteration) per group, labelled with its count; its
    gid is "event:<node>:<action>". ``to_x`` maps an iteration to the panel's x."""
    for g in groups:
        lo, hi = (g["first"], g["last"]) if to_x is None else (to_x(g["first"]), to_x(g["last"]))
        if not (np.isfinite(lo) and np.isfinite(hi)):
            continue
        colour = EVENT_COLOUR.get(g["action"], _GREY)
        times = f" \u00d7{g['count']}" if g["count"] > 1 else ""
        label = f"{g['action']} {'/'.join(s for s in g['sources'] if s)}: {g['node']}{times}"
        if hi > lo:
            artist = ax.axvspan(lo, hi, color=colour, alpha=0.18, linewidth=0, zorder=0, label=label)
        else:
            artist = ax.axvline(lo, color=colour, linestyle="-.", linewidth=1.1, alpha=0.85, zorder=1, label=label)
        artist.set_gid(f"event:{g['node']}:{g['action']}")


def ranked(values: dict) -> list[str]:
    """Node names, those with the largest last finite value first (the ones still moving)."""
    def last(arr):
        a = np.asarray(arr, float)
        a = a[np.isfinite(a)]
        return a[-1] if a.size else -np.inf
    return sorted(values, key=lambda n: -last(values[n]))


def legend(ax, hidden: int = 0, **options) -> None:
    """The panel's legend when something is labelled; ``hidden`` nodes drawn without a label
    are counted in its title."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    title = f"+{hidden} more nodes in grey" if hidden else None
    ax.legend(handles, labels, fontsize=7, title=title, title_fontsize=7, **options)


def finite_limits(ax, x, values, *, log: bool = False, what: str = "iteration") -> None:
    """y-limits over the finite values of ``values`` (a margin of 5%, or of 1 around a single
    value), and each evaluation that is not finite marked by a red x on the top edge, with the
    first such x (``what``) named."""
    v = np.asarray(values, float)
    ok = np.isfinite(v) & ((v > 0) if log else True)
    if ok.any():
        lo, hi = float(v[ok].min()), float(v[ok].max())
        if log:
            ax.set_ylim(lo / 1.5, hi * 1.5)
        else:
            pad = 0.05 * (hi - lo) if hi > lo else max(1.0, 1e-3 * abs(lo))
            ax.set_ylim(lo - pad, hi + pad)
    bad = ~np.isfinite(v)
    xs = np.asarray(x, float)[bad] if np.size(x) == v.size else np.zeros(0)
    xs = xs[np.isfinite(xs)]
    if xs.size:
        ax.plot(xs, np.ones(xs.size), linestyle="none", marker="x", color=_RED, markersize=7,
                clip_on=False, transform=ax.get_xaxis_transform(), gid="not-finite")
        ax.annotate(f"not finite from {what} {xs.min():g}", xy=(0.98, 0.93), xycoords="axes fraction",
                    ha="right", fontsize=8, color=_RED)
