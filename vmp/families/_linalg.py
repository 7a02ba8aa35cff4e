"""Batched linear algebra and special functions shared by the families.

Positive-definite matrices are factorized once, A = L L^T (Cholesky), and the inverse, the
log-determinant and solves come from L (Golub & Van Loan, Matrix Computations, 4th ed.,
algorithm 4.2.2 for L; A^-1 = L^-T L^-1 from the triangular inverse, section 3.1). A stack of
many small matrices is factorized by one column loop vectorized over the whole stack, with the
stack on the last, contiguous axis: each of the O(D) steps is one array operation over every
matrix, instead of one LAPACK call per matrix. Larger orders and short stacks go to LAPACK.
"""
from __future__ import annotations

import functools
import math
import weakref

import numpy as np
from scipy import special

#: the column loop serves stacks of at least VECTOR_BATCH matrices of order at most VECTOR_ORDER
#: and at most VECTOR_MAX elements in all; below, the per-matrix LAPACK call is cheaper, above,
#: the loop's passes over the stack leave the cache (benchmarks/bench_linalg.py measures both)
VECTOR_BATCH = 256
VECTOR_ORDER = 12
VECTOR_MAX = 2**22


def sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


#: symmetric matrices of at least this order go through a sparse product packed (pack_symmetric)
PACK_ORDER = 3


