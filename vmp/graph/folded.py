"""Messages of an observed child's factor through one matrix product over its statistics.

Every term of a factor is linear in each operand (Winn & Bishop eq. (5)); the partial derivative
of term t with respect to an operand over the child's plate n (a gate's E[z_nk]) splits into the
operands over n, all read from the child (a statistic s_t(x_n): 1, x_a, or x_a x_b of one
array), and the operands off n, contracted to G_t (its other output letters k and s_t's event
letters):

    m_nk = sum_t c_t <s_t(x_n), G_t[k]> = [s_1(x_n), s_2(x_n), ...] @ [c_1 G_1; c_2 G_2; ...].

For an observed exponential-family child this is eta(parents)^T u(x) - A(parents) with u(x)
stacked once: the Gaussian child of a mixture reads the D(D+1)/2 unique pairs x_i x_j (the
weight 2 of an off-diagonal pair, G_ij + G_ji, is folded into the stacked coefficients), x and
1, so a message to z is one product of an N x (D(D+1)/2 + D + 1) table by a
(D(D+1)/2 + D + 1) x K matrix (:func:`product`). The parents' messages read the same statistics
summed over n against E[z] (sum_n r_nk x_n x_n^T, sum_n r_nk x_n, sum_n r_nk): one product of
the transposed table by E[z] gives all of them (:func:`reduction`).

The table is formed CHUNK elements at a time from the data with its rows last (kept: D x N, the
size of x), in cache, in one buffer that every chunk reuses (``Columns``: no fresh pages per
sweep), never stored whole: 8 bytes x N x 45 at D = 8 would add 36 MB to the mixture's peak,
and its product from memory measured no faster than from cache. The N x K
message is written by columns (Fortran order: each chunk's K x rows product lands in place).

These are the numerics; the strategy that uses them and owns their caches (``Columns``,
``Stack``) is ``strategies/folding.py``.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..factors.terms import DIRECT, PLANS, PlanCache, contract_to
from .leaves import IndicatorLeaf, NodeLeaf

#: elements of a chunk of the statistics table (the table chunk and its product stay in cache)
CHUNK = 2**16
#: messages of at most this many elements go term by term (small models keep their bits)
MIN_SIZE = DIRECT


@dataclass(frozen=True)
class Statistic:
    """s(x) over the child's plate: () ones, (a,) the array's event axes, (a, b) the unique
    pairs x_a x_b of one array with one event axis."""

    key: tuple  # (id of the leaf, component, kind) or ("one",)
    kind: str  # "one", "raw", "pairs"
    letters: str  # the event letters G carries for it

    def width(self, array: np.ndarray | None, n_lead: int) -> int:
        if self.kind == "one":
            return 1
        d = int(np.prod(array.shape[n_lead:]))
        return d * (d + 1) // 2 if self.kind == "pairs" else d


class Split(NamedTuple):
    """A partial derivative as <s(x_n), G>: the statistic, the data operand (None for ones),
    the operands off the child's plate that form G."""

    statistic: Statistic
    data: object
    others: list


class FoldedTerm(NamedTuple):
    """c_t <s_t(x_n), G_t[k]>: the coefficient, the split, G's output letters off the plate."""

    coef: float
    split: Split
    output: str


class Columns:
    """Where the statistics table is formed from and in: x (rows first) as a C-ordered event x
    rows array, kept for the last array read (compared by identity through a weak reference: new
    data are new arrays; one entry), and the buffer of at most CHUNK elements that every chunk
    of the table is written in (grown to the largest chunk asked for; a chunk wider than CHUNK,
    one row of more than CHUNK statistics, is a fresh array)."""

    def __init__(self):
        self.held: tuple = (None, None)
        self.buffer = np.empty(0)

    def table(self, width: int, rows: int) -> np.ndarray:
        """A width x rows array to write a chunk of the table in (its values are undefined)."""
        size = width * rows
        if size > CHUNK:
            return np.empty((width, rows))
        if self.buffer.size < size:
            self.buffer = np.empty(size)
        return self.buffer[:size].reshape(width, rows)

    def of(self, x: np.ndarray, n: int) -> np.ndarray:
        ref, xt = self.held
        if ref is not None and ref() is x:
            return xt
        xt = np.ascontiguousarray(x.reshape(n, -1).T)
        try:
            self.held = (weakref.ref(x), xt)
        except TypeError:
            pass
        return xt


