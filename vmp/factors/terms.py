"""Expected log-densities as sums of multilinear terms.

A conditional p(x | parents) is defined once, by its expected log-density

    E[log p(x | pa)] = sum_t  c_t * prod_{operands o of t} E[u_o]      (Winn & Bishop eq. (5))

where every operand is one moment component of one argument (the child or a parent role),
carrying einsum letters for its event axes. Because each term is linear in the moments of
every argument, the message to an argument is the partial derivative: the same term with that
operand removed. Messages and the ELBO therefore come from a single definition.
"""
from __future__ import annotations

import math
import string
from dataclasses import dataclass, field
from typing import NamedTuple

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


#: plans kept by the process's ``PlanCache`` (``PLANS``)
PLAN_CACHE_SIZE = 512
#: intermediates above this many elements (2 MB, about a core's share of cache) are avoided by
#: chunking the largest axis
MAX_INTERMEDIATE = 2**18
#: contractions whose whole index space is at most this many elements skip path planning
DIRECT = 2**15
#: arrays from this size on are not summed by np.vdot (threaded BLAS; :func:`inner_product`)
THREADED = 2**12


@dataclass(frozen=True)
class _Symmetric:
    """x_a x_b of one array x (the same operand twice, letters a and b), contracted over the
    D(D+1)/2 unique pairs i <= j only:

        sum_ab x_a x_b M_ab = sum_{i<=j} (x_i x_j) M'_ij,  M'_ij = M_ij + M_ji (i < j), M'_ii = M_ii,

    with a and b met elsewhere only in one operand M, or kept in the output, which is then
    computed on the pairs and mirrored. The table of pairs (D(D+1)/2 x rows, formed chunk by
    chunk) meets the rest in one matrix product, which einsum hands to BLAS."""

    x: int  # position of x among the operands; the copy at ``drop`` is dropped
    drop: int
    axis: int  # axis of a in x (b's in the copy)
    d: int
    mate: int | None  # position of M, packed; None: a and b are output letters
    mate_axes: tuple[int, int] = (0, 0)
    out_axes: tuple[int, ...] = ()  # (other output letters, a, b) -> the output's order
    subscripts: str = ""  # the contraction on packed operands (the copy left out)

    def table(self, x: np.ndarray) -> np.ndarray:
        """x_i x_j for i <= j on a leading pair axis (row i of the triangle, one product each)."""
        xt = np.ascontiguousarray(np.moveaxis(x, self.axis, 0))
        out = np.empty((self.d * (self.d + 1) // 2,) + xt.shape[1:], dtype=xt.dtype)
        start = 0
        for i in range(self.d):
            np.multiply(xt[i], xt[i:], out=out[start:start + self.d - i])
            start += self.d - i
        return out

    def pack(self, m: np.ndarray) -> np.ndarray:
        iu, ju = np.triu_indices(self.d)
        m = np.moveaxis(m, self.mate_axes, (-2, -1))
        return np.where(iu == ju, m[..., iu, ju], m[..., iu, ju] + m[..., ju, iu])

    def operands(self, operands, mate: np.ndarray | None = None) -> list:
        """The packed operands; ``mate``: M already packed."""
        out = []
        for k, o in enumerate(operands):
            if k == self.x:
                out.append(self.table(o))
            elif k == self.mate:
                out.append(self.pack(o) if mate is None else mate)
            elif k != self.drop:
                out.append(o)
        return out

    def shapes(self, shapes) -> list:
        t = self.d * (self.d + 1) // 2
        out = []
        for k, sh in enumerate(shapes):
            if k == self.x:
                out.append((t,) + sh[:self.axis] + sh[self.axis + 1:])
            elif k == self.mate:
                out.append(tuple(n for i, n in enumerate(sh) if i not in self.mate_axes) + (t,))
            elif k != self.drop:
                out.append(sh)
        return out

    def unpack(self, r: np.ndarray) -> np.ndarray:
        iu, ju = np.triu_indices(self.d)
        full = np.empty(r.shape[:-1] + (self.d, self.d), dtype=r.dtype)
        full[..., iu, ju] = r
        full[..., ju, iu] = r
        return full.transpose(self.out_axes)


def _symmetric(subscripts: str, operands) -> _Symmetric | None:
    """The rewrite of _Symmetric, if two operands are one array with letters equal but for
    a <-> b, and a and b meet elsewhere only together: in the output, or in one operand M
    that shares no other letter with x (so that packing M is paid once for all of x's rows)."""
    inputs, output = subscripts.split("->")
    inputs = inputs.split(",")
    free = next(ch for ch in string.ascii_letters if ch not in subscripts)
    for i in range(len(inputs)):
        for j in range(i + 1, len(inputs)):
            si, sj = inputs[i], inputs[j]
            if operands[i] is not operands[j] or len(si) != len(sj):
                continue
            diff = [p for p in range(len(si)) if si[p] != sj[p]]
            if len(diff) != 1:
                continue
            p = diff[0]
            a, b = si[p], sj[p]
            if si.count(a) != 1 or b in si or a in sj:
                continue
            others = [k for k, s in enumerate(inputs) if k not in (i, j) and (a in s or b in s)]
            packed = {i: free + si.replace(a, "")}
            common = dict(x=i, drop=j, axis=p, d=operands[i].shape[p])
            if not others and a in output and b in output:
                kept = output.replace(a, "").replace(b, "")
                sym = dict(mate=None, out_axes=tuple((kept + a + b).index(ch) for ch in output),
                           out=kept + free)
            elif len(others) == 1 and a not in output and b not in output:
                m = others[0]
                sm = inputs[m]
                if sm.count(a) != 1 or sm.count(b) != 1 or set(sm) & set(si.replace(a, "")):
                    continue  # a mate sharing x's rows is packed as often as it is used
                packed[m] = sm.replace(a, "").replace(b, "") + free
                sym = dict(mate=m, mate_axes=(sm.index(a), sm.index(b)), out=output)
            else:
                continue
            out = sym.pop("out")
            subs = ",".join(packed.get(k, s) for k, s in enumerate(inputs) if k != j) + "->" + out
            return _Symmetric(**common, **sym, subscripts=subs)
    return None


class Plan(NamedTuple):
    """How ``contract`` runs one contraction: the einsum path ("direct": plain einsum), the
    letter to chunk along and the rows per chunk (None: whole), the symmetric-pair rewrite."""

    path: object
    letter: str | None = None
    rows: int | None = None
    symmetric: _Symmetric | None = None


def plan(subscripts: str, operands, max_intermediate: int = MAX_INTERMEDIATE) -> Plan:
    """Contraction path (greedy, BLAS-friendly), the letter to chunk along when an
    intermediate would exceed ``max_intermediate`` elements (so that memory stays bounded: no
    N x K x D temporaries), and the symmetric-pair rewrite (_Symmetric) when one applies. The
    path and the chunking are those of the rewritten contraction, whose table of pairs counts
    as an intermediate."""
    inputs_, output_ = subscripts.split("->")
    dims = {}
    for letters, op in zip(inputs_.split(","), operands):
        dims.update(zip(letters, op.shape))
    if float(np.prod([float(v) for v in dims.values()])) <= DIRECT and len(operands) <= 4:
        return Plan("direct")
    sym = _symmetric(subscripts, operands)
    largest_operand = 0.0
    if sym is not None:
        subscripts = sym.subscripts
        shapes = sym.shapes([o.shape for o in operands])
        operands = [np.broadcast_to(np.empty(()), sh) for sh in shapes]
        largest_operand = float(np.prod(shapes[sym.x]))
    path, info = np.einsum_path(subscripts, *operands, optimize=("greedy", 1e15))
    largest = max(float(info.split("Largest intermediate:")[1].split()[0]), largest_operand)
    inputs, output = subscripts.split("->")
    inputs = inputs.split(",")
    sizes = {}
    for letters, op in zip(inputs, operands):
        sizes.update(zip(letters, op.shape))
    if largest <= max_intermediate or not sizes:
        return Plan(path, symmetric=sym)
    letter = max((ch for ch in sizes if ch in inputs_), key=sizes.get)
    n = sizes[letter]
    rows = max(1, int(n * max_intermediate / largest))
    if rows >= n:
        return Plan(path, symmetric=sym)
    sliced = [o[(slice(None),) * s.index(letter) + (slice(0, rows),)] if letter in s else o
              for s, o in zip(inputs, operands)]
    chunk_path = np.einsum_path(subscripts, *sliced, optimize=("greedy", 1e15))[0]
    return Plan(chunk_path, letter, rows, sym)


class PlanCache:
    """Contraction plans (``plan``) by key (subscripts, shapes, which operands are one array),
    in order of last use: the least recently used is dropped beyond ``size`` (a model has a few
    dozen recurring contractions; stochastic steps add one set per distinct minibatch shape);
    ``size`` 0 keeps none (each contraction is planned afresh). ``contract_to``'s routes
    (structure alone: the operands' letters and the output's) are kept beside them, up to
    8 x ``size`` (then all are dropped). Plans depend on the key alone, so nothing invalidates
    them; ``max_intermediate`` is the chunking threshold of the plans it makes."""

    def __init__(self, size: int = PLAN_CACHE_SIZE, max_intermediate: int = MAX_INTERMEDIATE):
        self.size, self.max_intermediate = size, max_intermediate
        self.plans: dict = {}
        self.routes: dict = {}

    def plan(self, subscripts: str, operands) -> Plan:
        key = (subscripts, *[o.shape for o in operands])
        if len(operands) > 1 and len(set(map(id, operands))) < len(operands):
            key += tuple((i, j) for i in range(len(operands)) for j in range(i + 1, len(operands))
                         if operands[i] is operands[j])
        held = self.plans.pop(key, None)
        if held is None:
            held = plan(subscripts, operands, self.max_intermediate)
        if self.size:
            self.plans[key] = held
            if len(self.plans) > self.size:
                del self.plans[next(iter(self.plans))]
        return held

    def route(self, letters: tuple[str, ...], output: str) -> tuple:
        key = (letters, output)
        held = self.routes.get(key)
        if held is None:
            held = _route(letters, output)
            if self.size:
                if len(self.routes) >= 8 * self.size:
                    self.routes.clear()
                self.routes[key] = held
        return held


#: the process's plans (every contraction that is not given its own cache)
PLANS = PlanCache()


def contract(subscripts: str, *operands: np.ndarray, plans: PlanCache = PLANS) -> np.ndarray:
    """np.einsum with a greedy path (kept in ``plans``), chunked along the largest axis when an
    intermediate would exceed the plans' ``max_intermediate`` elements; a product x_a x_b of one
    array (the same object passed twice) goes through its unique pairs (_Symmetric)."""
    p = plans.plan(subscripts, operands)
    if p.path == "direct":
        return np.einsum(subscripts, *operands)
    sym, letter = p.symmetric, p.letter
    if sym is None:
        def run(part):
            return _run_path(subscripts, part, p.path)
        out = subscripts.split("->")[1]
    else:
        per_chunk = sym.mate is None or (letter is not None and letter in subscripts.split("->")[0].split(",")[sym.mate])
        mate = None if per_chunk else sym.pack(operands[sym.mate])

        def run(part):
            return _run_path(sym.subscripts, sym.operands(part, mate), p.path)
        out = sym.subscripts.split("->")[1]
    r = run(operands) if letter is None else _chunked(subscripts, operands, letter, p.rows, run, out)
    return r if sym is None or sym.mate is not None else sym.unpack(r)


def _run_path(subscripts: str, operands, path) -> np.ndarray:
    """np.einsum(subscripts, *operands, optimize=path), each pairwise step that is a plain matrix
    product (no letter repeated in an operand, none kept in both, none summed from one alone)
    done by np.matmul on 2-D views with the result in the order the next step or the output
    wants (einsum's own pairwise step may transpose the result or copy an operand)."""
    inputs, output = subscripts.split("->")
    ops = list(zip(operands, inputs.split(",")))
    for step in path[1:]:
        picked = [ops[k] for k in step]
        for k in sorted(step, reverse=True):
            del ops[k]
        needed = set(output).union(*(letters for _, letters in ops))
        letters = "".join(dict.fromkeys(ch for _, sl in picked for ch in sl if ch in needed))
        if not ops and set(letters) == set(output):
            letters = output
        product = _matmul(*picked[0], *picked[1], letters) if len(picked) == 2 else None
        if product is None:
            product = np.einsum(",".join(sl for _, sl in picked) + "->" + letters, *[a for a, _ in picked])
        ops.append((product, letters))
    (result, letters), = ops
    return result if letters == output else np.einsum(letters + "->" + output, result)


def _matmul(a: np.ndarray, sa: str, b: np.ndarray, sb: str, out: str) -> np.ndarray | None:
    """The contraction sa,sb->out as one matrix product, or None where it is not one."""
    if len(set(sa)) != len(sa) or len(set(sb)) != len(sb) or len(set(out)) != len(out):
        return None
    summed = [ch for ch in sa if ch in sb and ch not in out]
    ka = [ch for ch in sa if ch not in sb]
    kb = [ch for ch in sb if ch not in sa]
    if not summed or any(ch not in out for ch in ka + kb) or len(ka) + len(kb) != len(out):
        return None
    if out == "".join(kb + ka):
        a, sa, b, sb, ka, kb = b, sb, a, sa, kb, ka
    elif out != "".join(ka + kb):
        return None
    if not ka and not kb:  # a full contraction to a number: einsum, not threaded BLAS (_dot)
        return np.asarray(_dot(a.transpose([sa.index(ch) for ch in summed]),
                               b.transpose([sb.index(ch) for ch in summed])))
    size = {ch: n for ch, n in zip(sa + sb, a.shape + b.shape)}
    n_sum = int(np.prod([size[ch] for ch in summed]))
    left = a.transpose([sa.index(ch) for ch in ka + summed]).reshape(-1, n_sum)
    right = b.transpose([sb.index(ch) for ch in summed + kb]).reshape(n_sum, -1)
    return np.matmul(left, right).reshape([size[ch] for ch in out])


def _chunked(subscripts: str, operands, letter: str, rows: int, run, output: str) -> np.ndarray:
    """run() over slices of ``rows`` along ``letter``; the pieces written in place along it when
    it is an output letter (of ``output``), summed otherwise."""
    inputs = subscripts.split("->")[0].split(",")
    axes = [s.index(letter) if letter in s else None for s in inputs]
    n = next(o.shape[a] for o, a in zip(operands, axes) if a is not None)
    total = None
    for start in range(0, n, rows):
        part = [o if a is None else o[(slice(None),) * a + (slice(start, start + rows),)]
                for o, a in zip(operands, axes)]
        r = run(part)
        if letter not in output:
            total = r if total is None else total + r
            continue
        axis = output.index(letter)
        if total is None:
            total = np.empty(r.shape[:axis] + (n,) + r.shape[axis + 1:], dtype=r.dtype)
        total[(slice(None),) * axis + (slice(start, start + r.shape[axis]),)] = r
    return total


def contract_to(inputs: list[tuple[np.ndarray, str]], output: str, shape: tuple[int, ...],
                plans: PlanCache = PLANS) -> np.ndarray:
    """Contract ``inputs`` to the letters ``output``; letters found in no input are broadcast.

    ``shape`` is the full output shape (used for the letters that no input carries).
    """
    if not inputs:
        return np.broadcast_to(1.0, shape)
    subs, case, expand = plans.route(tuple([s for _, s in inputs]), output)
    arrays = [a for a, _ in inputs]
    if case == 1:
        # nothing to contract (a prior's broadcast precision stays a broadcast): a view, as
        # einsum's, so that no caller sums into the operand (a view does not own its data)
        out = np.asarray(arrays[0]).view()
    elif case == 2 and np.ndim(arrays[1]) == 0:
        out = arrays[0] * arrays[1]  # an array times a scalar (a message times E[tau]): one pass
    else:
        out = contract(subs, *arrays, plans=plans)
    if expand is not None:
        out = np.expand_dims(out, expand)
        out = np.broadcast_to(out, shape)
    return out


def _route(letters: tuple[str, ...], output: str) -> tuple:
    """``contract_to``'s structure, from the operands' letters and the output's: the einsum
    subscripts, the case (1: one operand already in the output's letters, 2: an array in them
    times a 0-d operand where it is one, 0: a contraction) and the output axes no operand carries
    (None if none)."""
    present = set("".join(letters))
    kept = output if present.issuperset(output) else "".join(ch for ch in output if ch in present)
    case = 0
    if len(letters) == 1 and letters[0] == kept:
        case = 1
    elif len(letters) == 2 and letters[0] == kept and letters[1] == "":
        case = 2
    expand = None if kept == output else tuple(i for i, ch in enumerate(output) if ch not in present)
    return ",".join(letters) + "->" + kept, case, expand


def compact(a: np.ndarray) -> np.ndarray:
    """``a`` without its broadcast axes (stride 0), kept as length 1: the array it was
    broadcast from."""
    return a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(a.strides, a.shape))]


