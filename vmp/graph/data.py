"""Observed data out of core: numpy memmaps, HDF5 datasets (h5py), zarr arrays, or any object
with ``shape``, ``dtype`` and ``__getitem__`` on a sorted integer array. A stochastic step reads
only the rows it drew, in sorted order (chunk-friendly); a full pass reads the whole array.

The file behind a memmap or an HDF5 dataset, and the store of a zarr array on disk, are recorded
at declaration (:func:`file_of`: size and modification time); a fit checks them before each step
and evaluation (:func:`check_files`), so data truncated, rewritten or removed under a fit are a
DataError naming the node, not zeros read as data (HDF5, a zarr chunk removed) or a SIGBUS (a
memmap past the file's end).
"""
from __future__ import annotations

import mmap
import os

import numpy as np


def is_lazy(data) -> bool:
    """Data that stay where they are (not converted to an in-memory array at declaration)."""
    if isinstance(data, np.ndarray):
        return isinstance(data, np.memmap)
    if isinstance(data, (np.generic, list, tuple)) or not all(hasattr(data, a) for a in ("shape", "dtype", "__getitem__")):
        return False
    return len(getattr(data, "shape", ())) >= 1


def take_rows(data, rows: np.ndarray, axis: int = 0) -> np.ndarray:
    """``data[rows]`` along ``axis`` (rows sorted), reading only those rows."""
    if isinstance(data, np.ndarray):
        # np.take copies a non-C-contiguous array whole first (E[z] by columns: 30x slower)
        return np.take(data, rows, axis=axis) if data.flags.c_contiguous else data[(slice(None),) * axis + (rows,)]
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


class Rows:
    """Rows lo..hi (along ``axis``) of observed data, standing for the whole array: a worker's
    partition of the data plate. It reads only those rows, once, from where the data live (an
    array in memory is copied at pickling; a memmap, an HDF5 dataset or a zarr array is opened on
    the worker), and reading any other row is an error."""

    def __init__(self, data, axis: int, lo: int, hi: int):
        self.shape, self.dtype, self.ndim = tuple(data.shape), np.dtype(data.dtype), len(data.shape)
        self.axis, self.lo, self.hi = axis, lo, hi
        self._rows = None
        self._source = _source(data)
        if self._source is None:
            self._rows = np.array(data[(slice(None),) * axis + (slice(lo, hi),)])

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def rows(self) -> np.ndarray:
        if self._rows is None:
            self._rows = _read(self._source, (slice(None),) * self.axis + (slice(self.lo, self.hi),))
        return self._rows

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_rows": self._rows if self._source is None else None}

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        index = index + (slice(None),) * (self.axis + 1 - len(index))
        sel = index[self.axis]
        if isinstance(sel, slice):
            start, stop, step = sel.indices(self.shape[self.axis])
            ok, sel = self.lo <= start and stop <= self.hi, slice(start - self.lo, stop - self.lo, step)
        else:
            sel = np.asarray(sel)
            ok = sel.size == 0 or (sel.min() >= self.lo and sel.max() < self.hi)
            sel = sel - self.lo
        if not ok:
            raise IndexError(f"rows outside this partition's rows {self.lo}..{self.hi}")
        others = index[:self.axis] + index[self.axis + 1:]
        if isinstance(sel, slice) and sel == slice(0, self.hi - self.lo, 1) and all(
                isinstance(i, slice) and i == slice(None) for i in others):
            return self.held  # all its rows: the same read-only array at every read (memos key on it)
        return np.array(self.rows[index[:self.axis] + (sel,) + index[self.axis + 1:]])

    @property
    def held(self) -> np.ndarray:
        """Its rows, read-only."""
        rows = self.rows
        rows.flags.writeable = False
        return rows

    def astype(self, dtype) -> "Rows":
        if np.dtype(dtype) == self.dtype:
            return self
        out = Rows.__new__(Rows)
        out.__dict__.update(self.__dict__, dtype=np.dtype(dtype), _rows=self.rows.astype(dtype), _source=None)
        return out

    def mapped(self, fn, event: tuple = ()) -> "Rows":
        """Rows of ``fn`` of the data (applied to the rows held; each row's value gains the axes
        ``event``), read with the same global row numbers: a one-hot table of labels."""
        rows = np.asarray(fn(self.rows))
        out = Rows.__new__(Rows)
        out.__dict__.update(self.__dict__, shape=self.shape + tuple(event), ndim=self.ndim + len(event),
                            dtype=rows.dtype, _rows=rows, _source=None)
        return out

    def __array__(self, dtype=None, copy=None):
        raise IndexError(f"the whole array asked of a partition holding rows {self.lo}..{self.hi}")


class Block:
    """Rows lo..hi (along the first axis) of an array that stays where it is (a memmap, an HDF5
    dataset, a zarr array), itself an array out of core: a stream's chunk, read by whoever reads
    its rows (a Dask worker opens the file itself, ``_source``)."""

    def __init__(self, data, lo: int, hi: int):
        self.data, self.lo, self.hi = data, int(lo), int(hi)
        self.shape = (self.hi - self.lo,) + tuple(data.shape[1:])
        self.dtype, self.ndim = np.dtype(data.dtype), len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index):
        index = _shifted(index, self.lo, self.shape[0])
        if isinstance(index[0], slice):
            return np.asarray(self.data[index])
        return take_rows(self.data, index[0])[(slice(None),) + index[1:]]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.data[self.lo:self.hi], dtype=dtype)


