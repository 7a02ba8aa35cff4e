"""A positive-definite matrix A = P + B^T B, a well-scaled P plus the Gram matrix of rows B,
factorized from P and B rather than from A as formed.

A Gaussian's precision Lambda = P + E[tau] X^T X (its prior's precision plus the message of a
regression over a constant design X) has entries of order |X|^2 E[tau]: at inputs of 1e8 they
are 1e16, whose rounding (about 2) is above P in the null space of X, so Lambda as formed loses
P there, and with it q's entropy and covariance. The stack S = [L_P^T; B] (P = L_P L_P^T) has
S^T S = A; its QR factorization S = Q R gives A = R^T R to rounding of S's entries, not of A's
(Householder QR is backward stable column by column, Golub & Van Loan, Matrix Computations,
4th ed., sections 5.2.2 and 5.3.3, and row by row with the rows sorted by decreasing size, Cox &
Higham, BIT 38, 1998: the prior's rows of order 1 are then perturbed to their own rounding, not
to the design's). R is kept equilibrated like ``_linalg.Cholesky``'s factor,
E A E = (R E)^T (R E) with E = diag(A)^-1/2 read from S's column norms.

A message declares its rows (``declare``: -2 eta_2 = B^T B, rows formed when asked); the
adapter that sums a node's messages takes them (``take``) and, where the precision as formed is
ill-conditioned (``ILL``), keeps the factorization from P and B for the summed array
(``_linalg.keep_factor``), which every reader of that matrix's factorization then gets.
"""
from __future__ import annotations

import weakref
from typing import Callable

import numpy as np
from scipy.linalg import solve_triangular

from ._linalg import Cholesky

#: a precision whose equilibrated Cholesky factor has a pivot below ILL (squared: below 1e-8,
#: a condition number above about 1e8) is factorized from its parts where it has them
ILL = 1e-4

_declared: dict = {}


def declare(a: np.ndarray, rows: Callable[[], tuple | None]) -> None:
    """Say that the message whose precision part is ``a`` is (B^T z, -1/2 B^T B) for
    (B, z) = ``rows()`` (formed when taken; None if they cannot be), while ``a`` lives."""
    key = id(a)
    _declared[key] = (weakref.ref(a, lambda _, key=key: _declared.pop(key, None)), rows)


def take(a) -> Callable[[], np.ndarray | None] | None:
    """The rows declared for ``a`` (once: the declaration is dropped, since a sum may be formed
    in place into ``a``), or None."""
    entry = _declared.get(id(a)) if isinstance(a, np.ndarray) else None
    if entry is None or entry[0]() is not a:
        return None
    del _declared[id(a)]
    return entry[1]


def ill(f: Cholesky) -> bool:
    """Whether the equilibrated factorization ``f`` (LAPACK path) has a pivot below ILL."""
    return bool(np.min(np.diagonal(f._l, axis1=-2, axis2=-1)) < ILL)


class Gram(Cholesky):
    """The factorization of A = P + B^T B from the QR factorization of [L_P^T; B] (module
    docstring), with ``Cholesky``'s answers (LAPACK path: the equilibrated factor L with
    E A E = L L^T) and solves by the two triangular systems."""

    def __init__(self, a: np.ndarray, prior: np.ndarray, rows: np.ndarray, b: np.ndarray | None = None,
                 rhs: tuple | None = None):
        self.plates, self.d, self.vectorized, self.a = (), a.shape[-1], False, a
        lower = np.linalg.cholesky(prior)
        stack = np.concatenate([lower.T, rows], axis=0)
        order = np.argsort(-np.max(np.abs(stack), axis=1), kind="stable")  # rows by decreasing size
        q, r = np.linalg.qr(stack[order])
        sign = np.sign(np.diagonal(r))
        r *= sign[:, None]
        self._e = 1.0 / np.linalg.norm(stack, axis=0)
        self._l = np.ascontiguousarray((r * self._e[None, :]).T)
        self._scaled = self._l @ self._l.T
        diag = np.diagonal(self._l)
        self.ok = np.array(bool(np.all(np.isfinite(self._l)) and np.all(diag > 0)))
        #: b = P m_0 + B^T z, and A^-1 b as the least-squares solution of [L_P^T; B] x = [L_P^-1 P m_0; z]
        self.b, self.x = b, None
        if b is not None and rhs is not None and self.ok:
            top = solve_triangular(lower, rhs[0], lower=True)
            self.x = solve_triangular(r, sign * (q.T @ np.concatenate([top, rhs[1]])[order]), lower=False)

    def spread_draws(self, z: np.ndarray) -> np.ndarray:
        """E L^-T z for standard normal z shaped (..., D): draws of covariance A^-1 =
        E L^-T L^-1 E, without forming A^-1."""
        y = solve_triangular(self._l.T, np.asarray(z, dtype=float).reshape(-1, self.d).T, lower=False)
        return self._e * y.T.reshape(np.shape(z))

    def solve(self, b: np.ndarray) -> np.ndarray:
        """A^-1 b = E L^-T L^-1 E b (for the b given with its parts, their least-squares
        solution: its rounding is S's, not b's as formed)."""
        self._require_ok()
        if self.x is not None and (b is self.b or np.array_equal(b, self.b)):
            return self.x.copy()
        b = np.asarray(b, dtype=float)
        cols = (self._e * b).reshape(-1, self.d).T
        y = solve_triangular(self._l, cols, lower=True)
        x = solve_triangular(self._l.T, y, lower=False).T.reshape(b.shape)
        return self._e * x


def single(a: np.ndarray):
    """The one matrix (or vector, with a last axis of 1) that a stack is broadcast from along
    every leading axis (stride 0: a q broadcast over draws), ``a`` itself without leading axes,
    else None."""
    a = np.asarray(a)
    if a.ndim < 2 or any(st != 0 for st, n in zip(a.strides[:-2], a.shape[:-2]) if n > 1):
        return None
    return a[(0,) * (a.ndim - 2)]


def factorized(natural: tuple, prior: tuple, parts: tuple | None) -> Gram | None:
    """The factorization of Lambda = -2 eta_2 of ``natural`` = ``prior`` + the message whose
    ``parts`` are (B, z): -2 eta_2 = B^T B, eta_1 = B^T z (None where the prior's precision is not
    positive definite or the parts are not finite)."""
    if parts is None:
        return None
    rows, z = parts
    if not np.all(np.isfinite(rows)) or not np.all(np.isfinite(z)) or rows.shape[-1] != natural[1].shape[-1]:
        return None
    try:
        f = Gram(-2.0 * natural[1], -2.0 * prior[1], rows, natural[0], (prior[0], z))
    except np.linalg.LinAlgError:
        return None
    return f if f.ok else None
