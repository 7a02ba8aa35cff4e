"""Data files for the command line: CSV / TSV / whitespace text and Parquet tables, the choice of
columns (``--columns``) and the renumbering of id columns into contiguous 0-based indices.

Everything a user should know about how a file was read is said as a :class:`DataWarning`
(columns left out, ids renumbered, an id-like column fitted as a dimension); anything that
cannot be read is a :class:`TableError` naming the file, the line (or row) and the column.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from collections.abc import Iterator
from pathlib import Path

import numpy as np


class TableError(Exception):
    """A data file that cannot be used; the message names the file and the place."""


class DataWarning(UserWarning):
    """Something the reader did that changes what is fitted (the command line prints it)."""


def warn(message: str) -> None:
    warnings.warn(message, DataWarning, stacklevel=2)


#: file suffixes read as Parquet (through pandas, with pyarrow or fastparquet)
PARQUET = (".parquet", ".pq")


@dataclass
class Table:
    """Columns of a data file, each kept as read (strings from a text file) until a model asks
    for it as numbers. ``rows[i]`` is where row i is in the file (a line of a text file, a row
    of a Parquet table), for messages."""

    path: Path
    names: list[str]
    cells: list[np.ndarray]
    rows: list[int]
    header: list[str] | None = None
    where: str = "line"
    _numbers: dict = field(default_factory=dict, repr=False)

    @property
    def lines(self) -> list[int]:
        return self.rows

    def place(self, i: int) -> str:
        return f"data file '{self.path}', {self.where} {self.rows[i]}"

    def numbers(self, j: int, missing: bool = False) -> np.ndarray:
        """Column j as finite floats; a TableError names the first cell that is not one. With
        ``missing``, an empty cell or a MISSING token (NA, NaN, ...) is NaN: a missing value
        (looked for only when the column does not read as finite numbers)."""
        if (j, missing) not in self._numbers:
            col = self.cells[j]
            values, absent = _floats(col), None
            if missing and (values is None or not np.isfinite(values).all()):
                absent = np.isin(np.char.lower(np.char.strip(col.astype(str))), MISSING)
                col = np.where(absent, "nan", col) if absent.any() else col
                values = _floats(col)
            ok = None if values is None else np.isfinite(values) | (False if absent is None else absent)
            if values is None or not ok.all():
                i = _first_bad(col) if values is None else int(np.flatnonzero(~ok)[0])
                kind = "finite number" if values is not None else "number"
                also = " or missing (an empty cell, NA)" if missing else ""
                raise TableError(f"{self.place(i)}, column {j + 1}: '{self.cells[j][i]}' is not a {kind}{also}")
            self._numbers[(j, missing)] = values
        return self._numbers[(j, missing)]

    @property
    def values(self) -> np.ndarray:
        """Every column as numbers (rows x columns)."""
        return np.column_stack([self.numbers(j) for j in range(len(self.names))])

    def index(self, spec: str) -> int:
        """The column a ``--columns`` entry names: a header name, or a 1-based position."""
        if spec in self.names:
            return self.names.index(spec)
        lowered = [n.lower() for n in self.names]
        if spec.lower() in lowered:
            return lowered.index(spec.lower())
        if spec.isdigit() and 1 <= int(spec) <= len(self.names):
            return int(spec) - 1
        raise TableError(f"--columns: data file '{self.path}' has no column '{spec}'; its columns "
                         f"are {', '.join(repr(n) for n in self.names)} (or give positions 1 to "
                         f"{len(self.names)})")

    def _find(self, prefixes: tuple[str, ...], position: int, taken: set[int]) -> int:
        if self.header:
            for i, h in enumerate(self.names):
                if i not in taken and any(h.lower().startswith(p) for p in prefixes):
                    return i
        free = [i for i in range(len(self.names)) if i not in taken]
        return position if position not in taken else free[0]

    def pick(self, roles: list[tuple[str, tuple[str, ...]]], columns: list[str] | None,
             model: str) -> dict[str, tuple[str, np.ndarray]]:
        """One column per role: named by ``--columns`` (in the order of ``roles``), else by a
        header starting with one of the role's prefixes, else by position. Warns about the
        columns left out."""
        if len(self.names) < len(roles):
            raise TableError(f"data file '{self.path}' has {len(self.names)} column(s); "
                             f"{model} needs {len(roles)}: {', '.join(r for r, _ in roles)}")
        if columns is not None:
            if len(columns) != len(roles):
                raise TableError(f"--columns: {model} reads {len(roles)} columns "
                                 f"({', '.join(r for r, _ in roles)}), got {len(columns)}")
            chosen = [self.index(c) for c in columns]
        else:
            chosen = []
            for position, (_, prefixes) in enumerate(roles):
                chosen.append(self._find(prefixes, position, set(chosen)))
        self.left_out(chosen, model, ", ".join(f"{self.names[j]} as {r}" for j, (r, _) in zip(chosen, roles)))
        return {r: (self.names[j], self.numbers(j)) for j, (r, _) in zip(chosen, roles)}

    def left_out(self, chosen: list[int], model: str, reads: str) -> None:
        unused = [n for j, n in enumerate(self.names) if j not in chosen]
        if unused:
            warn(f"data file '{self.path.name}': column(s) {', '.join(repr(n) for n in unused)} "
                 f"not used ({model} reads {reads}); choose columns with --columns")


#: cells read as missing values where a model takes them (lower case, stripped)
MISSING = ("", "na", "nan", "n/a", "null", "none", "?")


def _floats(col: np.ndarray) -> np.ndarray | None:
    try:
        return np.asarray(col, dtype=float)
    except (TypeError, ValueError):
        return None


def _first_bad(col: np.ndarray) -> int:
    for i, v in enumerate(col):
        try:
            float(v)
        except (TypeError, ValueError):
            return i
    return 0


# ----- reading ---------------------------------------------------------------------------------
def _split(line: str, delimiter: str | None) -> list[str]:
    fields = line.split(delimiter) if delimiter else line.split()
    return [f.strip().strip('"').strip("'") for f in fields]


def _sniff(line: str) -> str | None:
    for d in (",", ";", "\t", "|"):
        if d in line:
            return d
    return None  # whitespace


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def read_table(path, *, min_columns: int = 1, what: str = "data") -> Table:
    """Read a table from a CSV / TSV / semicolon / whitespace separated text file, or a Parquet
    file (``.parquet``, ``.pq``; needs pandas with pyarrow or fastparquet).

    Text: blank lines and lines starting with ``#`` are skipped; the first row may be a header.
    Cells are turned into numbers when a model reads their column (:meth:`Table.numbers`).
    """
    p = _checked_path(path, what)
    table = _read_parquet(p) if p.suffix.lower() in PARQUET else next(_text_blocks(p, None, what))
    _check_width(table, min_columns, what)
    return table


def read_blocks(path, rows: int, *, min_columns: int = 1, what: str = "data") -> Iterator[Table]:
    """The table of :func:`read_table` as consecutive tables of ``rows`` rows each, read one at
    a time (a text file line by line, a Parquet file by pyarrow in batches of ``rows``): a file
    larger than memory is never held whole. Each block's ``rows`` give its places in the file."""
    p = _checked_path(path, what)
    blocks = _parquet_blocks(p, rows) if p.suffix.lower() in PARQUET else _text_blocks(p, rows, what)
    for table in blocks:
        _check_width(table, min_columns, what)
        yield table


