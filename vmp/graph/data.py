"""Observed data out of core: numpy memmaps, HDF5 datasets (h5py), zarr arrays, or any object
with ``shape``, ``dtype`` and ``__getitem__`` on a sorted integer array. A stochastic step reads
only the rows it drew, in sorted order (chunk-friendly); a full pass reads the whole array."""
from __future__ import annotations

import numpy as np


def is_lazy(data) -> bool:
    """Data that stay where they are (not converted to an in-memory array at declaration)."""
    if isinstance(data, np.ndarray):
        return isinstance(data, np.memmap)
    return all(hasattr(data, a) for a in ("shape", "dtype", "__getitem__")) and not isinstance(data, (list, tuple))


def take_rows(data, rows: np.ndarray, axis: int = 0) -> np.ndarray:
    """``data[rows]`` along ``axis`` (rows sorted), reading only those rows."""
    if isinstance(data, np.ndarray):
        return np.take(data, rows, axis=axis)
    rows = np.asarray(rows)
    if rows.size > 1 and rows[-1] - rows[0] == rows.size - 1 and np.all(np.diff(rows) == 1):
        rows = slice(int(rows[0]), int(rows[-1]) + 1)  # a block of rows: one contiguous read
    index = (slice(None),) * axis + (rows,)
    oindex = getattr(data, "oindex", None)  # zarr: orthogonal selection
    return np.asarray(oindex[index] if oindex is not None else data[index])


def chunks(data, size: int = 1 << 16):
    """The rows of ``data`` in consecutive blocks of at most ``size`` (for checks and full passes)."""
    n = data.shape[0]
    for start in range(0, n, size):
        yield np.asarray(data[start:start + size])
