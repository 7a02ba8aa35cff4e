"""The predictive distribution of a node's elements, as ``model.predict``, ``model.prior_predict``
and ``model.impute`` return it (vmp/predictive.py, vmp/predictive_logit.py compute it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .errors import GraphError


@dataclass
class Predictive:
    """The predictive of node ``name`` (or of its masked entries, for ``model.impute``).

    ``mean``: E[x] (class probabilities for a Categorical); ``variance``: elementwise Var[x] (the
    diagonal of ``covariance`` for a Gaussian); ``method``: how ``to_scipy`` is obtained
    ("exact", "moment-matched", "monte-carlo": no scipy object, use ``sample``)."""

    name: str
    mean: np.ndarray
    variance: np.ndarray
    covariance: np.ndarray | None
    method: str
    _scipy: Callable = field(repr=False)
    _sample: Callable = field(repr=False)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.variance)

    def to_scipy(self, index: tuple | None = None):
        """A scipy.stats frozen distribution: over all elements at once for a univariate node,
        at one element ``index`` for a multivariate one."""
        if self._scipy is None:
            raise GraphError(f"node '{self.name}': no closed-form predictive here (method "
                             f"'{self.method}'); use .sample(n) or .mean/.variance")
        return self._scipy(index)

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Central credible interval of each (marginal) element: from ``to_scipy`` when it is
        exact and univariate, else the quantiles of 4000 exact draws (seeded: reproducible)."""
        if self._scipy is not None and self.covariance is None and self.method == "exact":
            dist = self._scipy(None)
            if hasattr(dist, "interval"):
                return dist.interval(level)
        draws = self.sample(4000, 0)
        return tuple(np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0))

    def sample(self, n: int = 1, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` exact draws from the predictive, shaped (n,) + ``mean.shape`` (integers for a
        Categorical)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise GraphError(f"node '{self.name}': the number of draws must be a positive integer, got {n!r}")
        return self._sample(int(n), np.random.default_rng(rng))
