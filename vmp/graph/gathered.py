"""A tuple of arrays kept elsewhere or in parts (``partial.Filled``, an executor's ``Kept``),
formed only when read."""
from __future__ import annotations

import numpy as np


class Gathered(tuple):
    """Natural parameters or moments that stand for a tuple of arrays: reading it (indexing,
    iterating, pickling, copying) reads :meth:`gathered`; the fit passes it to the code that
    holds its parts."""

    def gathered(self) -> tuple:
        """The arrays themselves; each subclass (``partial.Filled``, an executor's ``Kept``) says
        where its parts are held."""
        raise NotImplementedError(f"{type(self).__name__} does not say where its arrays are held")

    def __getitem__(self, i):
        return self.gathered()[i]

    def __iter__(self):
        return iter(self.gathered())

    def __reduce__(self):
        return (tuple, (self.gathered(),))

    def __deepcopy__(self, memo):
        return tuple(np.array(a) for a in self.gathered())

    # the tuple's own slots hold placeholders: what reads them reads the arrays instead
    def __repr__(self):
        return repr(self.gathered())

    def __eq__(self, other):
        return self.gathered() == (other.gathered() if isinstance(other, Gathered) else other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.gathered())

    def __add__(self, other):
        return self.gathered() + tuple(other)

    def __radd__(self, other):
        return tuple(other) + self.gathered()

    def __mul__(self, n):
        return self.gathered() * n

    __rmul__ = __mul__

    def __contains__(self, value):
        return value in self.gathered()

    def count(self, value):
        return self.gathered().count(value)

    def index(self, value, *args):
        return self.gathered().index(value, *args)
