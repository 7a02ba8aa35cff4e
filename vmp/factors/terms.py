"""Expected log-densities as sums of multilinear terms.

A conditional p(x | parents) is defined once, by its expected log-density

    E[log p(x | pa)] = sum_t  c_t * prod_{operands o of t} E[u_o]      (Winn & Bishop eq. (5))

where every operand is one moment component of one argument (the child or a parent role),
carrying einsum letters for its event axes. Because each term is linear in the moments of
every argument, the message to an argument is the partial derivative: the same term with that
operand removed. Messages and the ELBO therefore come from a single definition.
"""
from __future__ import annotations

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


_PATHS: dict = {}


def contract(subscripts: str, *operands: np.ndarray) -> np.ndarray:
    """np.einsum with a contraction path cached per (subscripts, shapes)."""
    key = (subscripts,) + tuple(o.shape for o in operands)
    path = _PATHS.get(key)
    if path is None:
        if len(operands) <= 2:
            path = False
        else:
            path = np.einsum_path(subscripts, *operands, optimize="greedy")[0]
        _PATHS[key] = path
    return np.einsum(subscripts, *operands, optimize=path)


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
