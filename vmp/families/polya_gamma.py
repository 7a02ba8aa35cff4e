"""Polya-Gamma PG(b, c) (Polson, Scott & Windle 2013), relative to its base measure PG(b, 0).

PG(omega | b, c) = cosh^b(c/2) exp(-c^2 omega / 2) PG(omega | b, 0) is an exponential family in
omega with the base measure h = PG(b, 0) (Polson et al. eq. (4)):

    eta = -c^2 / 2,   u = omega,   A(eta) = log E_{PG(b,0)}[e^{eta omega}] = -b log cosh(sqrt(-eta/2)),
    E[omega] = dA/deta = b tanh(c/2) / (2c)

(A(eta) = -b log cos(sqrt(eta/2)) for 0 < eta < pi^2/2; the domain here is eta <= 0, a real
tilt c >= 0). Densities are taken relative to h, which is the prior of a logit link's auxiliary
variable: its prior factor is 1, its entropy is H = A(eta) - eta E[omega] = -KL(q || PG(b, 0))
and the bound's prior term and its E_q[log h] cancel. The shape b is data (``PolyaGamma.of(b)``,
as a Binomial's trials); ``PolyaGamma`` itself is bound to ``EXAMPLE_SHAPE`` for the table tests.
A logit link's auxiliary is the unit family ``UNIT`` (b = 1) with its b as the node's
multiplicity: PG(b, c) is b copies of PG(1, c) in the bound (E[omega] and the KL are linear in
b), so a minibatch or a Dask partition carries b with its rows.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import _polya_gamma as pg
from . import constraints
from .base import Arrays, Family

EXAMPLE_SHAPE = np.array([1.0, 2.5, 4.0])
#: |eta| below which A and E[omega] are their series in eta (the closed forms lose digits there)
SERIES = 1e-4


def _tilt(natural: Arrays) -> np.ndarray:
    """c = sqrt(-2 eta) for eta <= 0; a positive eta (outside the domain) maps to -sqrt(2 eta)."""
    eta = np.asarray(natural[0], float)
    return np.sign(-eta) * np.sqrt(2.0 * np.abs(eta))


class PolyaGamma(Family):
    name = "PolyaGamma"
    event_ndims = (0,)
    support = constraints.positive
    arg_constraints = {"tilt": constraints.nonnegative}
    #: b, over the plates of the family's node (broadcast)
    shape: ClassVar[np.ndarray] = EXAMPLE_SHAPE
    bound_to = ("shape",)

    @classmethod
    def of(cls, shape) -> type["PolyaGamma"]:
        """The family with b = ``shape`` (non-negative, broadcast over the plates)."""
        return cls.bound(shape=np.asarray(shape, float))

    @staticmethod
    def natural_from(tilt: np.ndarray) -> Arrays:
        """eta = -c |c| / 2 (-c^2 / 2 for the tilts of the domain, c >= 0)."""
        tilt = np.asarray(tilt, float)
        return (-0.5 * tilt * np.abs(tilt),)

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """c = sqrt(-2 eta), and the shape b."""
        c = _tilt(natural)
        b, c = np.broadcast_arrays(cls.shape, c)
        return {"tilt": c, "shape": b}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[omega] = b tanh(s)/(4s), s = sqrt(-eta/2) = c/2 (b tan(s)/(4s), s = sqrt(eta/2), above
        0), by its series b/4 (1 + eta/6 + eta^2/30 + 17 eta^3/2520) near eta = 0."""
        eta = np.asarray(natural[0], float)
        s = np.sqrt(np.abs(eta) / 2.0)
        near = np.abs(eta) < SERIES
        safe = np.where(near, 1.0, s)
        with np.errstate(all="ignore"):
            ratio = np.where(eta < 0, np.tanh(safe), np.tan(safe)) / safe
        series = 1.0 + eta / 6.0 + eta**2 / 30.0 + 17.0 * eta**3 / 2520.0
        return (0.25 * cls.shape * np.where(near, series, ratio),)

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A = -b log cosh(c/2) (-b log cos(sqrt(eta/2)) above 0)."""
        eta = np.asarray(natural[0], float)
        s = np.sqrt(np.abs(eta) / 2.0)
        with np.errstate(all="ignore"):
            log_cos = np.log(np.cos(np.where(eta > 0, s, 0.0)))
        return -cls.shape * np.where(eta > 0, log_cos, pg.log_cosh(s))

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u = omega."""
        return (np.asarray(x, float),)

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Exact draws for integer b (Devroye's method), see ``_polya_gamma.draws``."""
        b, c = np.broadcast_arrays(cls.shape, _tilt(natural))
        full = tuple(size) + c.shape
        return pg.draws(np.broadcast_to(b, full), np.broadcast_to(c, full), rng)

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """PG(b, c) as a ``scipy.stats.rv_continuous`` over the density series (its moments by
        numerical integration)."""
        b, c = np.broadcast_arrays(cls.shape, _tilt(natural))
        return pg.polya_gamma(b, c)

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape=()):
        return cls.natural_from(rng.uniform(0.2, 3.0, size=plate_shape))


class UnitPolyaGamma(PolyaGamma):
    """PG(1, c): a logit link's auxiliary per unit of b (the node's multiplicity carries b); a
    class of the module, so that a model holding it pickles."""

    shape = np.array(1.0)


UNIT = UnitPolyaGamma
