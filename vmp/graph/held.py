"""Natural parameters or moments held elsewhere or in parts: one abstract class, and the one
place where such a handle and arrays in this process meet.

A :class:`Held` stands for a tuple of arrays (a node's natural parameters or moments) that is
not formed here: a partially observed node's q held as its latent rows plus the complete rows'
constant (``partial.Filled``), or a local's q kept by the workers that hold its rows (a
partitioned executor's ``Kept``). It answers what the engine and the loop ask of a q where its
parts are (its moments, how many elements left the family's domain, how far it moved, which
code made its parts), and reading it as a tuple (indexing, iterating, pickling, copying) forms
the arrays (:meth:`Held.gathered`).

The functions below take either a tuple of arrays or a handle and give the same answer for
both; they are the only code that tells the two apart (``functools.singledispatch`` on
``Held``), so the engine, the loop and the executors never ask which they have.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import singledispatch

import numpy as np

from ..errors import VMPError


class Held(tuple, ABC):
    """Natural parameters or moments that stand for a tuple of arrays (module docstring).

    The tuple's own slots hold placeholders; everything that reads it as a tuple reads
    :meth:`gathered` instead."""

    @abstractmethod
    def gathered(self) -> tuple:
        """The arrays themselves, formed here (once per object)."""

    @abstractmethod
    def pieces(self, where):
        """This value's parts in the form ``where`` made them (an executor: its references to
        the parts on its workers, or the Round whose locals they are; a partially observed
        node's ``LatentRows``: the complete rows' constant and the latent rows' arrays); None
        when ``where`` did not make them."""

    # a handle of natural parameters answers these where its parts are; one of moments only
    # (the drawn rows' locals of a minibatch step) has nothing to answer them from
    def moments(self) -> "Held":
        """The moments of q at these natural parameters, held as these are."""
        raise VMPError(f"{type(self).__name__}: a handle of moments has no natural parameters to take moments of")

    def invalid(self) -> int:
        """How many elements of these natural parameters are outside the family's domain."""
        raise VMPError(f"{type(self).__name__}: a handle of moments has no natural parameters to check")

    def relative_change(self, old) -> float:
        """||self - old|| / ||old|| (``old``: arrays or a handle), summed where the parts are."""
        raise VMPError(f"{type(self).__name__}: a handle of moments has no natural parameters to compare")

    def __getitem__(self, i):
        return self.gathered()[i]

    def __iter__(self):
        return iter(self.gathered())

    def __reduce__(self):
        return (tuple, (self.gathered(),))

    def __deepcopy__(self, memo):
        return tuple(np.array(a) for a in self.gathered())

    def __repr__(self):
        return repr(self.gathered())

    def __eq__(self, other):
        return self.gathered() == other

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


@singledispatch
def moments(natural, here: Callable[[tuple], tuple]) -> tuple:
    """The moments of q at ``natural``: ``here(natural)`` for arrays, a handle's own."""
    return here(natural)


@moments.register
def _(natural: Held, here) -> tuple:
    return natural.moments()


@singledispatch
def invalid(natural, here: Callable[[tuple], int]) -> int:
    """Elements of ``natural`` outside the family's domain: ``here(natural)`` for arrays, a
    handle's own count."""
    return here(natural)


@invalid.register
def _(natural: Held, here) -> int:
    return natural.invalid()


@singledispatch
def relative_change(new, old, here: Callable) -> float:
    """||new - old|| / ||old||: ``here(old, new)`` for arrays, a handle's own."""
    return here(old, new)


@relative_change.register
def _(new: Held, old, here) -> float:
    return new.relative_change(old)


@singledispatch
def pieces(value, where):
    """``value``'s parts in the form ``where`` made them (:meth:`Held.pieces`; None for arrays)."""
    return None


@pieces.register
def _(value: Held, where):
    return value.pieces(where)


@singledispatch
def here(value):
    """``value`` with its arrays in this process (a handle gathered; anything else as it is)."""
    return value


@here.register
def _(value: Held):
    return value.gathered()
