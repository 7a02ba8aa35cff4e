"""Plates: replicated structure. Nodes declared inside ``with Plate(name, size)`` get that axis."""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import GraphError
from . import context


def _whole(value) -> bool:
    """A whole number (an int, or a float or numpy number equal to one), not a bool or a string."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, numbers.Real)):
        return False
    return bool(np.isfinite(value)) and int(value) == value


class Plate:
    """A plate of ``size`` replicas. Nested plates add axes, outermost first."""

    def __init__(self, name: str, size: int):
        if not isinstance(name, str) or not name:
            raise GraphError(f"plate name must be a non-empty string, got {name!r}")
        if not _whole(size) or size < 1:
            raise GraphError(f"plate '{name}': size must be a positive integer, got {size!r}")
        self.name = name
        self.size = int(size)
        model = context._MODELS[-1] if context._MODELS else None
        if model is not None:
            known = model.plates.get(name)
            if known is not None and known.size != self.size:
                raise GraphError(f"plate '{name}' was declared with size {known.size}, now {self.size}")
            model.plates.setdefault(name, self)

    def __enter__(self) -> "Plate":
        if any(p.name == self.name for p in context._PLATES):
            raise GraphError(f"plate '{self.name}' is already open")
        context._PLATES.append(self)
        return self

    def __exit__(self, *exc) -> None:
        context._PLATES.remove(self)

    def __eq__(self, other) -> bool:
        return isinstance(other, Plate) and other.name == self.name and other.size == self.size

    def __hash__(self) -> int:
        return hash((self.name, self.size))

    def __repr__(self) -> str:
        return f"Plate({self.name!r}, {self.size})"