class Stack(NamedTuple):
    """V = table^T P of one data array x and its partners P (compared by identity)."""

    x: weakref.ref
    rest: str  # the partners' letters off the child's plate
    partners: list  # weak references
    v: np.ndarray  # rows: the pairs if read, x, 1
    tail: tuple  # the partners' shape off the child's plate

    def holds(self, x: np.ndarray, rest: str, partners: list) -> bool:
        return (self.x() is x and self.rest == rest and len(self.partners) == len(partners)
                and all(r() is a for r, (a, _) in zip(self.partners, partners)))


class DataRead(NamedTuple):
    """The child's own moment ``x`` (rows first) and whether some term reads it twice."""

    key: tuple
    x: np.ndarray
    pairs: bool


def applies(leaf, shapes: list) -> bool:
    """Whether messages to ``leaf`` (a node's own moments) may be folded."""
    return type(leaf) in (NodeLeaf, IndicatorLeaf) and max(math.prod(s) for s in shapes) > MIN_SIZE


def worth(terms: list[FoldedTerm]) -> bool:
    """At least two partial derivatives, one of them reading the child (a lone term, or terms
    off the child's plate only, keep their broadcast form)."""
    return len(terms) > 1 and any(t.split.data is not None for t in terms)


def split(rest, output: str, child, child_letters: str) -> Split | None:
    """The ``Split`` of one partial derivative whose output starts with the child's letters;
    None where it does not take this form (an operand over the child's plate that is not the
    child's own moments, an event letter kept in the output, three data operands, ...)."""
    if not child_letters or not output.startswith(child_letters):
        return None
    plate = set(child_letters)
    data, others = [], []
    for o in rest:
        if plate & set(o.letters):
            if (type(o.leaf) is not NodeLeaf or o.leaf.node is not child
                    or not o.letters.startswith(child_letters) or plate & set(o.letters[len(child_letters):])):
                return None
            data.append(o)
        else:
            others.append(o)
    events = [o.letters[len(child_letters):] for o in data]
    if any(ch in output for e in events for ch in e):
        return None
    if not data:
        return Split(Statistic(("one",), "one", ""), None, others)
    if len(data) == 1:
        return Split(Statistic((id(data[0].leaf), data[0].comp, "raw"), "raw", events[0]), data[0], others)
    a, b = data
    if (len(data) == 2 and a.leaf is b.leaf and a.comp == b.comp and len(events[0]) == len(events[1]) == 1
            and events[0] != events[1]):
        return Split(Statistic((id(a.leaf), a.comp, "pairs"), "pairs", events[0] + events[1]), a, others)
    return None


def pack(g: np.ndarray) -> np.ndarray:
    """G over (..., a, b) -> (..., pairs i <= j): G_ii, and G_ij + G_ji for i < j (the pair
    x_i x_j stands for both x_i x_j and x_j x_i)."""
    d = g.shape[-1]
    iu, ju = np.triu_indices(d)
    return np.where(iu == ju, g[..., iu, ju], g[..., iu, ju] + g[..., ju, iu])


def _table(stats: list, columns: list, start: int, stop: int, out: np.ndarray) -> np.ndarray:
    """The statistics of rows start:stop stacked on the leading axis of ``out`` (width x rows);
    ``columns``: each statistic's array with the rows last (event x rows), or None."""
    t = out[:, :stop - start]
    at = 0
    for s, xt in zip(stats, columns):
        if s.kind == "one":
            t[at] = 1.0
            at += 1
            continue
        xt = xt[:, start:stop]
        d = xt.shape[0]
        if s.kind == "raw":
            t[at:at + d] = xt
            at += d
            continue
        for i in range(d):
            np.multiply(xt[i], xt[i:], out=t[at:at + d - i])
            at += d - i
    return t


