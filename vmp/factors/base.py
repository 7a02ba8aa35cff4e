"""A conditional distribution p(x | parents): its child family, parent roles and terms."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from ..families import Family
from ..families.constraints import Constraint
from .terms import Const, Term

Arrays = tuple[np.ndarray, ...]


class Conditional(ABC):
    """One factor of the network, defined by its expected log-density (see ``terms``).

    ``roles`` maps each parent role that may be a random node to the family whose moments it
    consumes; that pairing is the conjugacy rule. Fixed hyperparameters that may never be nodes
    (a Gamma's shape, a Wishart's dof and scale, a Dirichlet's alpha) are constructor arguments.
    The domain of every role and hyperparameter given as a constant is the child family's
    (``Family.constraints_for``), unless ``arg_constraints`` says otherwise.
    """

    child: ClassVar[type[Family]]
    roles: ClassVar[dict[str, type[Family]]] = {}
    #: domains of constant roles and hyperparameters beyond the child family's parameters
    arg_constraints: ClassVar[dict[str, Constraint]] = {}

    def __init__(self, event_shape: tuple[int, ...]):
        self.event_shape = tuple(event_shape)
        self.x = None

    @abstractmethod
    def terms(self) -> list[Term]:
        """The expected log-density as a sum of multilinear terms in roles 'x' (child) and parents."""

    def observe(self, x) -> None:
        """The child's observed values (plates + data event), for terms that depend on the data
        alone; the node calls this once its data are checked."""
        self.x = x

    def data_terms(self) -> list[Term]:
        """Terms of the observed child alone: sum_n w_n log h(x_n), the base measure (none when
        h = 1 or the child is latent)."""
        if self.x is None or self.child.unit_base_measure:
            return []
        return [Term(1.0, (), (Const(np.asarray(self.child.log_base_measure(self.x, self.event_shape), float)),))]

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The event shape of the parent in ``role``, for a child of ``event_shape``."""
        return tuple(event_shape)

    @classmethod
    def constraints(cls, event_shape: tuple[int, ...]) -> dict[str, Constraint]:
        """Domain of each role or hyperparameter given as a constant."""
        return {**cls.child.constraints_for(event_shape), **cls.arg_constraints}

    @classmethod
    def check(cls, role: str, value: np.ndarray, event_shape: tuple[int, ...]) -> str | None:
        """Why a constant given for ``role`` is outside its domain, or None when it is valid."""
        c = cls.constraints(event_shape).get(role)
        return None if c is None else c.explain(role, value)
