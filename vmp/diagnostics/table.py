"""The posterior as a table: one row per element of each latent node, for spreadsheets and pandas.

Columns: ``node``, ``element`` (the index into the node's mean, ``[i, j]``; ``[]`` for a scalar),
``mean`` (the posterior mean, as ``node.mean``), ``sd`` and the central credible interval
``lower``, ``upper`` of the element's marginal under q (the family's ``marginal``, as
``result.summary(model)`` prints them; NaN where the family has none, e.g. a Wishart's entries).
Numbers are written with 17 significant digits (they read back to the same floats).
"""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np

COLUMNS = ("node", "element", "mean", "sd", "lower", "upper")
#: nodes with more elements than this are left out of the table (named in a warning)
MAX_ELEMENTS = 100_000


def node_rows(node, level: float = 0.95) -> dict[str, np.ndarray] | None:
    """The table's columns for one latent node (None without a posterior)."""
    from ..errors import VMPError

    try:
        mean = np.asarray(node.mean, dtype=float)
        dist = node.family.marginal(node.natural)
    except VMPError:
        return None
    if dist is None:
        sd = lower = upper = np.full(mean.shape, np.nan)
    else:
        sd = np.broadcast_to(np.asarray(dist.std(), float), mean.shape)
        lower, upper = (np.broadcast_to(np.asarray(b, float), mean.shape) for b in dist.interval(level))
    index = np.indices(mean.shape).reshape(mean.ndim, -1).T.tolist() if mean.ndim else [[]]
    elements = np.array([f"[{', '.join(map(str, i))}]" for i in index])
    return {"node": np.full(mean.size, node.name), "element": elements, "mean": mean.ravel(),
            "sd": sd.ravel(), "lower": lower.ravel(), "upper": upper.ravel()}


def posterior_table(model, level: float = 0.95, max_elements: int = MAX_ELEMENTS) -> dict[str, np.ndarray]:
    """The columns of the table over the latent nodes of ``model`` that have a posterior and at
    most ``max_elements`` elements (a warning names those left out)."""
    parts, left_out = [], []
    for node in model:
        if node.observed:
            continue
        if node.natural is not None and np.size(node.mean) > max_elements:
            left_out.append(f"{node.name} ({np.size(node.mean):,} elements)")
            continue
        rows = node_rows(node, level)
        if rows is not None:
            parts.append(rows)
    if left_out:
        warnings.warn(f"summary table: left out {', '.join(left_out)}: more than {max_elements:,} elements; "
                      f"read them from the model (node.mean, node.parameters)", stacklevel=2)
    return {c: np.concatenate([p[c] for p in parts]) if parts else np.array([]) for c in COLUMNS}


def write_summary_csv(model, path, level: float = 0.95, max_elements: int = MAX_ELEMENTS) -> Path:
    """Write :func:`posterior_table` to ``path`` as CSV with a header row."""
    table = posterior_table(model, level, max_elements)
    path = Path(path)
    numbers = [np.char.mod("%.17g", table[c]) for c in COLUMNS[2:]]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows(zip(table["node"], table["element"], *numbers))
    return path