def scale(coef: float, a: np.ndarray) -> np.ndarray:
    """coef * a, a broadcast array scaled at its own size (and broadcast again)."""
    if coef == 1.0 or a.size <= DIRECT:
        return a if coef == 1.0 else coef * a
    small = compact(a)
    return coef * a if small.size == a.size else np.broadcast_to(coef * small, a.shape)


def _unit_of(full: np.ndarray, small: np.ndarray) -> np.ndarray | None:
    """The block of ``small`` (broadcast over leading axes only) that repeats along ``full``'s
    elements (C-ordered), flat; None where the shapes do not allow."""
    tail = small.shape[next((i for i, n in enumerate(small.shape) if n != 1), small.ndim):]
    if (not full.flags.c_contiguous or small.ndim != full.ndim or math.prod(tail) == 0
            or full.shape[full.ndim - len(tail):] != tail):
        return None
    return small.reshape(-1)


#: a broadcast add (``plus``) runs over rows of about this many elements: numpy's elementwise
#: loop is called once per row (9,724 x 5 x 5 plus one 5 x 5: rows of 50 elements 115 us, of
#: 6,000 to 16,000 elements 55 us; rows of 1,000 to 4,000 read 70 to 85 us)
ADD_ROW = 8192


def _add_rows(full: np.ndarray, unit: np.ndarray, out: np.ndarray) -> None:
    """out = full + unit repeated (flat arrays; out may be full): as many whole rows of
    ADD_ROW // unit.size units as fit, added to the unit tiled, then the rest a unit at a time.
    Each element is the same sum as in the broadcast add."""
    w = unit.size
    reps = max(1, ADD_ROW // w)
    n = full.size // (w * reps) * (w * reps)
    if n:
        np.add(full[:n].reshape(-1, w * reps), np.tile(unit, reps), out=out[:n].reshape(-1, w * reps))
    if n < full.size:
        np.add(full[n:].reshape(-1, w), unit, out=out[n:].reshape(-1, w))


def plus(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """a + b of one shape (into ``out``, which may be a or b); where one is a broadcast of a
    smaller array and the other is not, it is added long rows at a time (_add_rows)."""
    if a.shape == b.shape and a.size > DIRECT and (out is None or out.flags.c_contiguous):
        for full, other in ((a, b), (b, a)):
            small = compact(other)
            if small.size < other.size and compact(full).size == full.size:
                unit = _unit_of(full, small)
                if unit is not None:
                    target = np.empty(full.shape, dtype=np.result_type(a, b)) if out is None else out
                    _add_rows(full.reshape(-1), unit, target.reshape(-1))
                    return target
    return np.add(a, b, out=out)


def accumulate(grads: list) -> np.ndarray:
    """sum_i g_i over partial derivatives of one shape (their coefficients already inside the
    contractions): the full-size ones added in order into the first that owns its memory (a
    fresh contraction result, reused as the sum; others are never written), the broadcast ones
    summed at their own size and added in one pass (only broadcast ones: their sum, broadcast).
    At most DIRECT elements: a new array, the plain sum."""
    if grads[0].size <= DIRECT:
        out = grads[0] + 0.0 if len(grads) == 1 else grads[0] + grads[1]
        for g in grads[2:]:
            out += g
        return out
    full = [g for g in grads if compact(g).size == g.size]
    small = None
    for g in grads:
        if compact(g).size != g.size:
            small = compact(g) if small is None else small + compact(g)
    if not full:
        return np.broadcast_to(small, grads[0].shape)
    own = next((k for k, g in enumerate(full) if g.flags.owndata and g.flags.writeable and g.ndim), None)
    if own is None:
        out, rest = full[0] + 0.0, full[1:]
    else:
        out, rest = full[own], full[:own] + full[own + 1:]
    for g in rest:
        out += g
    if small is not None:
        plus(out, np.broadcast_to(small, out.shape), out=out)
    return out


def inner_product(grad: np.ndarray, value: np.ndarray) -> float:
    """<grad, value> over all elements, grad broadcast to value's shape. A broadcast grad meets
    value summed over its broadcast axes instead of a broadcast copy. Arrays of at most DIRECT
    elements take the plain product (so that small models keep bit-identical bounds), by einsum
    from THREADED elements on (:func:`_dot`: np.vdot of q(beta)'s 10 x 2,000 terms took 12 ms
    with BLAS threads waiting on a busy core)."""
    full = grad if np.shape(grad) == value.shape else np.broadcast_to(grad, value.shape)
    if value.size <= DIRECT:
        return float(np.vdot(full, value)) if value.size < THREADED else _dot(full, value)
    small = compact(full)
    if small.size == full.size:
        return _dot(full, value)
    axes = tuple(i for i, (a, b) in enumerate(zip(small.shape, full.shape)) if a != b)
    if axes == tuple(range(len(axes))) and value.flags.c_contiguous:
        rows = value.reshape(-1, small.size)  # leading broadcast axes: one matrix-vector product
        return float(np.einsum("ij,j->", rows, small.reshape(-1)))  # not BLAS: see _dot
    return _dot(small, value.sum(axis=axes, keepdims=True))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum(a * b) by einsum over contiguous vectors, not BLAS: np.vdot and the threaded BLAS dot
    of 10^5 elements took 10-30 ms on the shared test machine (BLAS threads waiting on a busy
    core), einsum 0.05 ms."""
    a, b = flat_pair(a, b)
    return float(np.einsum("i,i->", a, b))


def flat_pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a and b (one shape) as vectors with their elements in the same order: in memory order
    without a copy when both are C- or both Fortran-ordered (a q over N x K written by columns)."""
    if a.flags.f_contiguous and b.flags.f_contiguous and not (a.flags.c_contiguous and b.flags.c_contiguous):
        return a.ravel(order="F"), b.ravel(order="F")
    return np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
