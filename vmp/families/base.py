"""The exponential-family interface.

A distribution is written, as in Winn & Bishop (2005) eq. (2),

    log p(x) = <eta, u(x)> - A(eta)

with natural parameters ``eta`` and sufficient statistics ``u(x)``, both tuples of arrays
shaped ``plates + event``. The moments E[u(x)] are the gradient of the log-normalizer A.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from ._linalg import inner, sym

Arrays = tuple[np.ndarray, ...]


class Family(ABC):
    """Exponential-family math on arrays with leading plate axes. Stateless."""

    name: ClassVar[str]
    #: number of trailing event axes of each component of eta and u
    event_ndims: ClassVar[tuple[int, ...]]
    #: components that, for a point mass, are outer products of other components:
    #: {c: (a, b)} means u_c(x) = u_a(x) (x) u_b(x)
    outer: ClassVar[dict[int, tuple[int, int]]] = {}

    @classmethod
    @abstractmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[u(x)] = dA/d eta."""

    @classmethod
    @abstractmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A(eta), one value per plate element."""

    @classmethod
    def inner(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """<eta, u> summed over event axes, one value per plate element."""
        return sum(inner(e, u, n) for e, u, n in zip(natural, moments, cls.event_ndims))

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H[q] = A(eta) - <eta, E[u]> (every family here has unit base measure)."""
        if moments is None:
            moments = cls.moments(natural)
        return cls.log_normalizer(natural) - cls.inner(natural, moments)

    @classmethod
    def symmetrize(cls, message: Arrays) -> Arrays:
        """The message with every matrix component (u = x x^T, u = Lambda) replaced by its symmetric
        part: <eta, u> is unchanged for symmetric u, and q's natural parameters stay symmetric."""
        return tuple(sym(m) if n == 2 else m for m, n in zip(message, cls.event_ndims))

    @classmethod
    @abstractmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """Boolean per plate element: is eta in the natural-parameter domain."""

    @staticmethod
    @abstractmethod
    def statistics(x: np.ndarray) -> Arrays:
        """Sufficient statistics u(x) of a point."""

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q as one frozen scipy distribution over arrays shaped like the
        mean, for credible intervals; None where the family has none here (Wishart)."""
        return None

    @classmethod
    def plate_shape(cls, natural: Arrays) -> tuple[int, ...]:
        a, n = natural[0], cls.event_ndims[0]
        return a.shape[: a.ndim - n]

    @classmethod
    def event_shape(cls, natural: Arrays) -> tuple[int, ...]:
        a, n = natural[0], cls.event_ndims[0]
        return a.shape[a.ndim - n:]
