"""A positive-definite matrix held by a square root, A = S^T S, and factorized from S rather
than from A as formed (the information form of a Gaussian's precision, kept as a root).

A Gaussian's precision Lambda = P + E[tau] X^T X (its prior's precision plus the message of a
regression over a constant design X) has entries of order |X|^2 E[tau]: at inputs of 1e8 they
are 1e16, whose rounding (about 2) is above P in the null space of X, so Lambda as formed loses
P there, and with it q's entropy and covariance. Each part has a root of its own: P = L_P L_P^T,
and the message's -2 eta_2 = B^T B, eta_1 = B^T z with B the rows sqrt(E[tau]) x_n. Sums and
blends of such parts are stacks of roots:

    P + sum_j B_j^T B_j                   = S^T S,  S = [L_P^T; B_1; B_2; ...]
    (1 - rho) Lambda_old + rho Lambda_new = S^T S,  S = [sqrt(1 - rho) R_old; sqrt(rho) R_new]

with eta_1 = S^T t for the stack t of the parts' right-hand sides (L_P^-1 P m_0, z_j, the roots'
own t). The QR factorization S = Q R gives A = R^T R to rounding of S's entries, not of A's
(Householder QR is backward stable column by column, Golub & Van Loan, Matrix Computations,
4th ed., sections 5.2.2 and 5.3.3, and row by row with the rows sorted by decreasing size, Cox &
Higham, BIT 38, 1998: the prior's rows of order 1 are then perturbed to their own rounding, not
to the design's), and A^-1 eta_1 as the least-squares solution R^-1 Q^T t. Batched over plates
(one QR per plate element, in one call). R is kept equilibrated like ``_linalg.Cholesky``'s
factor, E A E = (R E)^T (R E) with E = diag(A)^-1/2 read from S's column norms.

A message declares its rows (``declare``: -2 eta_2 = B^T B, rows formed when asked); a sum of
messages declares the rows of its terms stacked (``joined``); the adapter that sums a node's
messages takes them (``take``) and, where the precision as formed is ill-conditioned (``ILL``),
keeps the factorization from its parts for the summed array (``_linalg.keep_factor``), which
every reader of that matrix's factorization then gets; a stochastic step's blend of two such
q keeps the blend of their roots (``blended``), and a saved State stores the root beside the
natural parameters (``kept_root``, ``restore``).
"""
from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from ._linalg import Cholesky, Shared, _equilibrated, keep_factor, known_factor, sym, triangular

#: a precision whose equilibrated Cholesky factor has a pivot below ILL (squared: below 1e-8,
#: a condition number above about 1e8) is factorized from its parts where it has them
ILL = 1e-4
#: a root is kept for a matrix A (and eta_1) only where S^T S (S^T t) equals it to MATCH times
#: the product of S's column norms (of a column's norm and |t|): the parts describe the sum
MATCH = 1e-8

_declared: dict = {}


def declare(a: np.ndarray, rows: Callable[[], tuple | None]) -> None:
    """Say that the message whose precision part is ``a`` is (B^T z, -1/2 B^T B) for
    (B, z) = ``rows()`` (B shaped plates + (N, D), z plates + (N,), the plates those of ``a``;
    formed when taken; None if they cannot be), while ``a`` lives."""
    key = id(a)
    _declared[key] = (weakref.ref(a, lambda _, key=key, kept=_declared: kept.pop(key, None)), rows)


def take(a) -> Callable[[], tuple | None] | None:
    """The rows declared for ``a`` (once: the declaration is dropped, since a sum may be formed
    in place into ``a``), or None."""
    entry = _declared.get(id(a)) if isinstance(a, np.ndarray) else None
    if entry is None or entry[0]() is not a:
        return None
    del _declared[id(a)]
    return entry[1]


def joined(parts: list) -> Callable[[], tuple | None] | None:
    """The rows of a sum of messages whose rows are ``parts`` (each taken, ``take``, or a function
    forming them again): the stack of theirs, each term's compacted as it is formed
    (``compact``: at most D rows per plate element, whatever its number of rows); None unless
    every term has rows."""
    if not parts or any(p is None for p in parts):
        return None
    if len(parts) == 1:
        return parts[0]

    def rows():
        each = []
        for p in parts:
            r = p()
            if r is None:
                return None
            each.append(compact(r))
        return stacked(each)
    return rows


