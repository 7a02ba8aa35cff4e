"""How far a fit's natural parameters moved in a step: ||lambda_new - lambda_old|| / ||lambda_old||,
summed without a temporary of the parameters' size (read by the loop's convergence test and by a
partially observed node's ``LatentRows``; a handle, ``held.Held``, sums it where its parts are)."""
from __future__ import annotations

import numpy as np

from ..factors.terms import DIRECT, compact, flat_pair, inner_product
from . import held


#: elements per piece of relative_change's sums, and pieces per block (one subtraction and one
#: batched product per block, into a buffer of 256 kB: in cache, and small enough for glibc to
#: serve it from freed heap memory rather than fresh pages; a 1 MB buffer took 25% longer on
#: 10^7 elements and faulted its pages in at most calls)
SQUARES_PIECE, SQUARES_BLOCK = 8192, 4


def relative_change(old, new) -> float:
    """||lambda_new - lambda_old|| / ||lambda_old|| (a handle's summed where its parts are)."""
    return held.relative_change(new, old, _arrays)


def _arrays(old, new) -> float:
    num = den = 0.0
    for a, b in zip(old, new):
        if np.size(a) > DIRECT and np.shape(a) == np.shape(b) and compact(a).size == np.size(a) \
                and compact(b).size == np.size(b):
            n, d = squares(a, b)
            num, den = num + n, den + d
            continue
        d = np.subtract(a, b)
        num += inner_product(d, d)
        den += inner_product(a, a)
    return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))


def squares(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(||a - b||^2, ||a||^2) a cache-sized piece at a time: a and b read once, no temporary of
    their size. Pieces of SQUARES_PIECE elements: with BLAS on 2 threads a dot of 8192 elements
    took 0.003 ms, one of 10^5 elements 4-8 ms (threads waiting on busy cores; see terms._dot).
    A block of SQUARES_BLOCK pieces is one subtraction and one stacked product (1 x n)(n x 1)
    per sum, which numpy runs as one BLAS dot per piece: the sums of the piece-by-piece loop,
    added in the same order, with a quarter of its calls."""
    fa, fb = flat_pair(np.asarray(a), np.asarray(b))
    piece = min(fa.size, SQUARES_PIECE)
    buf = np.empty(min(fa.size, piece * SQUARES_BLOCK))
    num = den = 0.0
    for start in range(0, fa.size, buf.size):
        x = fa[start:start + buf.size]
        d = np.subtract(x, fb[start:start + buf.size], out=buf[:x.size])
        whole = x.size - x.size % piece
        if whole:
            rows, cols = d[:whole].reshape(-1, 1, piece), x[:whole].reshape(-1, 1, piece)
            dd = np.matmul(rows, rows.transpose(0, 2, 1)).ravel().tolist()
            xx = np.matmul(cols, cols.transpose(0, 2, 1)).ravel().tolist()
            for p, q in zip(dd, xx):
                num += p
                den += q
        if whole < x.size:
            r, y = d[whole:], x[whole:]
            num += float(r @ r)
            den += float(y @ y)
    return num, den
