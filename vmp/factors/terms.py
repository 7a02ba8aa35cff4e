"""Expected log-densities as sums of multilinear terms.

A conditional p(x | parents) is defined once, by its expected log-density

    E[log p(x | pa)] = sum_t  c_t * prod_{operands o of t} E[u_o]      (Winn & Bishop eq. (5))

where every operand is one moment component of one argument (the child or a parent role),
carrying einsum letters for its event axes. Because each term is linear in the moments of
every argument, the message to an argument is the partial derivative: the same term with that
operand removed. Messages and the ELBO therefore come from a single definition.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Op:
    """Moment component ``comp`` of the argument in ``role``, with event letters ``event``."""

    role: str
    comp: int
    event: str = ""


@dataclass(frozen=True)
class Const:
    """A constant array over the child's plates (broadcastable), with event letters ``event``."""

    value: np.ndarray = field(compare=False)
    event: str = ""


@dataclass(frozen=True)
class Term:
    """coef * prod(ops) * prod(consts)."""

    coef: float
    ops: tuple[Op, ...] = ()
    consts: tuple[Const, ...] = ()


#: contraction plans kept, least recently used dropped first (minibatch shapes vary, so the
#: cache must not grow without end)
PLAN_CACHE_SIZE = 1024
_PLANS: OrderedDict = OrderedDict()
#: intermediates above this many elements are avoided by chunking the largest axis
MAX_INTERMEDIATE = 2**20
#: contractions whose whole index space is at most this many elements skip path planning
DIRECT = 2**15


def _plan(subscripts: str, operands) -> tuple:
    """Contraction path (greedy, BLAS-friendly) and, when an intermediate would be large,
    the letter to chunk along so that memory stays bounded (no N x K x D temporaries)."""
    inputs_, output_ = subscripts.split("->")
    dims = {}
    for letters, op in zip(inputs_.split(","), operands):
        dims.update(zip(letters, op.shape))
    if float(np.prod([float(v) for v in dims.values()])) <= DIRECT and len(operands) <= 4:
        return "direct", None, None
    path, info = np.einsum_path(subscripts, *operands, optimize=("greedy", 1e15))
    largest = float(info.split("Largest intermediate:")[1].split()[0])
    inputs, output = subscripts.split("->")
    inputs = inputs.split(",")
    sizes = {}
    for letters, op in zip(inputs, operands):
        sizes.update(zip(letters, op.shape))
    if largest <= MAX_INTERMEDIATE or not sizes:
        return path, None, None
    letter = max(sizes, key=sizes.get)
    n = sizes[letter]
    rows = max(1, int(n * MAX_INTERMEDIATE / largest))
    if rows >= n:
        return path, None, None
    sliced = [o[(slice(None),) * s.index(letter) + (slice(0, rows),)] if letter in s else o
              for s, o in zip(inputs, operands)]
    chunk_path = np.einsum_path(subscripts, *sliced, optimize=("greedy", 1e15))[0]
    return chunk_path, letter, rows


def contract(subscripts: str, *operands: np.ndarray) -> np.ndarray:
    """np.einsum with a cached greedy path, chunked along the largest axis when an intermediate
    would exceed MAX_INTERMEDIATE elements."""
    key = (subscripts,) + tuple(o.shape for o in operands)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(subscripts, operands)
        if len(_PLANS) > PLAN_CACHE_SIZE:
            _PLANS.popitem(last=False)
    else:
        _PLANS.move_to_end(key)
    path, letter, rows = plan
    if path == "direct":
        return np.einsum(subscripts, *operands)
    if letter is None:
        return np.einsum(subscripts, *operands, optimize=path)
    inputs, output = subscripts.split("->")
    inputs = inputs.split(",")
    axes = [s.index(letter) if letter in s else None for s in inputs]
    n = next(o.shape[a] for o, a in zip(operands, axes) if a is not None)
    pieces, total = [], None
    for start in range(0, n, rows):
        part = [o if a is None else o[(slice(None),) * a + (slice(start, start + rows),)]
                for o, a in zip(operands, axes)]
        r = np.einsum(subscripts, *part, optimize=path)
        if letter in output:
            pieces.append(r)
        else:
            total = r if total is None else total + r
    return np.concatenate(pieces, axis=output.index(letter)) if letter in output else total


def contract_to(inputs: list[tuple[np.ndarray, str]], output: str, shape: tuple[int, ...]) -> np.ndarray:
    """Contract ``inputs`` to the letters ``output``; letters found in no input are broadcast.

    ``shape`` is the full output shape (used for the letters that no input carries).
    """
    present = set("".join(s for _, s in inputs))
    kept = "".join(ch for ch in output if ch in present)
    if not inputs:
        return np.ones(shape)
    arrays = [a for a, _ in inputs]
    subs = ",".join(s for _, s in inputs) + "->" + kept
    out = contract(subs, *arrays)
    if kept != output:
        expand = tuple(i for i, ch in enumerate(output) if ch not in present)
        out = np.expand_dims(out, expand)
        out = np.broadcast_to(out, shape)
    return out
