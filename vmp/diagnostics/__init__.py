"""Diagnostics of a fit: a convergence dashboard, a text summary, the history as JSON or a
DataFrame, the posterior as a table (CSV), a report directory, and comparisons of several fits.

``FitResult.plot`` and ``FitResult.summary`` delegate here. See docs/diagnostics.md.
"""
from .compare import comparison_rows as comparison_rows
from .compare import comparison_table as comparison_table
from .compare import plot_comparison as plot_comparison
from .compare import write_comparison as write_comparison
from .dashboard import plot as plot
from .history import from_dict as from_dict
from .history import history_dict as history_dict
from .history import series as series
from .history import to_dataframe as to_dataframe
from .mixture import components_used as components_used
from .mixture import plot_mixture as plot_mixture
from .report import write_report as write_report
from .table import posterior_table as posterior_table
from .table import write_summary_csv as write_summary_csv
from .text import describe_posterior as describe_posterior
from .text import summary as summary

__all__ = ["plot", "summary", "history_dict", "from_dict", "to_dataframe", "series",
           "write_report", "posterior_table", "write_summary_csv", "describe_posterior", "plot_mixture", "components_used",
           "comparison_rows", "comparison_table", "plot_comparison", "write_comparison"]