@functools.lru_cache(maxsize=None)
def _packing(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the upper triangle (i <= j) of a D x D matrix, and for each of the D^2
    flat positions its place among them."""
    i, j = np.triu_indices(d)
    where = np.empty((d, d), dtype=np.intp)
    where[i, j] = where[j, i] = np.arange(i.size)
    return i * d + j, where.reshape(-1)


def pack_symmetric(a: np.ndarray) -> np.ndarray:
    """(..., D, D) symmetric -> (..., D(D+1)/2), its upper triangle by rows, C-contiguous."""
    d = a.shape[-1]
    return np.take(a.reshape(a.shape[:-2] + (d * d,)), _packing(d)[0], axis=-1)


def unpack_symmetric(p: np.ndarray, d: int) -> np.ndarray:
    """The inverse of pack_symmetric: (..., D(D+1)/2) -> (..., D, D), exactly symmetric."""
    return np.take(p, _packing(d)[1], axis=-1).reshape(p.shape[:-1] + (d, d))


#: stacks of at least this many elements are checked for exact symmetry before sym() copies them
SYMMETRIC_CHECK = 2**15


def symmetric_part(a: np.ndarray) -> np.ndarray:
    """sym(a), or ``a`` itself when it is exactly symmetric (a message formed from symmetric
    moments is): the same numbers, without two stack-sized temporaries."""
    a = np.asarray(a)
    if a.size >= SYMMETRIC_CHECK and a.shape[-1] == a.shape[-2]:
        d = a.shape[-1]
        flat = a.reshape(a.shape[:-2] + (d * d,))
        i, j = np.tril_indices(d, -1)  # the entries below the diagonal against their mirrors
        if np.array_equal(np.take(flat, i * d + j, axis=-1), np.take(flat, j * d + i, axis=-1)):
            return a
    return sym(a)


#: how many arrays ``mark_symmetric`` keeps
EXACT_MEMO = 4
_exact: list = []


def mark_symmetric(a: np.ndarray) -> np.ndarray:
    """Record that ``a`` (plates + (D, D)) is exactly symmetric, so that ``factor`` reads one
    triangle of it. Kept only for stacks the column loop serves and that own their data, by
    weak reference (a mark keeps no array alive), made read-only while kept (as ``factor``
    does), so that the mark cannot outlive the values."""
    if isinstance(a, np.ndarray) and a.ndim >= 3 and a.flags.owndata and vectorized(a.shape):
        a.flags.writeable = False
        _exact.insert(0, weakref.ref(a))
        del _exact[EXACT_MEMO:]
    return a


def _marked(a: np.ndarray) -> bool:
    return any(m() is a for m in _exact) and not a.flags.writeable


def vectorized(shape: tuple[int, ...]) -> bool:
    """Does a stack of this shape (plates + (D, D)) go through the column loop."""
    d = shape[-1]
    n = math.prod(shape[:-2])
    return 0 < d <= VECTOR_ORDER and VECTOR_BATCH <= n and n * d * d <= VECTOR_MAX


#: a matrix broadcast over at least this many plate elements is applied by one BLAS product
SHARED_BLAS = VECTOR_BATCH


def matvec(m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """m x per plate element, m shaped plates + (D, D) and x plates + (D,) (broadcast against
    each other). When m is one matrix broadcast over at least SHARED_BLAS elements (stride 0: a
    prior with fixed hyperparameters over a plate), one BLAS product x M^T over the rows of x
    (einsum reads the stride-0 stack one element at a time; BLAS sums in its own order, so the
    last bits may differ from einsum's); otherwise einsum."""
    m, x = np.asarray(m), np.asarray(x)
    d = m.shape[-1]
    shape = np.broadcast_shapes(m.shape[:-1], x.shape)
    if all(st == 0 or n == 1 for st, n in zip(m.strides[:-2], m.shape[:-2])) \
            and math.prod(shape[:-1]) >= SHARED_BLAS:
        rows = np.broadcast_to(x, shape).reshape(-1, d)
        return (rows @ m[(0,) * (m.ndim - 2)].T).reshape(shape)
    return np.einsum("...ij,...j->...i", m, x)


def _lower_stack(a: np.ndarray, scale: float | None = None, exact: bool = False) -> np.ndarray:
    """The lower triangle of (plates..., D, D) laid out as (D, D, B), C-contiguous, a column at a
    time (the upper triangle is left unset: the column loop never reads it); with ``scale``,
    of scale * (a + a^T) / 2, which for ``a`` known to be exactly symmetric (``exact``) is
    scale * a, the same numbers from one triangle (a_ij + a_ij = 2 a_ij exactly)."""
    d = a.shape[-1]
    flat = a.reshape(-1, d, d)
    s = np.empty((d, d, flat.shape[0]))
    for j in range(d):
        if scale is None:
            s[j:, j] = flat[:, j:, j].T
        elif exact:
            np.multiply(flat[:, j:, j].T, scale, out=s[j:, j])
        else:
            np.add(flat[:, j:, j].T, flat[:, j, j:].T, out=s[j:, j])
            s[j:, j] *= 0.5 * scale
    return s


def _stack_first(t: np.ndarray, plates: tuple[int, ...]) -> np.ndarray:
    """(D, ..., B) -> plates + (D, ...)."""
    return np.moveaxis(t, -1, 0).reshape(plates + t.shape[:-1])


def _stack_last(b: np.ndarray, plates: tuple[int, ...], d: int) -> np.ndarray:
    """plates + (D,) -> (D, B), C-contiguous (vectors in the stack layout)."""
    return np.ascontiguousarray(np.broadcast_to(b, plates + (d,)).reshape(-1, d).T)


def _rows_first(t: np.ndarray, plates: tuple[int, ...]) -> np.ndarray:
    """(D, B) -> plates + (D,), C-contiguous, written a column at a time (numpy's copy of the
    whole transposition loops over rows of D elements: 48 against 26 us at B = 9,724, D = 5)."""
    out = np.empty((t.shape[1], t.shape[0]))
    for i in range(t.shape[0]):
        out[:, i] = t[i]
    return out.reshape(plates + (t.shape[0],))


def triangular(t: np.ndarray, b: np.ndarray, lower: bool, trans: bool = False) -> np.ndarray:
    """T^-1 b (T^-T b with ``trans``) for triangular T shaped plates + (D, D) and b shaped
    plates + (D, K), by substitution (Golub & Van Loan algorithms 3.1.1 and 3.1.2): one matrix by
    LAPACK's trtrs, a stack by D steps each over the whole stack."""
    if t.ndim == 2:
        from scipy.linalg import solve_triangular  # when asked for: scipy.linalg is slow to import

        return solve_triangular(t, b, lower=lower, trans=1 if trans else 0)
    if trans:
        t, lower = np.swapaxes(t, -1, -2), not lower
    d = t.shape[-1]
    x = np.array(np.broadcast_to(b, np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]), dtype=float)
    for j in (range(d) if lower else range(d - 1, -1, -1)):
        done = slice(0, j) if lower else slice(j + 1, d)
        if j != (0 if lower else d - 1):
            x[..., j, :] -= np.einsum("...k,...kn->...n", t[..., j, done], x[..., done, :])
        x[..., j, :] /= t[..., j, j, None]
    return x


def _equilibrated(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e, E A E) with e = diag(A)^-1/2 (E = diag(e)), so that E A E has a unit diagonal (the
    scaling that minimizes the condition number of a positive-definite matrix up to a factor D,
    van der Sluis 1969): a precision whose coordinates differ in scale by orders of magnitude
    (an ARD prior, inputs of scale 1e8) is factorized as accurately as a well-scaled one. Where
    a diagonal entry is not positive and finite, e is 1 there (the factorization then fails as
    it would on A)."""
    diag = np.diagonal(a, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(np.isfinite(diag) & (diag > 0), 1.0 / np.sqrt(diag), 1.0)
    return e, e[..., :, None] * a * e[..., None, :]


class Cholesky:
    """A = L L^T for a stack of positive-definite matrices (plates + (D, D)), computed once.

    Only the lower triangle of ``a`` is read (as LAPACK's potrf). ``ok`` is, per plate element,
    whether the factorization succeeded (all pivots finite and positive). On the LAPACK path a
    failure raises ``numpy.linalg.LinAlgError``, as ``numpy.linalg.cholesky``. ``vectorize``
    forces a path (None: by VECTOR_BATCH and VECTOR_ORDER). With ``scale``, the matrix
    factorized is scale * sym(a), formed while the stack is laid out (the same numbers);
    ``exact`` says that ``a`` is exactly symmetric, so that one triangle is read for it.
    """

    def __init__(self, a: np.ndarray, vectorize: bool | None = None, scale: float | None = None,
                 exact: bool = False):
        a = np.asarray(a, dtype=float)
        self.plates, self.d = a.shape[:-2], a.shape[-1]
        self.vectorized = vectorized(a.shape) if vectorize is None else vectorize
        self.a = a if scale is None or self.vectorized else scale * sym(a)
        if self.vectorized:
            self._l = self._factor(_lower_stack(a, scale, exact))
            diag = np.diagonal(self._l).T  # (D, B)
            self._diag = diag
            self.ok = np.all(np.isfinite(diag) & (diag > 0), axis=0).reshape(self.plates)
        else:
            self._e, self._scaled = _equilibrated(self.a)
            self._l = np.linalg.cholesky(self._scaled)
            self.ok = np.ones(self.plates, dtype=bool)

    @staticmethod
    def _factor(s: np.ndarray) -> np.ndarray:
        """Left-looking Cholesky in place on the lower triangle of s (D, D, B): column j less
        the products of the columns already done, then scaled (no stack-sized temporaries)."""
        d = s.shape[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            for j in range(d):
                if j:
                    s[j:, j] -= np.einsum("ikb,kb->ib", s[j:, :j], s[j, :j])
                s[j:, j] /= np.sqrt(s[j, j])
        return s

    def _require_ok(self) -> None:
        if not np.all(self.ok):
            raise np.linalg.LinAlgError("Matrix is not positive definite")

    def logdet(self) -> np.ndarray:
        """log|A| = 2 sum_i log L_ii."""
        if self.vectorized:
            self._require_ok()
            return 2.0 * np.sum(np.log(self._diag), axis=0).reshape(self.plates)
        return 2.0 * np.sum(np.log(np.diagonal(self._l, axis1=-2, axis2=-1)), axis=-1) \
            - 2.0 * np.sum(np.log(self._e), axis=-1)

    def inv_quadratic(self, c: np.ndarray) -> np.ndarray:
        """c^T A^-1 c per vector c: ||L^-1 E c||^2 with E A E = L L^T, by a triangular solve
        (formed from A^-1, it would be the rounding of A^-1's entries times |c|^2, where the value
        may be smaller by the condition of A). One matrix: c shaped (..., D); a stack: c shaped
        plates + (K, D), K vectors per matrix, answered plates + (K,) (the column loop's stack
        from A^-1)."""
        c = np.asarray(c, dtype=float)
        if self.vectorized:
            return np.einsum("...ki,...ij,...kj->...k", c, self.inv(), c)
        if self.plates:
            y = triangular(self._l, np.swapaxes(self._e[..., None, :] * c, -1, -2), lower=True)
            return np.einsum("...ik,...ik->...k", y, y)
        y = triangular(self._l, (self._e * c).reshape(-1, self.d).T, lower=True)
        return np.einsum("ij,ij->j", y, y).reshape(c.shape[:-1])

    def _inv_stack(self) -> np.ndarray:
        """A^-1 in the stack layout (D, D, B) straight from L, by columns from the last
        (the recursion of Takahashi, Fagan & Chen 1973; Golub & Van Loan section 3.1 for the
        triangular solves it stands for): with S = A^-1 and L^T S = L^-1,
        S_ij = -(sum_{k>j} S_ik L_kj) / L_jj for i > j, then
        S_jj = (1/L_jj - sum_{k>j} L_kj S_kj) / L_jj.
        Each column reads only the columns after it; its mirror row is written with it, so S
        is exactly symmetric."""
        self._require_ok()
        s, d = self._l, self.d
        out = np.empty_like(s)
        for j in range(d - 1, -1, -1):
            inv = 1.0 / s[j, j]
            if j == d - 1:
                np.multiply(inv, inv, out=out[j, j])
                continue
            off = out[j + 1:, j]  # formed in place: no temporaries (the same operations)
            np.einsum("ikb,kb->ib", out[j + 1:, j + 1:], s[j + 1:, j], out=off)
            off *= -inv
            out[j, j + 1:] = off
            np.subtract(inv, np.einsum("kb,kb->b", s[j + 1:, j], off), out=out[j, j])
            out[j, j] *= inv
        return out

    def inv(self) -> np.ndarray:
        """A^-1, exactly symmetric; on the LAPACK path E (L^-T L^-1) E from the equilibrated
        factor (``_equilibrated``)."""
        if not self.vectorized:
            inv_l = np.linalg.inv(self._l)
            e = self._e
            return sym(e[..., :, None] * np.matmul(np.swapaxes(inv_l, -1, -2), inv_l) * e[..., None, :])
        return _stack_first(self._inv_stack(), self.plates)

    def inv_outer(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, A^-1 + x x^T) with x = A^-1 b, b shaped plates + (D,), both C-contiguous: a
        Gaussian's E[x] and E[x x^T] from Lambda and Lambda mu (Winn & Bishop, table 1). On a
        vectorized stack both are formed in the stack's layout, in place, and transposed once;
        x x^T is added on and above the diagonal and mirrored (A^-1 is exactly symmetric and
        x_i x_j = x_j x_i: the same numbers as the full square, 15 products of 25 at D = 5)."""
        if not self.vectorized:
            cov, x = self.inv(), self.solve(b)
            return x, cov + x[..., :, None] * x[..., None, :]
        s, d = self._inv_stack(), self.d
        x = self._solve_stack(np.array(_stack_last(b, self.plates, d)))
        return _rows_first(x, self.plates), np.ascontiguousarray(_stack_first(_add_outer(s, x), self.plates))

    def draw(self, b: np.ndarray, z: np.ndarray) -> np.ndarray:
        """A^-1 b + C z with C C^T = A^-1, C lower (a draw from N(A^-1 b, A^-1) for z standard
        normal), b and z shaped plates + (D,). On a vectorized stack A^-1 is formed in the stack
        layout (:meth:`_inv_stack`), A^-1 b read from it, and C factorized from it in place; where
        that fails (A near singular: A^-1 as formed is not positive definite) a LinAlgError, as
        on the LAPACK path."""
        if not self.vectorized:
            cov = self.inv()
            x = np.einsum("...ij,...j->...i", np.linalg.cholesky(cov), z)
            return x + self.solve(b)
        s, d = self._inv_stack(), self.d
        x = self._solve_stack(np.array(_stack_last(b, self.plates, d)))
        c, zt = self._factor(s), _stack_last(z, self.plates, d)  # C on and below the diagonal
        pivots = np.diagonal(c).T  # (D, B): A^-1 as formed may fail to factorize where A is near singular
        if not np.all(np.isfinite(pivots) & (pivots > 0)):
            raise np.linalg.LinAlgError("Matrix is not positive definite")
        for i in range(d):
            x[i] += np.einsum("jb,jb->b", c[i, :i + 1], zt[:i + 1])
        return _rows_first(x, self.plates)

    def lower(self) -> np.ndarray:
        """L (zeros above the diagonal), shaped plates + (D, D)."""
        if not self.vectorized:
            return self._l
        self._require_ok()
        return np.tril(_stack_first(self._l, self.plates))

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A^-1 b for b shaped plates + (D,): L y = b forward, then L^T x = y backward."""
        if not self.vectorized:  # numpy broadcasts b's leading axes against the stack's
            e = self._e
            return e * np.linalg.solve(self._scaled, (e * np.asarray(b, dtype=float))[..., None])[..., 0]
        b = np.broadcast_to(np.asarray(b, dtype=float), self.plates + (self.d,))
        return _stack_first(self._solve_stack(b.reshape(-1, self.d).T.copy(order="C")), self.plates)

    def _solve_stack(self, y: np.ndarray) -> np.ndarray:
        """A^-1 b in the stack layout (D, B), in place on y = b: L y = b forward, then
        L^T x = y backward (a solve: its error is relative to x, where A^-1 formed first and
        then applied to b loses the digits of |A^-1| |b| / |x|, up to the condition of A)."""
        self._require_ok()
        s, d = self._l, self.d
        for j in range(d):
            if j:
                y[j] -= np.einsum("mb,mb->b", s[j, :j], y[:j])
            y[j] /= s[j, j]
        for j in range(d - 1, -1, -1):
            if j < d - 1:
                y[j] -= np.einsum("mb,mb->b", s[j + 1:, j], y[j + 1:])
            y[j] /= s[j, j]
        return y


class Shared:
    """The factorization of a stack broadcast along some plates (stride 0: a prior with fixed
    hyperparameters over a plate), computed by the column loop at the size of the matrices it
    is broadcast from, with :class:`Cholesky`'s answers broadcast to the whole stack: the same
    numbers per element as the column loop over the whole stack."""

    vectorized = True

    def __init__(self, small: Cholesky, plates: tuple[int, ...]):
        self.small, self.plates, self.d = small, plates, small.d
        self.ok = np.broadcast_to(small.ok, plates)

    @functools.cached_property
    def cov(self) -> np.ndarray:
        """The inverse of the matrices the stack is broadcast from, formed once, read-only."""
        cov = self.small.inv()
        cov.flags.writeable = False
        return cov

    def logdet(self) -> np.ndarray:
        return np.broadcast_to(self.small.logdet(), self.plates)

    def inv(self) -> np.ndarray:
        return np.broadcast_to(self.cov, self.plates + (self.d, self.d))

    def lower(self) -> np.ndarray:
        return np.broadcast_to(self.small.lower(), self.plates + (self.d, self.d))

    def draw(self, b: np.ndarray, z: np.ndarray) -> np.ndarray:
        """A^-1 b + C z as :meth:`Cholesky.draw`, with A^-1 and C formed once at the size of the
        matrices the stack is broadcast from and applied by ``matvec``."""
        cov = self.cov
        x = matvec(np.broadcast_to(Cholesky(cov, vectorize=True).lower(), self.plates + (self.d, self.d)), z)
        x += matvec(np.broadcast_to(cov, self.plates + (self.d, self.d)), b)
        return x

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A^-1 b: the shared inverse times each b."""
        return np.einsum("...ij,...j->...i", self.inv(), b)

    def inv_outer(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, A^-1 + x x^T) with x = A^-1 b, as :meth:`Cholesky.inv_outer`."""
        cov, d = self.cov, self.d
        b = np.broadcast_to(b, self.plates + (d,))
        if cov.size == d * d:  # one matrix for the whole stack: one product, in the stack layout
            c = cov.reshape(d, d)
            x = c @ b.reshape(-1, d).T  # (D, B)
            if _same_columns(x):  # one mean for the whole stack (a prior's): its one second moment, copied
                return _rows_first(x, self.plates), _copies(_outer_plus(x[:, :1], c)[..., 0], self.plates)
            s = _outer_plus(x, c)
            return _rows_first(x, self.plates), np.ascontiguousarray(_stack_first(s, self.plates))
        x = np.einsum("...ij,...j->...i", cov, b)
        second = np.einsum("...i,...j->...ij", x, x)
        second += cov
        return x, second


def _add_outer(s: np.ndarray, x: np.ndarray) -> np.ndarray:
    """s += x x^T per column of x (D, B), s in the stack layout (D, D, B) and symmetric: on and
    above the diagonal, mirrored (x_i x_j = x_j x_i: 15 products of 25 at D = 5); returns s."""
    for i in range(x.shape[0]):
        s[i, i:] += x[i] * x[i:]
        s[i + 1:, i] = s[i, i + 1:]
    return s


def _outer_plus(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    """C + x x^T per column of x (D, B), in the stack layout (D, D, B)."""
    s = np.empty(c.shape + (x.shape[1],))
    s[...] = c[:, :, None]
    return _add_outer(s, x)


def _same_columns(x: np.ndarray) -> bool:
    """Whether every column of x (D, B) holds the same bits as the first (then so does every
    column of anything computed from x column by column)."""
    if x.shape[1] < 2:
        return False
    bits = np.ascontiguousarray(x).view(np.dtype(f"u{x.dtype.itemsize}"))
    return bool((bits[:, 1] == bits[:, 0]).all() and (bits == bits[:, :1]).all())


def _copies(m: np.ndarray, plates: tuple[int, ...]) -> np.ndarray:
    """plates + m.shape: m in every element, C-contiguous and writable."""
    out = np.empty(plates + m.shape)
    out[...] = m
    return out


def _shared(a: np.ndarray) -> np.ndarray | None:
    """The matrices a stack (plates + (D, D)) is broadcast from along its stride-0 plate axes
    (kept as length 1), or None if it is broadcast along none."""
    plates = a.shape[:-2]
    if not any(st == 0 and n > 1 for st, n in zip(a.strides[:-2], plates)):
        return None
    return a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(a.strides[:-2], plates))]


#: how many factorizations ``factor`` keeps, and the largest array it keeps one of
FACTOR_MEMO, FACTOR_MEMO_SIZE = 4, 2**20
_memo: list = []


#: factorizations formed from more than a matrix's values (``_gram.Gram``): of a stack of at
#: most KNOWN_SIZE entries by its bits and the scale (a copy of the array, a State copied or
#: saved and loaded in this process, finds it), of a larger one by the array itself (read-only
#: while kept); the last KNOWN_MEMO of each
KNOWN_MEMO, KNOWN_SIZE = 64, 2**14
_known: dict = {}
_known_arrays: list = []


def _bits(a: np.ndarray, scale: float | None):
    return (scale, a.shape, a.dtype.str, np.ascontiguousarray(a).tobytes())


def keep_factor(a: np.ndarray, scale: float, f) -> None:
    """Let ``factor(b, scale)`` be ``f`` for every stack ``b`` (plates + (D, D)) with the bits of
    ``a`` (at most KNOWN_SIZE entries; ``a`` itself above); ``a`` is made read-only."""
    if a.ndim < 2:
        return
    a.flags.writeable = False
    if a.size > KNOWN_SIZE:
        _known_arrays.insert(0, (weakref.ref(a), scale, f))
        del _known_arrays[KNOWN_MEMO:]
        return
    key = _bits(a, scale)
    _known.pop(key, None)
    _known[key] = f
    while len(_known) > KNOWN_MEMO:
        del _known[next(iter(_known))]


def known_factor(a, scale: float | None):
    """The factorization kept for a stack with the bits of ``a`` at ``scale`` (``keep_factor``),
    or None."""
    if not isinstance(a, np.ndarray) or a.ndim < 2:
        return None
    if a.size > KNOWN_SIZE:
        return next((f for ref, sc, f in _known_arrays if ref() is a and sc == scale and not a.flags.writeable), None)
    return _known.get(_bits(a, scale)) if _known else None


def factor(a: np.ndarray, scale: float | None = None) -> Cholesky | Shared:
    """``Cholesky(a, scale=scale)`` (``Shared`` for a stack broadcast along a plate), reused
    while the same array (by identity) holds the same values: a q's moments, validity and
    entropy each factorize its natural parameters, and the stack is factorized once. An array
    that owns its data is made read-only while it is kept (natural parameters are values: steps
    build new arrays), so that it cannot change unseen; any other array is compared with a copy
    (of the matrices it is broadcast from), so one changed in place is factorized again. A
    factorization kept for the array (``keep_factor``) is that one."""
    known = known_factor(a, scale)
    if known is not None:
        return known
    small = _shared(a) if isinstance(a, np.ndarray) and vectorized(a.shape) else None
    seen = a if small is None else small
    for arr, sc, copy, f in tuple(_memo):
        if arr is a and sc == scale and (not a.flags.writeable if copy is None else np.array_equal(copy, seen)):
            return f
    if small is None:
        f = Cholesky(a, scale=scale, exact=scale is not None and _marked(a))
    else:
        f = Shared(Cholesky(small, vectorize=True, scale=scale), a.shape[:-2])
    if isinstance(a, np.ndarray) and seen.size <= FACTOR_MEMO_SIZE:
        if a.flags.owndata:
            a.flags.writeable = False
        _memo.insert(0, (a, scale, None if a.flags.owndata else seen.copy(), f))
        del _memo[FACTOR_MEMO:]
    return f


def logdet_pd(a: np.ndarray) -> np.ndarray:
    """log|A| for a batch of positive-definite matrices (Cholesky)."""
    return Cholesky(a).logdet()


def inv_pd(a: np.ndarray, scale: float | None = None) -> np.ndarray:
    """Inverse of a batch of positive-definite matrices (Cholesky; LU where that fails); with
    ``scale``, of scale * sym(a)."""
    f = factor(a, scale) if vectorized(np.shape(a)) or known_factor(a, scale) is not None else None
    if f is None or not np.all(f.ok):
        return sym(np.linalg.inv(a if scale is None else scale * sym(a)))
    return f.inv()


def solve_pd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A^-1 b for a batch of positive-definite A and vectors b (Cholesky)."""
    return Cholesky(a).solve(b)


def is_symmetric(a: np.ndarray) -> np.ndarray:
    """Elementwise: is each matrix of the batch symmetric, up to rounding (1e-8 of its largest entry)."""
    tol = 1e-8 * np.maximum(1.0, np.max(np.abs(a), axis=(-2, -1), initial=0.0))
    return np.all(np.abs(a - np.swapaxes(a, -1, -2)) <= tol[..., None, None], axis=(-2, -1))


def is_pd(a: np.ndarray) -> np.ndarray:
    """Elementwise: is each matrix of the batch finite, symmetric and positive definite."""
    finite = np.all(np.isfinite(a), axis=(-2, -1))
    safe = np.where(finite[..., None, None], sym(a), np.eye(a.shape[-1]))
    if vectorized(a.shape):
        return finite & Cholesky(safe).ok
    scaled = _equilibrated(safe)[1]  # as Cholesky factorizes it: the two agree
    try:  # one LAPACK factorization for the stack; one per matrix only to tell which ones fail
        np.linalg.cholesky(scaled)
        return finite
    except np.linalg.LinAlgError:
        return finite & np.array([_factorizes(m) for m in scaled.reshape(-1, *scaled.shape[-2:])],
                                 dtype=bool).reshape(finite.shape)


def _factorizes(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


def multigammaln(a: np.ndarray, d: int) -> np.ndarray:
    """log Gamma_D(a) = D(D-1)/4 log(pi) + sum_j log Gamma(a + (1 - j)/2), vectorized."""
    a = np.asarray(a, dtype=float)
    j = np.arange(1, d + 1)
    return d * (d - 1) / 4.0 * np.log(np.pi) + np.sum(special.gammaln(a[..., None] + (1.0 - j) / 2.0), axis=-1)


def multidigamma(a: np.ndarray, d: int) -> np.ndarray:
    """psi_D(a) = sum_j psi(a + (1 - j)/2), the derivative of log Gamma_D."""
    a = np.asarray(a, dtype=float)
    j = np.arange(1, d + 1)
    return np.sum(special.digamma(a[..., None] + (1.0 - j) / 2.0), axis=-1)


#: arrays with more elements than this sum over their last axis through BLAS (sum_last)
SUM_BLAS = 2**15


def sum_last(a: np.ndarray) -> np.ndarray:
    """Sum over the last axis. A large array goes through one matrix-vector product with a
    vector of ones (numpy's reduction along a short contiguous axis is several times slower);
    at most SUM_BLAS elements, np.sum (so that small models keep bit-identical numbers)."""
    if a.size <= SUM_BLAS or a.ndim == 0 or not a.flags.c_contiguous:
        return np.sum(a, axis=-1)
    return a @ np.ones(a.shape[-1])


def inner(a: np.ndarray, b: np.ndarray, event_ndim: int) -> np.ndarray:
    """Sum of a*b over the trailing event axes."""
    prod = a * b
    return prod.sum(axis=tuple(range(-event_ndim, 0))) if event_ndim else prod
