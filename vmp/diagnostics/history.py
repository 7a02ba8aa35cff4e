"""The recorded history of a fit as plain data: series for plots, a JSON-ready dict.

Data-driven: besides ``result.elbo`` (index 0 the initial bound, index t after sweep t), any
1-D numeric array of the same length in ``result.extra`` is a history series. Series named in
:data:`X_AXES` (data accesses, time, ...) are alternative x-axes, the rest are quantities.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["X_AXES", "series", "history_dict"]

#: history fields that count work done (plotted on the x-axis, not as quantities)
X_AXES = ("accesses", "data_accesses", "epochs", "seconds", "time", "elapsed")


def series(result) -> dict[str, np.ndarray]:
    """``{"elbo": ..., <extra history arrays>}``: 1-D float arrays aligned with the ELBO."""
    elbo = np.asarray(result.elbo, dtype=float).ravel()
    out = {"elbo": elbo}
    for key, value in sorted((getattr(result, "extra", None) or {}).items()):
        arr = np.asarray(value) if isinstance(value, (list, tuple, np.ndarray)) else None
        if arr is not None and arr.ndim == 1 and arr.dtype.kind in "iuf" and arr.size == elbo.size:
            out[str(key)] = arr.astype(float)
    return out


def _plain(value):
    """JSON-ready: numpy scalars and arrays to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def history_dict(result) -> dict:
    """The fit's history and convergence state as a JSON-serializable dict.

    Keys: elbo (list; non-finite values as null), iterations, converged, message, seconds,
    final_elbo, decrease (None or {node, amount}), and every extra history series by name.
    """
    out = {
        "elbo": _plain(np.asarray(result.elbo, dtype=float)),
        "iterations": int(result.iterations),
        "converged": bool(result.converged),
        "message": str(result.message),
        "seconds": _plain(getattr(result, "seconds", None)),
        "final_elbo": _plain(result.final_elbo),
        "decrease": _plain(getattr(result, "decrease", None)),
    }
    for key, arr in series(result).items():
        if key != "elbo":
            out.setdefault(key, _plain(arr))
    return out
