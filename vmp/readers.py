"""FitResult's readers: ``result.plot``, ``summary``, ``to_dataframe`` and ``to_arviz`` are functions
of the reading layer (``vmp.diagnostics``, ``vmp.export``), which imports inference; inference
holds them by name in ``inference.result.READERS``, registered here when vmp is imported, so that
it imports nothing above it. The diagnostics (and matplotlib) load on a reader's first call."""
from __future__ import annotations

from .inference.result import READERS


def plot(result, filename=None):
    """``vmp.diagnostics.plot``: the convergence dashboard."""
    from .diagnostics import plot as dashboard

    return dashboard(result, filename)


def summary(result, model=None) -> str:
    """``vmp.diagnostics.summary``: the text table."""
    from .diagnostics import summary as table

    return table(result, model)


def to_dataframe(result):
    """``vmp.diagnostics.to_dataframe``: one row per step."""
    from .diagnostics import to_dataframe as rows

    return rows(result)


def to_arviz(result, model, draws: int = 1000, seed: int | None = 0, predictive: bool = True):
    """``vmp.export.to_arviz`` of the fitted q."""
    from .export import to_arviz as draws_of

    return draws_of(model, draws, seed, predictive, result=result)


READERS.update(plot=plot, summary=summary, to_dataframe=to_dataframe, to_arviz=to_arviz)