def stacked(parts: list) -> tuple | None:
    """Rows (B_j, z_j) of the terms of a sum stacked as ([B_1; B_2; ...], [z_1; z_2; ...]);
    None unless every term has rows of the same plates."""
    if not parts or any(p is None or p[0].shape[:-2] != parts[0][0].shape[:-2] for p in parts):
        return None
    return np.concatenate([p[0] for p in parts], axis=-2), np.concatenate([p[1] for p in parts], axis=-1)


def compact(parts: tuple) -> tuple:
    """Rows (B, z) as (R, Q^T z) for B = Q R (reduced QR per plate element): R^T R = B^T B and
    R^T Q^T z = B^T z, in at most D rows (Householder QR is backward stable, Golub & Van Loan
    section 5.2.2: R is B's to rounding of B's entries)."""
    rows, z = parts
    if rows.shape[-2] <= rows.shape[-1]:
        return rows, z
    q, r = np.linalg.qr(rows)
    return r, np.einsum("...md,...m->...d", q, z)


def ill(f, diagonal: np.ndarray) -> bool:
    """Whether the factorization ``f`` of a stack A (plates + (D, D), ``diagonal`` its diagonal)
    failed somewhere or has, once equilibrated, a pivot below ILL; a factorization kept from
    parts is (matrices with the same bits may be sums of other parts: the ones at hand decide)."""
    if isinstance(f, Gram):
        return True
    if isinstance(f, Shared):
        return False
    if not np.all(f.ok):
        return True
    if f.vectorized:  # the column loop's factor is not equilibrated: L_jj / sqrt(A_jj)
        pivots = f._diag.T.reshape(f.plates + (f.d,)) / np.sqrt(diagonal)
    else:
        pivots = np.diagonal(f._l, axis1=-2, axis2=-1)
    return bool(np.min(pivots) < ILL)


