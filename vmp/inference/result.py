"""What a fit returns."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class FitResult:
    """ELBO history and convergence state of one call to ``model.fit``."""

    elbo: np.ndarray
    converged: bool
    iterations: int
    message: str
    decrease: dict | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)
    diverged: bool = False

    @property
    def final_elbo(self) -> float:
        return float(self.elbo[-1]) if len(self.elbo) else float("nan")

    def plot(self, filename: str | None = None):
        """A matplotlib dashboard of the convergence diagnostics (see vmp.diagnostics)."""
        from ..diagnostics import plot

        return plot(self, filename)

    def to_dict(self) -> dict:
        """History and convergence state as JSON-ready data (see vmp.diagnostics.history_dict)."""
        from ..diagnostics import history_dict

        return history_dict(self)

    def to_dataframe(self):
        """One row per iteration as a pandas DataFrame (needs pandas)."""
        from ..diagnostics import to_dataframe

        return to_dataframe(self)

    def summary(self, model=None) -> str:
        """A text table of the convergence state and, given the model, the posterior."""
        from ..diagnostics import summary

        return summary(self, model)

    def __repr__(self) -> str:
        return (f"FitResult(converged={self.converged}, iterations={self.iterations}, "
                f"elbo={self.final_elbo:.6g}, message={self.message!r})")
