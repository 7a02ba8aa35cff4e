"""The base of a strategy, and what the memos compare."""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class Strategy:
    """An optimization of the reference evaluator: ``name`` selects it, ``hooks`` lists the
    methods of ``Reference`` it wraps (each implemented with that method's arguments plus
    ``inner``). Built once per bound factor, with the evaluator it serves."""

    name: str = ""
    hooks: tuple[str, ...] = ()

    def __init__(self, evaluator):
        self.evaluator = evaluator
        self.factor = evaluator.factor


class Deferred(ABC):
    """A kept message held as the factors it is formed from."""

    @abstractmethod
    def value(self) -> np.ndarray:
        """The message formed again from its factors (the same numbers as when it was sent)."""


def formed(kept) -> np.ndarray:
    """A kept message as an array."""
    return kept.value() if isinstance(kept, Deferred) else kept


def same(a: tuple, b: tuple) -> bool:
    """The same objects, element by element (a memo's key compared by identity)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def stamps(ops, ctx) -> tuple:
    """The moments objects the operands read (``Leaf.stamp``: None for data and constants)."""
    return tuple(None if o.leaf is None else o.leaf.stamp(ctx) for o in ops)
