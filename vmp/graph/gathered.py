"""A tuple of arrays kept elsewhere or in parts (``partial.Filled``, an executor's ``Kept``),
formed only when read."""
from __future__ import annotations

import numpy as np


class Gathered(tuple):
    """Natural parameters or moments that stand for a tuple of arrays: reading it (indexing,
    iterating, pickling, copying) reads :meth:`gathered`; the fit passes it to the code that
    holds its parts."""

    def gathered(self) -> tuple:
        raise NotImplementedError

    def __getitem__(self, i):
        return self.gathered()[i]

    def __iter__(self):
        return iter(self.gathered())

    def __reduce__(self):
        return (tuple, (self.gathered(),))

    def __deepcopy__(self, memo):
        return tuple(np.array(a) for a in self.gathered())
