"""A plate of frozen scipy.stats distributions where scipy has no batched form (Dirichlet,
Wishart, multivariate normal): each method is called per plate element and the results are
stacked into plates + result shape."""
from __future__ import annotations

from typing import Callable

import numpy as np


class Elementwise:
    """``make(**parameters at one element)`` for every element of ``plate_shape``; a method
    call maps over the elements, with each array argument indexed at the element."""

    def __init__(self, make: Callable, plate_shape: tuple[int, ...], **parameters: np.ndarray):
        self.plate_shape = tuple(plate_shape)
        self._items = {idx: make(**{k: _at(v, idx) for k, v in parameters.items()})
                       for idx in np.ndindex(*self.plate_shape)}

    def __getitem__(self, idx):
        return self._items[idx if isinstance(idx, tuple) else (idx,)]

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        if not callable(getattr(next(iter(self._items.values())), method)):  # an attribute (a mean vector)
            out = [np.asarray(getattr(d, method)) for d in self._items.values()]
            return np.stack(out).reshape(self.plate_shape + out[0].shape)

        def call(*args, **kwargs):
            out = [np.asarray(getattr(d, method)(*(_at(a, idx) for a in args), **kwargs))
                   for idx, d in self._items.items()]
            return np.stack(out).reshape(self.plate_shape + out[0].shape)
        return call


def _at(value, idx):
    return np.asarray(value)[idx] if np.ndim(value) else value