class Gram(Cholesky):
    """The factorization of A = S^T S from the QR factorization of the stack S (module
    docstring), batched over plates, with ``Cholesky``'s answers (LAPACK path: the equilibrated
    factor L with E A E = L L^T) and solves by the two triangular systems; R and R^-T eta_1 are
    kept (``r``, ``t``) for the roots of later sums and blends."""

    def __init__(self, a: np.ndarray, stack: np.ndarray, t: np.ndarray | None = None, b: np.ndarray | None = None):
        self.a, self.d, self.vectorized = a, a.shape[-1], False
        self.plates = a.shape[:-2]
        stack = np.broadcast_to(stack, self.plates + stack.shape[-2:])
        order = np.argsort(-np.max(np.abs(stack), axis=-1), axis=-1, kind="stable")  # rows by decreasing size
        q, r = np.linalg.qr(np.take_along_axis(stack, order[..., None], axis=-2))
        sign = np.where(np.diagonal(r, axis1=-2, axis2=-1) < 0, -1.0, 1.0)
        self.r = r * sign[..., :, None]
        self._e = 1.0 / np.linalg.norm(stack, axis=-2)
        self._l = np.ascontiguousarray(np.swapaxes(self.r * self._e[..., None, :], -1, -2))
        self._scaled = self._l @ np.swapaxes(self._l, -1, -2)
        diag = np.diagonal(self._l, axis1=-2, axis2=-1)
        self.ok = np.asarray(np.all(np.isfinite(self._l), axis=(-2, -1)) & np.all(diag > 0, axis=-1))
        #: b = eta_1 = S^T t, t' = Q^T t (R^T t' = b) and A^-1 b = R^-1 t', the least-squares
        #: solution of S x = t (its rounding is S's, not b's as formed)
        self.b, self.t, self.x = b, None, None
        if t is not None and np.all(self.ok):
            t = np.take_along_axis(np.broadcast_to(t, self.plates + t.shape[-1:]), order, axis=-1)
            self.t = sign * np.einsum("...md,...m->...d", q, t)
            self.x = triangular(self.r, self.t[..., None], lower=False)[..., 0]
        self.norms = 1.0 / self._e  # S's column norms

    def matches(self, a: np.ndarray, b: np.ndarray | None = None, t: np.ndarray | None = None) -> bool:
        """Whether R^T R is ``a`` (and R^T t' is ``b``, |t| = the norms of the stack's t) to
        MATCH of the products of S's column norms (and |t|)."""
        n = self.norms
        if not np.all(np.abs(np.swapaxes(self.r, -1, -2) @ self.r - a) <= MATCH * n[..., :, None] * n[..., None, :]):
            return False
        if b is None or self.t is None:
            return True
        size = np.linalg.norm(t, axis=-1)[..., None] if t is not None else np.linalg.norm(self.t, axis=-1)[..., None]
        return bool(np.all(np.abs(np.einsum("...md,...m->...d", self.r, self.t) - b) <= MATCH * n * size))

    def _columns(self, b: np.ndarray) -> tuple[np.ndarray, tuple]:
        """b shaped lead + plates + (D,) as plates + (D, K) (K = the lead's size), and lead."""
        b = np.asarray(b, dtype=float)
        lead = b.shape[:b.ndim - 1 - len(self.plates)]
        b = np.broadcast_to(b, lead + self.plates + (self.d,)).reshape((-1,) + self.plates + (self.d,))
        return np.moveaxis(b, 0, -1), lead

    def _back(self, x: np.ndarray, lead: tuple) -> np.ndarray:
        return np.moveaxis(x, -1, 0).reshape(lead + self.plates + (self.d,))

    def spread_draws(self, z: np.ndarray) -> np.ndarray:
        """E L^-T z for standard normal z shaped (..., plates, D): draws of covariance A^-1 =
        E L^-T L^-1 E, without forming A^-1."""
        cols, lead = self._columns(z)
        y = triangular(self._l, cols, lower=True, trans=True)
        return self._e * self._back(y, lead)

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A^-1 b = E L^-T L^-1 E b (for the b given with its parts, their least-squares
        solution)."""
        self._require_ok()
        if self.x is not None and (b is self.b or np.array_equal(b, self.b)):
            return self.x.copy()
        cols, lead = self._columns(self._e * np.asarray(b, dtype=float))
        y = triangular(self._l, triangular(self._l, cols, lower=True), lower=True, trans=True)
        return self._e * self._back(y, lead)

    def inv_outer(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(x, A^-1 + x x^T) with x = A^-1 b, C-contiguous."""
        x = self.solve(b)
        return np.ascontiguousarray(x), np.ascontiguousarray(self.inv() + x[..., :, None] * x[..., None, :])

    def draw(self, b: np.ndarray, z: np.ndarray) -> np.ndarray:
        """A^-1 b + E L^-T z: a draw from N(A^-1 b, A^-1) for z standard normal."""
        return self.solve(b) + self.spread_draws(z)


def single(a: np.ndarray):
    """The one matrix (or vector, with a last axis of 1) that a stack is broadcast from along
    every leading axis (stride 0: a q broadcast over draws), ``a`` itself without leading axes,
    else None."""
    a = np.asarray(a)
    if a.ndim < 2 or any(st != 0 for st, n in zip(a.strides[:-2], a.shape[:-2]) if n > 1):
        return None
    return a[(0,) * (a.ndim - 2)]


def _kept(a: np.ndarray, stack: np.ndarray, t: np.ndarray, b: np.ndarray) -> Gram | None:
    """The Gram of ``stack`` for A = ``a`` (eta_1 = ``b``) where it is finite, positive definite
    and matches them; else None."""
    if not np.all(np.isfinite(stack)) or not np.all(np.isfinite(t)):
        return None
    try:
        g = Gram(a, stack, t, b)
    except np.linalg.LinAlgError:
        return None
    return g if np.all(g.ok) and g.x is not None and g.matches(a, b, t) else None


