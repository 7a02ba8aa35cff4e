"""Checkpoint files: written atomically, their folder checked before a fit, and matched against
the model they are read into.

A write goes to a temporary file in the checkpoint's folder, which is flushed and fsynced and then
renamed over the old file (``os.replace``), and the folder is fsynced: a crash at any moment leaves
the old file or the new one, never neither (SQLite's and PostgreSQL's write-ahead discipline).
The temporary file is named ``.NAME.PID.XXXXXXXX.tmp`` after the checkpoint and the writing
process; one that a killed writer left is removed by the next write or read of that checkpoint
(:func:`remove_stale`).

A checkpoint carries the model's :func:`fingerprint`: every node's name, family, plates and event
shape, and the fit's method and plan. Read into another model, or resumed by another method, it is
a CheckpointError listing what differs (:func:`differences`).
"""
from __future__ import annotations

import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import IO, Callable

from ..errors import CheckpointError


class CheckpointWarning(UserWarning):
    """A checkpoint could not be written during a fit: the fit goes on, and the file holds the
    last checkpoint that was written."""


def writable(path, who: str = "checkpoint=") -> Path:
    """``path`` if a checkpoint can be written there: its folder exists and takes a new file,
    and the path is not a folder or a device. Else a CheckpointError naming ``who``."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise CheckpointError(f"{who} {str(path)!r}: the folder {str(folder)!r} does not exist")
    if path.exists() and not path.is_file():
        raise CheckpointError(f"{who} {str(path)!r} is not a regular file (a folder or a device): a checkpoint "
                              f"replaces the file at its path")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise CheckpointError(f"{who} {str(path)!r}: the folder {str(folder)!r} takes no new file "
                              f"({err.strerror or err})") from None
    return path


def write_atomic(path, write: Callable[[IO[bytes]], None]) -> None:
    """``write(fh)`` into a temporary file beside ``path``, flushed and fsynced, then renamed
    over ``path``. A failure leaves the file at ``path`` as it was (and no temporary file) and
    raises a CheckpointError saying why."""
    path = Path(path)
    remove_stale(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise CheckpointError(f"cannot write {str(path)!r}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except BaseException as err:
        with _quiet():
            os.unlink(temporary)
        if isinstance(err, OSError):
            raise CheckpointError(f"cannot write {str(path)!r}: {err.strerror or err}; the file there is "
                                  f"unchanged") from None
        raise
    _sync_folder(path.parent)


def remove_stale(path) -> list[str]:
    """Remove the temporary files of the checkpoint at ``path`` (``.NAME.PID.XXXXXXXX.tmp``,
    :func:`write_atomic`'s) whose writing process no longer runs (a writer killed mid-write);
    returns their names. Files of a live process, or named otherwise, are left alone."""
    path = Path(path)
    pattern = re.compile(re.escape(f".{path.name}.") + r"(\d+)\.[A-Za-z0-9_]{8}\.tmp")
    removed = []
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is not None and not _running(int(match.group(1))):
            with _quiet():
                os.unlink(path.parent / name)
                removed.append(name)
    return removed


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user's counts; so does any, where signal 0
    does not test for a process: os.kill ends it on Windows)."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, OSError):  # (PermissionError: another user's process)
        return True
    return True


class _quiet:
    """Ignore an OSError (a temporary file already gone)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, OSError)


