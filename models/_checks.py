"""Input checks shared by the model builders: errors name the builder and the argument."""
from __future__ import annotations

import numbers
import warnings

import numpy as np

import vmp
from vmp.families.constraints import LARGEST_REAL
from vmp.graph.data import chunks


def floats(name: str, what: str, data) -> np.ndarray:
    """``data`` as an array of floats, or a DataError naming the builder and the argument (a
    ragged list, or entries that are not numbers)."""
    try:
        return np.asarray(data, dtype=float)
    except (TypeError, ValueError) as err:
        raise vmp.DataError(f"{name}: {what} must be numbers in a rectangular array ({err})") from None


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
    arr = floats(name, what, data)
    if arr.size == 0:
        raise vmp.DataError(f"{name}: {what} is empty")
    if not np.all(np.isfinite(arr)):
        raise vmp.DataError(f"{name}: {what} contains NaN or inf")
    if positive and not np.all(arr > 0):
        raise vmp.DataError(f"{name}: {what} must be positive")
    return arr


#: the largest count a builder takes (components, topics, states, factors, rows)
LARGEST_COUNT = 2 ** 31


def count(name: str, what: str, k, minimum: int = 1) -> int:
    if not _whole(k) or k < minimum:
        raise vmp.ShapeError(f"{name}: {what} must be an integer >= {minimum}, got {k!r}")
    if k > LARGEST_COUNT:
        raise vmp.ShapeError(f"{name}: {what} = {k!r} is more than {LARGEST_COUNT:,}")
    return int(k)


def _whole(value) -> bool:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, numbers.Real)):
        return False
    return bool(np.isfinite(value)) and int(value) == value


def same_length(name: str, **arrays) -> None:
    scalars = [k for k, v in arrays.items() if np.ndim(v) == 0]
    if scalars:
        raise vmp.ShapeError(f"{name}: {', '.join(scalars)} must be arrays of one entry per row, got a single number")
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) != 1:
        raise vmp.ShapeError(f"{name}: {', '.join(lengths)} must have one length, got {lengths}")


def matrix(name: str, what: str, data) -> np.ndarray:
    arr = values(name, what, data)
    if arr.ndim != 2:
        raise vmp.ShapeError(f"{name}: {what} must be a 2-D array (N x D), got shape {arr.shape}")
    return arr


def lazy_matrix(name: str, what: str, data):
    """``data`` as it is when it stays out of core (a memmap, an HDF5 or zarr array: the node
    checks its values block by block), else :func:`matrix`."""
    from vmp.graph.data import is_lazy

    if not is_lazy(data):
        return matrix(name, what, data)
    if len(data.shape) != 2:
        raise vmp.ShapeError(f"{name}: {what} must be a 2-D array (N x D), got shape {tuple(data.shape)}")
    return data


def positive(name: str, **numbers) -> None:
    """Each given number (None allowed: not fixed) must be positive and finite."""
    for what, v in numbers.items():
        if v is not None and not (np.isscalar(v) and np.isfinite(v) and v > 0):
            raise vmp.HyperparameterError(f"{name}: {what} must be a positive number, got {v!r}")


def missing(name: str, what: str, data, mask=None) -> tuple[np.ndarray, np.ndarray | None]:
    """(data with missing entries at 0, the mask True where observed, or None when nothing is
    missing): NaN entries are missing, as are those where ``mask`` (data's shape, booleans) is
    False. inf is an error; so is data with no observed entry."""
    arr = floats(name, what, data)
    if arr.size == 0:
        raise vmp.DataError(f"{name}: {what} is empty")
    if np.isinf(arr).any():
        raise vmp.DataError(f"{name}: {what} contains inf (NaN marks a missing entry)")
    seen = ~np.isnan(arr)
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise vmp.DataError(f"{name}: mask must be booleans (True where observed), got dtype {mask.dtype}")
        if mask.shape != arr.shape:
            raise vmp.ShapeError(f"{name}: mask must have the shape of {what} {arr.shape}, got {mask.shape}")
        seen = seen & mask
    representable(name, what, np.where(seen, arr, 0.0))  # (a masked entry is no data: a sentinel may be huge)
    if seen.all():
        return arr, None
    if not seen.any():
        raise vmp.DataError(f"{name}: {what} has no observed entry")
    return np.where(seen, arr, 0.0), seen


