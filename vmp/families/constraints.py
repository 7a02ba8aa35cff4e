"""Domains as data (as NumPyro's ``constraints``): the support of a family and the valid values
of each parameter. A family's ``valid(natural)``, a factor's check of a constant hyperparameter
and a node's declaration-time checks all read these objects, so each domain is written once.

``check(value)`` is a boolean array over the value's leading axes: a constraint on a vector
(``simplex``) or a matrix (``positive_definite``) reduces its ``event_dim`` trailing axes.
``explain(role, value)`` is the sentence a declaration error shows, or None when the value is in
the domain.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ._linalg import is_pd, is_symmetric


class Constraint(ABC):
    """A set of values; ``description`` completes "must be ..."."""

    event_dim: int = 0
    description: str = ""

    @abstractmethod
    def check(self, value: np.ndarray) -> np.ndarray:
        """Per element over the leading axes: is the value in the set."""

    def explain(self, role: str, value: np.ndarray) -> str | None:
        return None if np.all(self.check(np.asarray(value))) else f"{role} must be {self.description}"

    def __repr__(self) -> str:
        return f"<constraint: {self.description}>"


class _Elementwise(Constraint):
    def __init__(self, test, description: str):
        self._test, self.description = test, description

    def check(self, value):
        value = np.asarray(value)
        with np.errstate(invalid="ignore"):
            return np.isfinite(value) & self._test(value)


class _Integer(Constraint):
    """Finite integers (as integer or float arrays) in [low, high] (high None: unbounded)."""

    def __init__(self, low: float, high: float | None, description: str):
        self.low, self.high, self.description = low, high, description

    def check(self, value):
        value = np.asarray(value)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(value) & (value == np.round(value)) & (value >= self.low)
            return ok if self.high is None else ok & (value <= self.high)


def integer_interval(low: int, high, high_name: str | None = None) -> Constraint:
    """Integers low <= x <= high (e.g. a Binomial's counts, 0..n; ``high`` may be an array, which
    the message calls ``high_name``)."""
    return _Integer(low, high, f"integers in [{low}, {high_name or _text(high)}]")


def greater_than(lower, description: str | None = None) -> Constraint:
    """Finite values strictly above ``lower`` (e.g. a Wishart's dof > D - 1)."""
    return _Elementwise(lambda v: v > lower, description or f"finite and greater than {_text(lower)}")


def _text(v) -> str:
    return f"{float(v):g}" if np.ndim(v) == 0 else "the given bounds"


class _Simplex(Constraint):
    """Probability vectors over the last axis (``strict``: every entry positive, the open simplex)."""

    event_dim = 1

    def __init__(self, strict: bool = False):
        self.strict = strict
        self.description = f"{'positive' if strict else 'non-negative'} and sum to 1 over the last axis"

    def check(self, value):
        value = np.asarray(value, float)
        with np.errstate(invalid="ignore"):
            entries = np.all(np.isfinite(value) & ((value > 0) if self.strict else (value >= 0)), axis=-1)
            return entries & np.isclose(value.sum(-1), 1.0)

    def explain(self, role, value):
        value = np.asarray(value, float)
        with np.errstate(invalid="ignore"):
            if not np.all(np.isfinite(value) & (value >= 0)):
                return f"{role} must be finite and non-negative"
        return None if np.all(self.check(value)) else f"{role} must sum to 1 over the last axis"


class _PositiveDefinite(Constraint):
    event_dim = 2
    description = "symmetric positive definite"

    def check(self, value):
        value = np.asarray(value, float)
        return is_pd(value)

    def explain(self, role, value):
        value = np.asarray(value, float)
        if not np.all(np.isfinite(value)):
            return f"{role} has non-finite entries"
        if not np.all(is_symmetric(value)):
            return f"{role} is not symmetric"
        return None if np.all(is_pd(value)) else f"{role} is not symmetric positive definite"


#: the largest magnitude of a real value: a Normal's or Gaussian's moments hold its square, which
#: overflows float64 above about 1.3e154
LARGEST_REAL = 1e150
real = _Elementwise(lambda v: np.abs(v) < LARGEST_REAL,
                    f"finite and of magnitude below {LARGEST_REAL:g} (a moment holds its square)")
positive = _Elementwise(lambda v: v > 0, "positive and finite")
#: the smallest shape (Gamma a, Dirichlet alpha, Beta alpha and beta) the natural parameter a - 1
#: holds to about 1e-6 relative (it keeps a to about 1e-16 absolute: a = 1e-50 would be a = 0)
SMALLEST_SHAPE = 1e-10
shape = _Elementwise(lambda v: v >= SMALLEST_SHAPE, f"positive, finite and at least {SMALLEST_SHAPE:g} "
                     "(a smaller value is lost in the natural parameter a - 1)")
nonnegative = _Elementwise(lambda v: v >= 0, "non-negative and finite")
unit_interval = _Elementwise(lambda v: (v >= 0) & (v <= 1), "in [0, 1]")
open_unit_interval = _Elementwise(lambda v: (v > 0) & (v < 1), "in (0, 1)")
nonnegative_integer = _Integer(0, None, "non-negative integers")
simplex = _Simplex()
open_simplex = _Simplex(strict=True)
positive_definite = _PositiveDefinite()


class _RealVector(Constraint):
    """Finite vectors of entries below LARGEST_REAL in magnitude (the support of a multivariate
    Gaussian)."""

    event_dim = 1
    description = real.description

    def check(self, value):
        value = np.asarray(value, float)
        with np.errstate(invalid="ignore"):
            return np.all(np.isfinite(value) & (np.abs(value) < LARGEST_REAL), axis=-1)


real_vector = _RealVector()
