"""Write a fit's report into a directory: diagram, dashboard, history JSON, summary."""
from __future__ import annotations

import json
from pathlib import Path

from .dashboard import plot
from .history import history_dict
from .mixture import plot_mixture
from .table import write_summary_csv
from .text import summary

__all__ = ["write_report"]


def write_report(model, result, directory) -> list[Path]:
    """Write ``model.svg`` (the diagram; ``model.dot`` without Graphviz, with a warning),
    ``dashboard.png``, ``history.json``, ``summary.txt`` and ``summary.csv`` (the posterior
    table, :mod:`vmp.diagnostics.table`) into ``directory`` (created if needed),
    ``posterior.nc`` (ArviZ InferenceData, :func:`vmp.export.write_netcdf`) when ArviZ is
    installed, and ``clusters.png`` for a 2-D Gaussian mixture; return the paths written."""
    from ..export import write_netcdf
    from ..render import diagram, write

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write(diagram(model), out / "model.svg")]
    dashboard = out / "dashboard.png"
    plot(result, dashboard)
    paths.append(dashboard)
    history = out / "history.json"
    history.write_text(json.dumps(history_dict(result), indent=2) + "\n", encoding="utf-8")
    paths.append(history)
    text = out / "summary.txt"
    text.write_text(summary(result, model), encoding="utf-8")
    paths.append(text)
    paths.append(write_summary_csv(model, out / "summary.csv"))
    netcdf = write_netcdf(model, out / "posterior.nc", result=result)
    if netcdf is not None:
        paths.append(netcdf)
    clusters = out / "clusters.png"
    if plot_mixture(model, clusters) is not None:
        paths.append(clusters)
    return paths