def representable(name: str, what: str, arr: np.ndarray) -> None:
    """A DataError when an entry's square, which the moments of a Gaussian hold, would overflow
    (``constraints.LARGEST_REAL``)."""
    with np.errstate(invalid="ignore"):
        big = np.nanmax(np.abs(arr), initial=0.0)
    if big >= LARGEST_REAL:
        raise vmp.DataError(f"{name}: {what} has entries of magnitude up to {big:.3g}; their squares "
                            f"overflow float64 (the limit is {LARGEST_REAL:g}): rescale the data")


#: orders of magnitude between a fixed precision and its data-scaled value beyond which a
#: builder warns (a factor of 100 in standard deviation)
PRIOR_SCALE_LIMIT = 4.0


class PriorScaleWarning(UserWarning):
    """A fixed prior is many orders of magnitude away from the scale of the data."""


def prior_scale(name: str, what: str, value: float, scaled) -> None:
    """Warn when the fixed precision ``value`` is more than PRIOR_SCALE_LIMIT orders of magnitude
    from ``scaled``, the precision the data's scale suggests (one per element: the farthest)."""
    ratios = np.log10(value / np.atleast_1d(np.asarray(scaled, float)))
    worst = int(np.argmax(np.abs(ratios)))
    orders, scaled = float(ratios[worst]), float(np.atleast_1d(scaled)[worst])
    if abs(orders) > PRIOR_SCALE_LIMIT:
        side = "tighter" if orders > 0 else "looser"
        warnings.warn(f"{name}: {what}={value:g} is {abs(orders):.1f} orders of magnitude {side} than the data's "
                      f"scale suggests ({scaled:.3g}); the fit will follow this prior, not the data. Leave "
                      f"{what} out to learn it, or rescale the data", PriorScaleWarning, stacklevel=4)


def targets(name: str, data) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`missing` for a 1-D array of regression targets."""
    data = floats(name, "targets", data)
    if data.ndim != 1:
        raise vmp.ShapeError(f"{name}: targets must be a 1-D array, got shape {data.shape}")
    return missing(name, "targets", data)


def moments(x: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The mean and covariance of the rows of ``x`` (N x D), from the observed entries where some
    are missing (pairwise covariances; the variances alone when those are not positive definite),
    plus 1e-6 I; the identity for one row."""
    n, d = x.shape
    if mask is None:
        cov = np.atleast_2d(np.cov(x, rowvar=False)) + 1e-6 * np.eye(d) if n > 1 else np.eye(d)
        return x.mean(0), cov
    data = np.ma.masked_array(x, ~mask)
    mean = np.asarray(data.mean(0).filled(0.0))
    cov = np.atleast_2d(np.ma.cov(data, rowvar=False, allow_masked=True).filled(np.nan))
    if not np.all(np.isfinite(cov)) or np.linalg.eigvalsh(cov).min() <= 0:
        var = np.diag(cov)
        cov = np.diag(np.where(np.isfinite(var) & (var > 0), var, 1.0))
    return mean, cov + 1e-6 * np.eye(d)


def streamed_moments(name: str, what: str, data, block: int = 1 << 16) -> tuple[np.ndarray, np.ndarray] | None:
    """``moments`` of rows that stay out of core (a memmap, an HDF5 dataset, a zarr array: vmp's
    lazy data), read ``block`` rows at a time in two passes (the mean, then the scatter about
    it), or None when an entry is NaN (missing values: the caller reads the data into memory).
    inf is an error."""
    n, d = data.shape
    if n == 0:
        raise vmp.DataError(f"{name}: {what} is empty")
    total = np.zeros(d)
    for rows in chunks(data, block):
        rows = np.asarray(rows, dtype=float)
        if np.isinf(rows).any():
            raise vmp.DataError(f"{name}: {what} contains inf (NaN marks a missing entry)")
        if np.isnan(rows).any():
            return None
        representable(name, what, rows)
        total += rows.sum(0)
    if n == 1:
        return total, np.eye(d)
    mean, scatter = total / n, np.zeros((d, d))
    for rows in chunks(data, block):
        centred = np.asarray(rows, dtype=float) - mean
        scatter += centred.T @ centred
    return mean, scatter / (n - 1) + 1e-6 * np.eye(d)