def _stacked(terms: list[FoldedTerm], stats: dict, n_lead: int, tail: tuple, ctx, plate_of,
             plans: PlanCache) -> np.ndarray:
    """[c_1 G_1; c_2 G_2; ...] by statistic (width x prod(tail)), off-diagonal pairs packed."""
    widths = {k: s.width(x, n_lead) for k, (s, x) in stats.items()}
    offsets = dict(zip(widths, np.cumsum([0] + list(widths.values())[:-1])))
    g = np.zeros((sum(widths.values()), int(np.prod(tail))))
    for t in terms:
        stat = t.split.statistic
        x = stats[stat.key][1]
        ev_shape = () if x is None else x.shape[n_lead:]
        if stat.kind == "pairs":
            ev_shape = ev_shape * 2
        inputs = [(o.value(ctx, plate_of), o.letters) for o in t.split.others]
        gt = contract_to(inputs, t.output + stat.letters, tail + tuple(ev_shape), plans) if inputs else \
            np.ones(tail + tuple(ev_shape))
        gt = t.coef * gt.reshape(int(np.prod(tail)), *ev_shape)
        if stat.kind == "pairs":
            gt = pack(gt)
        gt = gt.reshape(gt.shape[0], -1).T
        at = offsets[stat.key]
        g[at:at + gt.shape[0]] += gt
    return g


