"""Diagnostics of a fit: a convergence dashboard, a text summary, a JSON history, a report.

``FitResult.plot`` and ``FitResult.summary`` delegate here.
"""
from .dashboard import plot as plot
from .history import history_dict as history_dict
from .history import series as series
from .mixture import plot_mixture as plot_mixture
from .report import write_report as write_report
from .text import describe_posterior as describe_posterior
from .text import summary as summary

__all__ = ["plot", "summary", "history_dict", "series", "write_report", "describe_posterior",
           "plot_mixture"]
