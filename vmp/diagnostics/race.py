"""Time to a given bound: when did each fit's exact ELBO first come within a gap of the best?

For fits of one model to one data set (the demo's larger data set): the bound is the exact
ELBO at each evaluation, the time the cumulative seconds of the steps before it (evaluations
not counted, as their cost is the reader's choice, not the method's).
"""
from __future__ import annotations

import numpy as np

from .compare import _eval_seconds, normalized


def time_to_bound(results: dict, gaps=(0.01, 0.005, 0.002)) -> list[dict]:
    """One row per relative gap g: the bound target = best - g |best| (best over all fits'
    evaluations) and, per fit label, (seconds, iteration) of its first evaluation at or above
    the target, or None when it never got there."""
    hist = {label: normalized(r) for label, r in results.items()}
    evals = {label: h["evaluations"] for label, h in hist.items()}
    best = max(float(np.max(e["elbo"])) for e in evals.values())
    rows = []
    seconds = {label: _eval_seconds(h) for label, h in hist.items()}
    for gap in gaps:
        target = best - gap * abs(best)
        row = {"gap": gap, "target": target}
        for label, e in evals.items():
            hit = np.nonzero(np.asarray(e["elbo"]) >= target)[0]
            row[label] = None if not hit.size else (float(seconds[label][hit[0]]), int(e["iteration"][hit[0]]))
        rows.append(row)
    return rows


def race_table(rows: list[dict], labels: list[str]) -> str:
    """A Markdown table of :func:`time_to_bound`: seconds of steps (and step count) per fit."""
    head = "| bound within | " + " | ".join(labels) + " |"
    lines = [head, "|" + "|".join("---" for _ in range(len(labels) + 1)) + "|"]
    for row in rows:
        cells = ["not reached" if row[k] is None else f"{row[k][0]:.2f} s (step {row[k][1]})" for k in labels]
        lines.append(f"| {row['gap']:.1%} of the best ({row['target']:.6g}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: times within this factor of each other are reported as a tie (timings on a shared machine)
TIE = 1.25


def race_verdict(rows: list[dict], fast: str, slow: str) -> str:
    """One clause per gap: which fit reached it first, and by what factor (a tie within TIE)."""
    parts = []
    for row in rows:
        a, b = row[fast], row[slow]
        what = f"within {row['gap']:.1%}"
        if a is None and b is None:
            parts.append(f"neither reached {what}")
        elif a is not None and b is not None and max(a[0], b[0]) < TIE * min(a[0], b[0]):
            parts.append(f"both reached {what} in about the same time")
        elif b is None or (a is not None and a[0] < b[0]):
            ratio = "" if b is None or a[0] <= 0 else f" ({b[0] / a[0]:.1f}x sooner)"
            parts.append(f"{fast} reached {what} first{ratio}")
        else:
            ratio = "" if a is None or b[0] <= 0 else f" ({a[0] / b[0]:.1f}x sooner)"
            parts.append(f"{slow} reached {what} first{ratio}")
    return "; ".join(parts)


def final_bounds(results: dict) -> str:
    """Which fit ended with the higher exact bound (its last evaluation)."""
    last = {label: float(normalized(r)["evaluations"]["elbo"][-1]) for label, r in results.items()}
    order = sorted(last, key=last.get, reverse=True)
    return f"{order[0]} ended higher (" + " vs ".join(f"{label} {last[label]:.7g}" for label in order) + ")"
