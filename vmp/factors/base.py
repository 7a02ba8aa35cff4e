"""A conditional distribution p(x | parents): its child family, parent roles and terms."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from ..families import Family
from .terms import Term

Arrays = tuple[np.ndarray, ...]


class Conditional(ABC):
    """One factor of the network, defined by its expected log-density (see ``terms``).

    ``roles`` maps each parent role that may be a random node to the family whose moments it
    consumes; that pairing is the conjugacy rule. Fixed hyperparameters that may never be nodes
    (a Gamma's shape, a Wishart's dof and scale, a Dirichlet's alpha) are constructor arguments.
    """

    child: ClassVar[type[Family]]
    roles: ClassVar[dict[str, type[Family]]] = {}

    def __init__(self, event_shape: tuple[int, ...]):
        self.event_shape = tuple(event_shape)

    @abstractmethod
    def terms(self) -> list[Term]:
        """The expected log-density as a sum of multilinear terms in roles 'x' (child) and parents."""

    @staticmethod
    def check_constant(role: str, value: np.ndarray) -> str | None:
        """Why a constant given for ``role`` is outside its domain, or None when it is valid."""
        return None
