"""Chunks of a data plate from where the data are: arrays in memory or out of core, iterators,
and CSV or Parquet files read a block of rows at a time.

``chunks(source, rows, model, plate)`` yields {observed node name: rows of its data}:

- a dict of arrays ({name: array}; numpy arrays, memmaps, HDF5 datasets, zarr arrays: anything
  with ``shape`` and slicing) or one such array (for the plate's only observed node): blocks of
  ``rows`` rows, each read alone (``vmp.graph.data.chunks``), or with ``lazy`` a ``Block`` view
  of the rows of an array out of core, which the chunk's fit reads where it runs (the Chunked
  executor here, a DaskExecutor's workers from the file);
- an iterable of such dicts or arrays: each item is a chunk, read when the stream asks for it;
- for a plate whose data lie on a linked plate (documents of tokens, ``links``), a dict of
  arrays gives ``rows`` whole documents per chunk, with their tokens;
- a path to a CSV/TSV/whitespace text file or a Parquet file: ``rows`` lines at a time (a text
  file's first line may be a header; a Parquet file is read by ``pyarrow`` in batches of
  ``rows``). ``columns={node: [column names or 0-based positions]}`` says which columns feed
  which node (default: every column to the plate's only observed node).
"""
from __future__ import annotations

import itertools
from pathlib import Path
from collections.abc import Iterable, Iterator

import numpy as np

from ..errors import DataError, OptionError
from ..graph.data import Block, is_lazy
from ..graph.data import chunks as blocks
from ..tables import PARQUET, _is_number, _sniff, _split


def chunks(source, rows: int | None, model, plate: str, columns: dict | None = None,
           lazy: bool = False, links: dict | None = None) -> Iterator[dict]:
    """The chunks of ``source`` for the stream of ``model``'s ``plate`` (see the module); with
    ``lazy`` an array out of core gives ``Block`` views of its rows instead of their values.
    ``links``: {gather index name: linked plate} of a plate whose data lie on a linked plate
    (documents of tokens): arrays then give ``rows`` whole documents per chunk."""
    if isinstance(source, (str, Path)):
        if links:
            raise OptionError(f"model.stream: a data file's blocks of rows may split the elements of plate "
                              f"'{plate}' (its data lie on {sorted(set(links.values()))}); give arrays or an "
                              f"iterable of chunks of whole elements")
        yield from _file(Path(source), _rows(rows), model, plate, columns)
        return
    if isinstance(source, dict) and links:
        yield from _documents(source, _rows(rows), model, plate, next(iter(links)))
        return
    if isinstance(source, dict) or isinstance(getattr(source, "shape", None), tuple):  # an array
        yield from _arrays(_named(source, model, plate), _rows(rows), lazy)
        return
    if not isinstance(source, Iterable):
        raise DataError(f"model.stream: cannot read chunks from a {type(source).__name__}; give arrays, an "
                        f"iterable of chunks, or a CSV/Parquet file")
    for item in source:
        yield _named(item, model, plate)


def _rows(rows) -> int:
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise OptionError(f"model.stream: rows= (the rows of a chunk) must be a positive integer, got {rows!r}")
    return int(rows)


def _observed(model, plate: str) -> list:
    return [n for n in model.nodes.values() if n.observed and n.plates and n.plates[0].name == plate]


def _named(item, model, plate: str) -> dict:
    """``item`` as {name: array}: a dict as it is, an array for the plate's only observed node."""
    if isinstance(item, dict):
        return item
    nodes = _observed(model, plate)
    if len(nodes) != 1:
        raise DataError(f"model.stream: an array chunk needs one observed node on plate '{plate}'; there are "
                        f"{[n.name for n in nodes]}: give {{name: rows}}")
    return {nodes[0].name: item}