def product(terms: list[FoldedTerm], n_lead: int, weight, ctx, plate_of, shape: tuple, columns: Columns,
            plans: PlanCache = PLANS) -> np.ndarray:
    """sum over ``terms`` of c_t <s_t(x_n), G_t[k]>, shaped ``shape`` (the child's plate axes
    first), times ``weight`` over the child's elements (None: 1)."""
    stats: dict = {}
    for t in terms:
        data = t.split.data
        value = None if data is None else data.value(ctx, plate_of)
        stats.setdefault(t.split.statistic.key, (t.split.statistic, value))
    lead, tail = shape[:n_lead], tuple(shape[n_lead:])
    g = _stacked(terms, stats, n_lead, tail, ctx, plate_of, plans)
    n = int(np.prod(lead))
    kinds = [s for s, _ in stats.values()]
    cols = [None if x is None else columns.of(x, n) for _, x in stats.values()]
    rows = max(1, min(n, CHUNK // max(g.shape[0], 1)))
    table = columns.table(g.shape[0], rows)
    gt = np.ascontiguousarray(g.T)
    out = np.empty((n, g.shape[1]), order="F")
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        np.matmul(gt, _table(kinds, cols, start, stop, table), out=out.T[:, start:stop])
    if weight is not None:
        out *= np.broadcast_to(weight, lead).reshape(n, 1)
    if len(lead) == 1:  # n x 1 for a message over the child's plate only (a per-point scale's)
        return out if tail else out.reshape(shape)
    return np.ascontiguousarray(out).reshape(shape)


def reads(terms: list, child) -> dict:
    """(leaf, comp) of the child's own moments with one event axis -> whether some term reads it
    twice (x_a x_b: the stacked reduction then carries the pairs)."""
    out: dict = {}
    for t in terms:
        mine = [o for o in t.operands if type(o.leaf) is NodeLeaf and o.leaf.node is child]
        for o in mine:
            key = (o.leaf, o.comp)
            out[key] = out.get(key, False) or sum(p.leaf is o.leaf and p.comp == o.comp for p in mine) == 2
    return {k: twice for k, twice in out.items() if len(k[0].node.event_shape) == 1}


def reduction(inputs: list, letters: str, child_letters: str, data: list[DataRead], stacks: dict,
              columns: Columns) -> np.ndarray | None:
    """sum over the child's plate n of ``inputs`` ((array, letters): statistics of the child's
    data ``data`` times partner operands P over n, a gate's E[z_nk] and the weights), to
    ``letters``: a block of the stacked reduction

        V = [x_i x_j (i <= j); x; 1] @ P    (sum_n r_nk x_n x_n^T, sum_n r_nk x_n, sum_n r_nk at once),

    kept in ``stacks`` per data read with the partners it read; None where the inputs do not
    take this form (then the caller contracts them)."""
    n_lead = len(child_letters)
    if any(not s.startswith(child_letters) for _, s in inputs):
        return None
    mine = [(a, s) for a, s in inputs if any(a is d.x for d in data)]
    partners = [(a, s) for a, s in inputs if not any(a is d.x for d in data)]
    events = [s[n_lead:] for _, s in mine]
    rest = "".join(dict.fromkeys(ch for _, s in partners for ch in s[n_lead:]))
    if (not partners or len(mine) > 2 or set(rest) - set(letters) or set(rest) & set(child_letters)
            or any(ch in rest or ch not in letters or ch in child_letters for e in events for ch in e)):
        return None
    if len(mine) == 2 and (mine[0][0] is not mine[1][0] or events[0] == events[1]):
        return None
    d = next(d for d in data if d.x is mine[0][0]) if mine else data[0]
    if len(mine) == 2 and not d.pairs:
        return None
    held = stacks.get(d.key)
    if held is None or not held.holds(d.x, rest, partners):
        if not mine:
            return None  # sum_n r_nk alone: not worth the table
        held = stacks[d.key] = _stack(d.x, d.pairs, partners, child_letters, rest, columns)
    return _block(held, d, mine, events, rest, letters)


def _block(held: Stack, d: DataRead, mine: list, events: list, rest: str, letters: str) -> np.ndarray:
    """The rows of V that ``mine`` (x twice, x once, or none) asks for, to ``letters``."""
    v, dim = held.v, d.x.shape[-1]
    tri = dim * (dim + 1) // 2 if d.pairs else 0
    if len(mine) == 2:
        iu, ju = np.triu_indices(dim)
        block = np.empty((dim, dim) + v.shape[1:])
        block[iu, ju] = v[:tri]
        block[ju, iu] = v[:tri]
        src = events[0] + events[1] + rest
    elif mine:
        block, src = v[tri:tri + dim], events[0] + rest
    else:
        block, src = v[tri + dim], rest
    block = block.reshape(block.shape[:len(src) - len(rest)] + held.tail)
    out = np.asarray(np.einsum(f"{src}->{letters}", block))
    return np.ascontiguousarray(out) if out.ndim else out  # sum_n E[c_n] alone is a number, not 1 x 1


def _stack(x: np.ndarray, pairs: bool, partners: list, child_letters: str, rest: str, columns: Columns) -> Stack:
    """V = table^T P (rows: the pairs if ``pairs``, x, 1) with what it was formed from."""
    n_lead = len(child_letters)
    sizes = {ch: m for a, s in partners for ch, m in zip(s, a.shape)}
    tail = tuple(sizes[ch] for ch in rest)
    n = int(np.prod(x.shape[:n_lead]))
    p = partners[0][0] if len(partners) == 1 and partners[0][1] == child_letters + rest else \
        contract_to(partners, child_letters + rest, x.shape[:n_lead] + tail)
    p = p.reshape(n, -1)
    d = x.shape[-1]
    stats = ([Statistic(("pairs",), "pairs", "")] if pairs else []) + [Statistic(("raw",), "raw", ""),
                                                                        Statistic(("one",), "one", "")]
    width = (d * (d + 1) // 2 if pairs else 0) + d + 1
    xt = columns.of(x, n)
    cols = [xt if s.kind != "one" else None for s in stats]
    rows = max(1, min(n, CHUNK // width))
    table = columns.table(width, rows)
    v = np.zeros((width, p.shape[1]))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        v += _table(stats, cols, start, stop, table) @ p[start:stop]
    return Stack(weakref.ref(x), rest, [weakref.ref(a) for a, _ in partners], v, tail)
