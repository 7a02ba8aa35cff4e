"""Functions of an upper layer held by name for a lower layer that must not import it (the graph's
facades, a fit result's readers), filled by a module of the upper layer when vmp is imported."""
from __future__ import annotations

from typing import Callable

from .errors import VMPError


class Registry(dict):
    """Name -> function, filled by the module ``filler`` at ``import vmp``; ``prefix`` is how an
    error names the missing entry (``"FitResult."`` for ``FitResult.plot``)."""

    def __init__(self, filler: str, prefix: str = "") -> None:
        super().__init__()
        self.filler, self.prefix = filler, prefix

    def lookup(self, name: str) -> Callable:
        """The function registered as ``name``."""
        found = self.get(name)
        if found is None:
            raise VMPError(f"{self.prefix}{name}: no function registered for it ({self.filler} registers them "
                           f"on import vmp)")
        return found