def _arrays(arrays: dict, rows: int, lazy: bool) -> Iterator[dict]:
    lengths = {k: int(np.shape(v)[0]) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(f"model.stream: the arrays have different numbers of rows: {lengths}")
    n = next(iter(lengths.values()), 0)
    readers = {k: _views(v, rows, n) if lazy and is_lazy(v) else blocks(v, rows) for k, v in arrays.items()}
    for _ in range(0, n, rows):
        yield {k: next(r) for k, r in readers.items()}


def _documents(arrays: dict, rows: int, model, plate: str, name: str) -> Iterator[dict]:
    """Chunks of ``rows`` elements of ``plate`` (documents) with the rows of the linked plate
    (their tokens) whose gather index ``name`` points to them: the plate's own rows in order when
    it has observed nodes (the index then gives positions, shifted to the chunk's), else the
    distinct ids of the index in increasing order."""
    if name not in arrays:
        raise DataError(f"model.stream: the arrays have no '{name}' (each row's element of plate '{plate}')")
    index = np.asarray(arrays[name])
    own = {k for k in arrays if k in model.nodes and model.nodes[k].plates and model.nodes[k].plates[0].name == plate}
    ids = np.arange(np.shape(arrays[next(iter(own))])[0]) if own else np.unique(index)
    for lo in range(0, ids.size, rows):
        first, last = ids[lo], ids[min(lo + rows, ids.size) - 1]
        keep = (index >= first) & (index <= last)
        chunk = {k: v[lo:lo + rows] if k in own else np.asarray(v)[keep] for k, v in arrays.items()}
        if own:
            chunk[name] = index[keep] - lo
        yield chunk


def _views(data, rows: int, n: int) -> Iterator[Block]:
    for lo in range(0, n, rows):
        yield Block(data, lo, min(lo + rows, n))


def _file(path: Path, rows: int, model, plate: str, columns: dict | None) -> Iterator[dict]:
    if not path.is_file():
        raise DataError(f"model.stream: data file '{path}' not found")
    tables = _parquet(path, rows) if path.suffix.lower() in PARQUET else _text(path, rows)
    first = True
    for names, values in tables:
        if first:
            split = _columns(path, names, model, plate, columns)
            first = False
        yield {node.name: _as_data(node, values[:, cols]) for node, cols in split}


def _text(path: Path, rows: int) -> Iterator[tuple[list, np.ndarray]]:
    """(column names, a block of ``rows`` lines as floats) from a text file, one block read at
    a time (``np.loadtxt`` on the lines; the first line a header when it is not all numbers)."""
    with open(path, encoding="utf-8-sig") as fh:
        lines = (line for line in fh if line.strip() and not line.lstrip().startswith("#"))
        head = next(lines, None)
        if head is None:
            return
        delimiter = _sniff(head.strip())
        fields = _split(head.strip(), delimiter)
        numeric = all(_is_number(f) for f in fields)
        names = [f"column {j + 1}" for j in range(len(fields))] if numeric else fields
        if numeric:
            lines = itertools.chain([head], lines)
        while True:
            block = list(itertools.islice(lines, rows))
            if not block:
                return
            try:
                values = np.loadtxt(block, delimiter=delimiter, ndmin=2)
            except ValueError as err:
                raise DataError(f"model.stream: data file '{path}': {err}") from None
            yield names, values


def _parquet(path: Path, rows: int) -> Iterator[tuple[list, np.ndarray]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise DataError(f"model.stream: reading the Parquet file '{path}' a block at a time needs pyarrow "
                        f"(pip install 'vmp[parquet]'): {err}") from None
    for batch in pq.ParquetFile(path).iter_batches(batch_size=rows):
        yield list(batch.schema.names), np.column_stack([c.to_numpy(zero_copy_only=False) for c in batch.columns])


def _columns(path: Path, names: list, model, plate: str, columns: dict | None) -> list:
    """[(node, column positions)] for the file's ``names``."""
    if columns is None:
        nodes = _observed(model, plate)
        if len(nodes) != 1:
            raise OptionError(f"model.stream: data file '{path}' feeds {[n.name for n in nodes]}: say which "
                              f"columns go where with columns={{node: [columns]}}")
        return [(nodes[0], list(range(len(names))))]
    out = []
    for name, cols in columns.items():
        cols = [cols] if isinstance(cols, (str, int)) else list(cols)
        where = []
        for c in cols:
            if isinstance(c, str) and c in names:
                where.append(names.index(c))
            elif isinstance(c, (int, np.integer)) and 0 <= c < len(names):
                where.append(int(c))
            else:
                raise DataError(f"model.stream: data file '{path}' has no column {c!r} (columns: {names})")
        out.append((model[name], where))
    return out


def _as_data(node, values: np.ndarray) -> np.ndarray:
    """Columns as the node's data: (rows,) + its data event, integers for a node of counts or
    categories (a DataError names a cell that is not one)."""
    event = node._data_event_shape()
    values = values.reshape((values.shape[0],) + tuple(event)) if event else values.reshape(-1)
    if node.data is not None and np.asarray(node.data).dtype.kind in "iub":
        whole = np.round(values)
        if not np.all(whole == values):
            raise DataError(f"node '{node.name}': a chunk's values are not all whole numbers")
        values = whole.astype(np.int64)
    return np.ascontiguousarray(values)