def _source(data):
    """How a worker opens ``data`` itself (None: copy the rows into the pickle; so for a view of
    a memmap, whose offset and shape are not the file's)."""
    if isinstance(data, Block):
        inner = _source(data.data)
        return None if inner is None else ("block", inner, data.lo, data.shape[0])
    if isinstance(data, np.memmap) and data.filename is not None and isinstance(data.base, mmap.mmap):
        return ("memmap", data.filename, data.dtype.str, tuple(data.shape), int(data.offset),
                "F" if data.flags.f_contiguous and not data.flags.c_contiguous else "C")
    if type(data).__module__.startswith("h5py"):
        return ("hdf5", data.file.filename, data.name)
    if type(data).__module__.startswith("zarr"):
        return ("zarr", data)
    return None


def _read(source, index) -> np.ndarray:
    kind = source[0]
    if kind == "block":
        return _read(source[1], _shifted(index, source[2], source[3]))
    if kind == "memmap":
        _, filename, dtype, shape, offset, order = source
        return np.array(np.memmap(filename, dtype=dtype, mode="r", shape=shape, offset=offset, order=order)[index])
    if kind == "hdf5":
        import h5py

        with h5py.File(source[1], "r") as f:
            return np.asarray(f[source[2]][index])
    return np.asarray(source[1][index])


def _shifted(index, lo: int, n: int) -> tuple:
    """``index`` into rows lo..lo+n of an array as an index into the whole array."""
    index = index if isinstance(index, tuple) else (index,)
    first = index[0] if index else slice(None)
    if isinstance(first, slice):
        start, stop, step = first.indices(n)
        first = slice(lo + start, lo + stop, step)
    else:
        first = np.asarray(first) % max(n, 1) + lo
    return (first,) + index[1:]


def file_of(data) -> tuple | None:
    """(path, size, modification time in ns) of where out-of-core ``data`` live: the file behind
    a memmap or an HDF5 dataset, or the store of a zarr array on disk (a zip file, or the array's
    folder: its files' total size and latest modification, :func:`_folder`); None for data in
    memory or elsewhere (a zarr array in memory or in a remote store, another object)."""
    path = None
    if isinstance(data, np.memmap):
        path = getattr(data, "filename", None)
    elif type(data).__module__.startswith("h5py"):
        path = data.file.filename
    elif type(data).__module__.startswith("zarr"):
        path = _zarr_path(data)
    return None if path is None else (str(path), *_stat(path))


def _zarr_path(data) -> str | None:
    """The folder of a zarr array in a local store (its metadata and chunks), or the file of a
    zip store; None for other stores."""
    store_path = getattr(data, "store_path", None)
    store = getattr(store_path, "store", None)
    root = getattr(store, "root", None)
    if root is not None:
        return os.path.join(str(root), *[p for p in str(store_path.path).split("/") if p])
    return str(store.path) if type(store).__name__ == "ZipStore" else None


def _folder(path: str) -> tuple[int, int]:
    """(total size, latest modification time in ns) of the files and folders under ``path``: a
    chunk removed or added changes its folder's time, one rewritten its own."""
    size, latest = 0, os.stat(path).st_mtime_ns
    for root, _, files in os.walk(path):
        latest = max(latest, os.stat(root).st_mtime_ns)
        for name in files:
            st = os.stat(os.path.join(root, name))
            size, latest = size + st.st_size, max(latest, st.st_mtime_ns)
    return size, latest


def changed(record: tuple) -> str | None:
    """How the file or store :func:`file_of` recorded differs from what it is now (None: unchanged)."""
    path, size, mtime = record
    try:
        size_now, mtime_now = _stat(path)
    except OSError as err:
        return f"its data file {path!r} cannot be read any more ({err.strerror or err})"
    what = "store" if os.path.isdir(path) else "file"
    if size_now != size:
        return f"its data {what} {path!r} changed size since it was declared ({size} -> {size_now} bytes)"
    if mtime_now != mtime:
        return f"its data {what} {path!r} was written since it was declared"
    return None


def _stat(path: str) -> tuple[int, int]:
    """(size, modification time in ns) of a file, or of a folder's contents (:func:`_folder`)."""
    if os.path.isdir(path):
        return _folder(path)
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def check_files(model) -> None:
    """A DataError naming the first observed node whose out-of-core data changed under the fit:
    its file (:func:`changed`) or its shape (an HDF5 dataset resized)."""
    from ..errors import DataError

    for node in model.nodes.values():
        record = getattr(node, "data_file", None)
        if record is None:
            continue
        why = changed(record)
        if why is None and tuple(node.data.shape) != record_shape(node):
            why = f"its data now have shape {tuple(node.data.shape)}, declared {record_shape(node)}"
        if why is not None:
            raise DataError(f"node '{node.name}': {why}; the fit reads it by rows as it goes: give the node "
                            f"its data again (set_data) to fit what the file holds now")


def record_shape(node) -> tuple:
    return node.plate_shape + tuple(node._data_event_shape())


class Outer(tuple):
    """(x, x x^T) of observed vectors or a design matrix (x, x^2 of scalars with ``square``); the
    second is formed only if something reads it: the factors use x (x) x inside their
    contractions instead. x may stay out of core (a memmap, an HDF5 or zarr array): a minibatch
    reads only its rows."""

    def __new__(cls, x, square: bool = False):
        obj = super().__new__(cls, (x, None))
        obj._outer, obj._square = None, square
        return obj

    def __getitem__(self, i):
        if i in (1, -1):
            if self._outer is None:
                x = np.asarray(tuple.__getitem__(self, 0), float)
                self._outer = x * x if self._square else x[..., :, None] * x[..., None, :]
            return self._outer
        return tuple.__getitem__(self, i)

    def __iter__(self):
        yield self[0]
        yield self[1]

    def __reduce__(self):
        return Outer, (tuple.__getitem__(self, 0), self._square)