def factorized(natural: tuple, prior: tuple, parts: tuple | None) -> Gram | None:
    """The factorization of Lambda = -2 eta_2 of ``natural`` = ``prior`` + the message whose
    ``parts`` are (B, z): -2 eta_2 = B^T B, eta_1 = B^T z, stacked [L_P^T; B], [L_P^-1 P m_0; z]
    (None where the prior's precision is not positive definite, the parts are not finite or do
    not give ``natural``)."""
    if parts is None:
        return None
    rows, z = parts
    a = -2.0 * sym(natural[1])
    plates, d = a.shape[:-2], a.shape[-1]
    if rows.shape[-1] != d or rows.shape[:-2] != plates or z.shape != rows.shape[:-1]:
        return None
    try:
        lower = np.linalg.cholesky(np.broadcast_to(-2.0 * sym(prior[1]), a.shape))
        top = triangular(lower, np.broadcast_to(prior[0], plates + (d,))[..., None], lower=True)[..., 0]
    except (np.linalg.LinAlgError, ValueError):  # (a prior not positive definite, or of other plates)
        return None
    stack = np.concatenate([np.swapaxes(lower, -1, -2), rows], axis=-2)
    return _kept(a, stack, np.concatenate([top, z], axis=-1), np.asarray(natural[0], dtype=float))


def root(natural: tuple) -> tuple | None:
    """(R, t) with R^T R = -2 eta_2 and R^T t = eta_1 of ``natural``: the kept Gram's, else from
    the equilibrated Cholesky factor of the matrix as formed (R = L^T E^-1, t = L^-1 E eta_1);
    None where that fails."""
    kept = kept_root(natural)
    if kept is not None:
        return kept
    e, scaled = _equilibrated(-2.0 * sym(np.asarray(natural[1], dtype=float)))
    try:
        lower = np.linalg.cholesky(scaled)
    except np.linalg.LinAlgError:
        return None
    eta1 = np.broadcast_to(natural[0], e.shape)
    return np.swapaxes(lower, -1, -2) / e[..., None, :], triangular(lower, (e * eta1)[..., None], lower=True)[..., 0]


def blended(out: tuple, old: tuple, new: tuple, rho) -> Gram | None:
    """The factorization of ``out`` = (1 - rho) ``old`` + rho ``new`` from the stack of their
    roots [sqrt(1 - rho) R_old; sqrt(rho) R_new] (rho a number or one per plate element), or
    None."""
    roots = root(old), root(new)
    if any(r is None for r in roots):
        return None
    a = -2.0 * sym(out[1])
    plates = a.shape[:-2]
    rate = np.reshape(rho, np.shape(rho) + (1,) * (len(plates) + 2 - np.ndim(rho)))
    (r0, t0), (r1, t1) = roots
    stack = np.concatenate([np.broadcast_to(np.sqrt(1.0 - rate) * r0, a.shape),
                            np.broadcast_to(np.sqrt(rate) * r1, a.shape)], axis=-2)
    t = np.concatenate([np.broadcast_to(np.sqrt(1.0 - rate[..., 0]) * t0, plates + a.shape[-1:]),
                        np.broadcast_to(np.sqrt(rate[..., 0]) * t1, plates + a.shape[-1:])], axis=-1)
    return _kept(a, stack, t, np.asarray(out[0], dtype=float))


def kept_root(natural) -> tuple | None:
    """(R, t) of the factorization kept for a Gaussian's natural parameters ``natural`` (what a
    saved state stores beside them), or None."""
    if not isinstance(natural, (tuple, list)) or len(natural) != 2 or not isinstance(natural[1], np.ndarray):
        return None
    g = known_factor(natural[1], -2.0)
    return (g.r, g.t) if isinstance(g, Gram) and g.t is not None else None


def restore(natural: tuple, r: np.ndarray, t: np.ndarray) -> None:
    """Keep for ``natural`` the factorization of its root (R, t) as ``kept_root`` gave it (the
    stack S = R), where it gives ``natural``."""
    a = -2.0 * sym(np.asarray(natural[1], dtype=float))
    g = _kept(a, np.asarray(r, dtype=float), np.asarray(t, dtype=float), np.asarray(natural[0], dtype=float))
    if g is not None:
        keep_factor(natural[1], -2.0, g)