def _sync_folder(folder: Path) -> None:
    """fsync the folder, so that the rename itself is on disk (POSIX; a no-op where folders
    cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----- what a checkpoint is of ------------------------------------------------------------------
def fingerprint(model, fit: dict | None = None) -> dict:
    """The model a state belongs to, as plain data: per node its family, plates (name and size),
    event shape and whether it is observed; with ``fit`` (:func:`fit_fingerprint`) what the fit's
    state is laid out by."""
    model.compile()
    nodes = {n.name: {"family": n.family.name, "plates": [[p.name, int(p.size)] for p in n.plates],
                      "event": [int(d) for d in n.event_shape], "observed": bool(n.observed)}
             for n in model.nodes.values()}
    out: dict = {"model": model.name, "nodes": nodes}
    if fit is not None:
        out["fit"] = fit
    return out


def fit_fingerprint(options) -> dict:
    """What a fit's state is laid out by (its :class:`~vmp.inference.options.Options`): the
    method, the subsampling and its data plate, the policies and the monitors, in order."""
    stochastic = options.stochastic
    subsample = None if stochastic is None else stochastic.subsample
    plate = getattr(subsample, "plate_name", None) if stochastic else options.batch.plate
    return {"method": options.method, "subsample": None if subsample is None else type(subsample).__name__,
            "plate": plate, "policies": [type(p).__name__ for p in options.policies],
            "monitors": [] if stochastic is None else [type(m).__name__ for m in stochastic.monitors]}


def differences(saved: dict, current: dict, limit: int = 6) -> list[str]:
    """What differs between a checkpoint's fingerprint and the model's (at most ``limit``
    lines); the fits are compared when both carry one."""
    out: list[str] = []
    old, new = saved.get("nodes", {}), current["nodes"]
    for name in [n for n in old if n not in new]:
        out.append(f"node '{name}' ({old[name]['family']}) is in the file, not in the model")
    for name in [n for n in new if n not in old]:
        out.append(f"node '{name}' ({new[name]['family']}) is in the model, not in the file")
    for name in [n for n in old if n in new]:
        out.extend(_node_differences(name, old[name], new[name]))
    if "fit" in saved and "fit" in current:
        out.extend(_fit_differences(saved["fit"], current["fit"]))
    return out[:limit] + ([f"({len(out) - limit} more)"] if len(out) > limit else [])


def _node_differences(name: str, old: dict, new: dict) -> list[str]:
    out = []
    if old["family"] != new["family"]:
        out.append(f"node '{name}' is a {old['family']} in the file, a {new['family']} in the model")
    if old["plates"] != new["plates"]:
        out.append(f"node '{name}' has plates {_plates(old['plates'])} in the file, {_plates(new['plates'])} "
                   f"in the model")
    if old["event"] != new["event"]:
        out.append(f"node '{name}' has event shape {tuple(old['event'])} in the file, {tuple(new['event'])} in "
                   f"the model")
    if old["observed"] != new["observed"]:
        word = {True: "observed", False: "hidden"}
        out.append(f"node '{name}' is {word[old['observed']]} in the file, {word[new['observed']]} in the model")
    return out


def _fit_differences(old: dict, new: dict) -> list[str]:
    if old["method"] != new["method"]:
        return [f"the file holds a {old['method']} fit, this fit is {new['method']}"]
    words = {"subsample": "subsampling", "plate": "data plate", "policies": "policies", "monitors": "monitors"}
    return [f"the file's {word} {old.get(key)!r}, this fit's {new.get(key)!r}"
            for key, word in words.items() if old.get(key) != new.get(key)]


def _plates(plates: list) -> str:
    return "(" + ", ".join(f"{name}: {size}" for name, size in plates) + ")"


def check(saved: dict | None, current: dict, path, who: str = "") -> None:
    """A CheckpointError when the fingerprint ``saved`` (None: a file without one) is not the
    model's ``current`` one; ``who`` prefixes the message (``resume=: ``)."""
    if saved is None:
        return
    found = differences(saved, current)
    if found:
        where = "this result" if path is None else repr(str(path))
        raise CheckpointError(f"{who}{where} is a checkpoint of another model or fit "
                              f"(model '{saved.get('model')}'): " + "; ".join(found))


def readable(path) -> None:
    """A CheckpointError unless ``path`` is a file holding a zip archive (an ``.npz``; a
    truncated archive has no central directory and is refused here)."""
    path = Path(path)
    remove_stale(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint at {str(path)!r}" + (" (a folder)" if path.is_dir() else ""))
    if not zipfile.is_zipfile(path):
        raise CheckpointError(f"{str(path)!r} is not a vmp checkpoint: not an .npz archive (a truncated file, or "
                              f"another kind of file)")


class reading:
    """Turn what reading a damaged or foreign file raises (a truncated or corrupt archive, a
    missing entry, bad JSON, arrays whose moments cannot be formed) into a CheckpointError
    naming ``path``."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None or issubclass(kind, CheckpointError) or not issubclass(kind, Exception):
            return False
        if issubclass(kind, FileNotFoundError):
            raise CheckpointError(f"no checkpoint at {str(self.path)!r}") from None
        raise CheckpointError(f"{str(self.path)!r} is not a readable vmp checkpoint (damaged, or another kind "
                              f"of file): {kind.__name__}: {value}"[:600]) from None