def _checked_path(path, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise TableError(f"{what} file '{p}' not found")
    if p.is_dir():
        raise TableError(f"{what} file '{p}' is a directory")
    return p


def _check_width(table: Table, min_columns: int, what: str) -> None:
    if len(table.names) < min_columns:
        raise TableError(f"{what} file '{table.path}' has {len(table.names)} column(s); it needs at least "
                         f"{min_columns}")


def _text_lines(p: Path, what: str) -> Iterator[tuple[int, str]]:
    """(line number, stripped line) of the data lines of a text file, read lazily."""
    try:
        with open(p, encoding="utf-8-sig") as fh:
            for number, raw in enumerate(fh, start=1):
                line = raw.strip()
                if line and not line.startswith("#"):
                    yield number, line
    except UnicodeDecodeError:
        raise TableError(f"{what} file '{p}' is not a text file (expected numbers separated by "
                         f"commas, tabs or spaces, or a .parquet file)") from None
    except OSError as err:
        raise TableError(f"cannot read {what} file '{p}': {err.strerror or err}") from None


def _text_blocks(p: Path, rows: int | None, what: str) -> Iterator[Table]:
    """Tables of ``rows`` data rows of a text file (None: one table of all of them)."""
    header, delimiter, width, seen = None, None, None, False
    block: list[list[str]] = []
    lines: list[int] = []
    for number, line in _text_lines(p, what):
        if width is None:
            delimiter = _sniff(line)
        fields = _split(line, delimiter)
        if width is None and header is None and not all(_is_number(f) for f in fields):
            header, width = fields, len(fields)
            continue
        if width is not None and len(fields) != width:
            raise TableError(f"{what} file '{p}', line {number}: {len(fields)} column(s), expected "
                             f"{width} like the first row")
        width = len(fields)
        block.append(fields)
        lines.append(number)
        if rows is not None and len(block) == rows:
            yield _text_table(p, block, lines, header, width)
            block, lines, seen = [], [], True
    if block:
        yield _text_table(p, block, lines, header, width)
    elif not seen:
        raise TableError(f"{what} file '{p}' has no data rows")


def _text_table(p: Path, block: list, lines: list, header, width: int) -> Table:
    cells = np.array(block, dtype=object)
    names = header or [f"column {j + 1}" for j in range(width)]
    return Table(p, names, [cells[:, j] for j in range(width)], lines, header)


def _read_parquet(p: Path) -> Table:
    try:
        import pandas as pd

        frame = pd.read_parquet(p)
    except ImportError as err:
        raise TableError(f"reading the Parquet file '{p}' needs pandas and pyarrow (pip install "
                         f"'vmp[parquet]'): {err}") from None
    except Exception as err:  # pyarrow's and fastparquet's own errors
        raise TableError(f"cannot read the Parquet file '{p}': {type(err).__name__}: {err}") from None
    if len(frame) == 0:
        raise TableError(f"data file '{p}' has no data rows")
    names = [str(c) for c in frame.columns]
    cells = [frame[c].to_numpy() for c in frame.columns]
    return Table(p, names, cells, list(range(1, len(frame) + 1)), names, where="row")


def _parquet_blocks(p: Path, rows: int) -> Iterator[Table]:
    try:
        import pyarrow.parquet as pq

        batches = pq.ParquetFile(p).iter_batches(batch_size=rows)
    except ImportError as err:
        raise TableError(f"reading the Parquet file '{p}' a block at a time needs pyarrow (pip install "
                         f"'vmp[parquet]'): {err}") from None
    except Exception as err:
        raise TableError(f"cannot read the Parquet file '{p}': {type(err).__name__}: {err}") from None
    first, seen = 1, False
    for batch in batches:
        if batch.num_rows == 0:
            continue
        names = [str(c) for c in batch.schema.names]
        cells = [c.to_numpy(zero_copy_only=False) for c in batch.columns]
        yield Table(p, names, cells, list(range(first, first + batch.num_rows)), names, where="row")
        first, seen = first + batch.num_rows, True
    if not seen:
        raise TableError(f"data file '{p}' has no data rows")


# ----- ids ---------------------------------------------------------------------------------------
def renumber(table: Table, name: str, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous 0-based indices for the ids of a column, and the ids (``ids[index]``).

    Ids that are already 0, 1, ..., n-1 are kept as they are; others (1-based, sparse, negative)
    are renumbered in increasing order, with a warning saying so.
    """
    bad = values != np.round(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableError(f"{table.place(i)}: column '{name}' must hold integer ids, found {values[i]:g}")
    ids, index = np.unique(values.astype(np.int64), return_inverse=True)
    if ids[0] != 0 or ids[-1] != ids.size - 1:
        warn(f"column '{name}': {ids.size:,} distinct ids from {ids[0]:,} to {ids[-1]:,} renumbered "
             f"0 to {ids.size - 1:,} (a --report directory gets ids.json, mapping them back)")
    return index.reshape(values.shape), ids


_ID_NAME = re.compile(r"^(id|index|idx|row|rowid|row_id|#)$|(_id|Id|ID)$")


def looks_like_id(name: str) -> bool:
    """A column named like an id (id, index, user_id, movieId...)."""
    return bool(_ID_NAME.search(name.strip()))


def counts_rows(values: np.ndarray) -> bool:
    """Values 0, 1, ..., n-1 or 1, 2, ..., n in order: a row number."""
    n = values.size
    return n > 2 and (np.array_equal(values, np.arange(n)) or np.array_equal(values, np.arange(1, n + 1)))
