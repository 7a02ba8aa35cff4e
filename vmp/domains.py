"""The domains of the arguments of a fit's option objects (subsamplers, schedules, policies,
monitors): each check returns the value in its type, or raises an OptionError that names the
argument as the user wrote it (``Minibatch(local_tol=)``) and its domain."""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import numpy as np

from .errors import OptionError


def refuse(who: str, domain: str, value: Any) -> OptionError:
    """The OptionError "``who`` takes ``domain``, got ``value``"."""
    return OptionError(f"{who} takes {domain}, got {value!r}"[:400])


def real(value) -> bool:
    """Whether ``value`` is a real number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def integer(who: str, value, minimum: int = 0) -> int:
    """An integer >= ``minimum`` (an integral float such as 4.0 too; not a bool)."""
    if not real(value) or not math.isfinite(value) or int(value) != value or value < minimum:
        raise refuse(who, f"an integer >= {minimum}", value)
    return int(value)


def number(who: str, value, low: float = -math.inf, high: float = math.inf, *, above: bool = False,
           below: bool = False, finite: bool = True) -> float:
    """A real number in [low, high] (``above``: low excluded; ``below``: high excluded); never
    NaN, and finite unless ``finite`` is False."""
    ok = real(value) and not math.isnan(value) and (math.isfinite(value) or not finite)
    ok = ok and (value > low if above else value >= low) and (value < high if below else value <= high)
    if not ok:
        left, right = "(" if above else "[", ")" if below else "]"
        if low == -math.inf and high == math.inf:
            domain = "a finite number" if finite else "a number (not NaN)"
        elif high == math.inf:
            domain = f"a {'finite ' if finite else ''}number {'>' if above else '>='} {low:g}"
        else:
            domain = f"a number in {left}{low:g}, {high:g}{right}"
        raise refuse(who, domain, value)
    return float(value)


def choice(who: str, value, choices: Sequence) -> Any:
    """One of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise refuse(who, "one of " + ", ".join(map(repr, choices)), value)
    return value


def name(who: str, value) -> str:
    """A name (a string)."""
    if not isinstance(value, str):
        raise refuse(who, "a name (a string)", value)
    return value


def instances(who: str, values, cls: type, what: str) -> tuple:
    """A list or tuple of ``cls`` instances (``what`` describes them)."""
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, cls) for v in values):
        raise refuse(who, f"a list of {what}", values)
    return tuple(values)


def _floats(values) -> np.ndarray | None:
    """``values`` as an array of floats, or None when they are not numbers."""
    try:
        return np.asarray(values, float)
    except (TypeError, ValueError):
        return None


def grid(who: str, values) -> np.ndarray:
    """An increasing 1-D grid of finite numbers >= 1 (temperatures)."""
    arr = _floats(values)
    if arr is None or arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)) or np.any(arr < 1) \
            or np.any(np.diff(arr) <= 0):
        raise refuse(who, "an increasing 1-D grid of numbers >= 1", values)
    return arr


def per_temperature(who: str, values, size: int, positive: bool = False) -> np.ndarray:
    """``size`` finite numbers, one per temperature (``positive``: each > 0, a prior's weights)."""
    arr = _floats(values)
    if arr is None or arr.shape != (size,) or not np.all(np.isfinite(arr)) or (positive and not np.all(arr > 0)):
        raise refuse(who, f"{size} {'positive' if positive else 'finite'} numbers (one per temperature)", values)
    return arr
