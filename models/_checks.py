"""Input checks shared by the model builders: errors name the builder and the argument."""
from __future__ import annotations

import numpy as np

import vmp


def indices(name: str, what: str, values) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise vmp.ShapeError(f"{name}: {what} must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        raise vmp.DataError(f"{name}: {what} is empty")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise vmp.DataError(f"{name}: {what} must be integer indices")
    elif arr.dtype.kind not in "iu":
        raise vmp.DataError(f"{name}: {what} must be integer indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.min() < 0:
        raise vmp.DataError(f"{name}: {what} has negative indices")
    return arr


def values(name: str, what: str, data, positive: bool = False) -> np.ndarray:
    arr = np.asarray(data, dtype=float)
    if arr.size == 0:
        raise vmp.DataError(f"{name}: {what} is empty")
    if not np.all(np.isfinite(arr)):
        raise vmp.DataError(f"{name}: {what} contains NaN or inf")
    if positive and not np.all(arr > 0):
        raise vmp.DataError(f"{name}: {what} must be positive")
    return arr


def count(name: str, what: str, k, minimum: int = 1) -> int:
    if int(k) != k or k < minimum:
        raise vmp.ShapeError(f"{name}: {what} must be an integer >= {minimum}, got {k!r}")
    return int(k)


def same_length(name: str, **arrays) -> None:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise vmp.ShapeError(f"{name}: {', '.join(lengths)} must have one length, got {lengths}")


def matrix(name: str, what: str, data) -> np.ndarray:
    arr = values(name, what, data)
    if arr.ndim != 2:
        raise vmp.ShapeError(f"{name}: {what} must be a 2-D array (N x D), got shape {arr.shape}")
    return arr


def positive(name: str, **numbers) -> None:
    """Each given number (None allowed: not fixed) must be positive and finite."""
    for what, v in numbers.items():
        if v is not None and not (np.isscalar(v) and np.isfinite(v) and v > 0):
            raise vmp.HyperparameterError(f"{name}: {what} must be a positive number, got {v!r}")
