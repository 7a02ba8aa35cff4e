"""Which element of a plated Gaussian w each element of a factor's child reads (w's own plate
letters among the child's, or a gather ``w[index]`` along the child's plate), and arrays over
the child's elements regrouped per element of w: shaped w's plates + (width, ...), each group's
elements in their order, padded with zeros to the largest group (a zero row adds nothing to
B^T B or B^T z), where that padding stays within PADDED times the elements."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..leaves import GatherLeaf, NodeLeaf


class Groups(NamedTuple):
    plates: tuple  # w's plate shape
    child: tuple  # the child's shape
    order: np.ndarray  # the child's elements (flat) sorted by their element of w
    slot: tuple  # (element of w, position in its group) of each sorted element
    width: int  # the largest group


def readable(leaf, letters: str, own: str) -> bool:
    """Whether ``leaf`` (a Gaussian's moments read in a factor whose child has ``letters``, with
    ``own`` the leaf's plate letters) reads each child element at one element of the node: the
    node itself over its plate letters, or a gather of a node with one plate."""
    if type(leaf) is NodeLeaf:
        return len(own) == len(leaf.node.plates) and set(own) <= set(letters)
    return type(leaf) is GatherLeaf and len(leaf.node.plates) == 1 and len(own) == 1 and own in letters


#: groups are padded to the largest only while that holds at most PADDED times the child's
#: elements (and any count up to PADDED_ANY): groups of very unequal sizes are not regrouped
PADDED, PADDED_ANY = 4, 2**16


def groups(leaf, letters: str, own: str, child: tuple, plates: tuple, ctx) -> Groups | None:
    """The Groups of the child's elements (shape ``child``, letters ``letters``) by the element of
    ``leaf``'s node (plate shape ``plates``) each reads; None where padding the groups to the
    largest would take more than PADDED times the elements."""
    if type(leaf) is GatherLeaf:
        along = np.asarray(leaf.indices(ctx))
        axis = letters.index(own)
        k = np.broadcast_to(along.reshape([-1 if i == axis else 1 for i in range(len(child))]), child)
    else:
        k = np.zeros(child, dtype=np.intp)
        for letter, size in zip(own, plates):
            axis = letters.index(letter)
            k = k * size + np.arange(child[axis]).reshape([-1 if i == axis else 1 for i in range(len(child))])
    k = np.ravel(k)
    order = np.argsort(k, kind="stable")
    counts = np.bincount(k, minlength=int(np.prod(plates)))
    ks = k[order]
    position = np.arange(k.size) - (np.cumsum(counts) - counts)[ks]
    width = int(counts.max()) if k.size else 0
    if counts.size * width > max(PADDED * k.size, PADDED_ANY):
        return None
    return Groups(tuple(plates), tuple(child), order, (ks, position), width)


def regroup(g: Groups, a: np.ndarray) -> np.ndarray:
    """``a`` shaped child + tail as w's plates + (width,) + tail (zeros where a group is short)."""
    a = np.broadcast_to(a, g.child + a.shape[len(g.child):])
    tail = a.shape[len(g.child):]
    out = np.zeros((int(np.prod(g.plates)), g.width) + tail)
    out[g.slot] = a.reshape((-1,) + tail)[g.order]
    return out.reshape(g.plates + (g.width,) + tail)


def ungroup(g: Groups, v: np.ndarray) -> np.ndarray:
    """The inverse of ``regroup`` for v shaped w's plates + (width,): shaped child."""
    out = np.empty(int(np.prod(g.child)))
    out[g.order] = v.reshape((-1, g.width))[g.slot]
    return out.reshape(g.child)
