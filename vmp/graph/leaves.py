"""Leaves: the arrays of moments that enter a factor's terms, and where their messages go."""
from __future__ import annotations

import numpy as np

from .expressions import Constant, Gather


class Leaf:
    """Moments in a factor's layout; ``node`` receives the messages (None for constants)."""

    node = None
    plates: tuple = ()

    @property
    def target(self) -> bool:
        return self.node is not None and not self.node.observed

    @property
    def point(self) -> bool:
        return not self.target

    def moments(self) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def to_node(self, message: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        return message


class NodeLeaf(Leaf):
    def __init__(self, node):
        self.node = node
        self.plates = node.plates
        self.family = node.family

    def moments(self):
        return self.node.moments

    def shapes(self):
        return self.node.component_shapes()


class ConstLeaf(Leaf):
    def __init__(self, const: Constant, plates: tuple):
        self.const = const
        self.plates = plates
        self.family = const.family

    def moments(self):
        return self.const.moments


class GatherLeaf(Leaf):
    """Forward: the node's moments at the gathered rows. Backward: a segment sum (sparse product)."""

    def __init__(self, gather: Gather):
        self.gather = gather
        self.node = gather.node
        self.plates = gather.plates
        self.family = gather.family
        self._cache: tuple = (None, None)

    def moments(self):
        key = self.node.version
        if self._cache[0] != key:
            idx = self.gather.index
            self._cache = (key, tuple(m[idx] for m in self.node.moments))
        return self._cache[1]

    def shapes(self):
        return self.node.component_shapes((self.gather.index.size,) + self.node.plate_shape[1:])

    def to_node(self, message):
        s = self.gather.scatter
        out = []
        for m in message:
            flat = m.reshape(m.shape[0], -1)
            out.append(np.asarray(s @ flat).reshape((s.shape[0],) + m.shape[1:]))
        return tuple(out)
