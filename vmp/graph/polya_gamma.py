"""Logit links: the Polya-Gamma auxiliary the engine declares (Polson, Scott & Windle 2013).

A node declared with ``logit=psi`` (Bernoulli, Binomial, NegativeBinomial) or ``logits=Psi``
(Categorical, Multinomial: stick-breaking, Linderman et al. 2015) gets one auxiliary omega per
observation, per stick for K - 1 logits: a hidden ``PolyaGamma`` node named ``'<name>.omega'``
on the node's plates (and the logits' plate of sticks), a local of the data plate, never
declared by the user. Its prior is the base measure PG(b, 0) with b from the data
(``factors/logit.py``: 1, n, y + r, N - sum_{j<k} x_j). It is kept as PG(1, c) per unit of b
with b times the node's data weights as its multiplicity (``families/polya_gamma.py``), so a
minibatch or a Dask partition carries b with the rows; ``follow_data`` recomputes b after
``model.set_data``.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import numpy as np

from .. import families as fam
from ..errors import ConjugacyError, GraphError, HyperparameterError
from ..factors.polya_gamma import PolyaGammaFactor
from .expressions import Expression, Sticks
from .node import Node, fixed

#: the name of a logit node's auxiliary
AUXILIARY = "{}.omega"


class PolyaGamma(Node):
    """omega ~ PG(shape, tilt) (Polya-Gamma), relative to its base measure PG(shape, 0); latent
    only. The engine declares one per observation of a logit link; its q is PG(shape, c) with c
    fitted. ``shape`` (b, non-negative, over the plates) is stored as the multiplicity of a
    PG(1, c) per unit of b (times ``weights``); ``mean``, ``parameters``, ``sample`` and
    ``to_scipy`` read PG(b, c)."""

    family = fam.PolyaGamma
    factor_cls = PolyaGammaFactor
    #: keyword arguments beyond the family's parameters that a table-driven declaration needs
    example_arguments = {"shape": fam.polya_gamma.EXAMPLE_SHAPE}
    derived = True

    def __init__(self, name: str, tilt: Any = 0.0, *, shape: Any = 1.0, observed=None, mask=None, weights=None):
        if observed is not None or mask is not None:
            raise GraphError(f"node '{name}': a PolyaGamma node is latent (an auxiliary variable); it takes no "
                             f"observed= or mask=")
        self.family = fam.polya_gamma.UNIT
        self._tilt = fixed(name, type(self), "tilt", tilt)
        b = _shape(name, shape)
        m = b if weights is None else np.asarray(weights, float) * b
        super().__init__(name, {}, None, None, None if np.all(m == 1) else m)
        self.b = np.broadcast_to(b, self.plate_shape)

    def _make_factor(self):
        return PolyaGammaFactor((), self._hyperparameter("tilt", self._tilt, ()))

    def _fill_value(self):
        return np.full((), 0.25)

    def follow_data(self) -> None:
        """b (and the multiplicity) from the owner's data, after ``model.set_data``."""
        if self.owner is not None:
            b, w = _shape_and_weights(self.owner, self.plates)
            m = b if w is None else b * w
            self.b, self.multiplicity = b, None if np.all(m == 1) else m
            self.weights = self.multiplicity
            self.__dict__.pop("_factor_weights", None)

    def conditional(self, parents):
        return self.family.natural_from(self.factor.tilt)

    @property
    def mean(self) -> np.ndarray:
        """E[omega] = b tanh(c/2) / (2c)."""
        return self.b * super().mean

    @property
    def parameters(self) -> dict[str, np.ndarray]:
        """The tilt c and the shape b of q(omega) = PG(b, c)."""
        self._need_posterior()
        return fam.PolyaGamma.of(self.b).parameters(self.natural)

    def _draw(self, n: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
        self._need_posterior()
        natural = tuple(np.broadcast_to(a, (n,) + a.shape) for a in self.natural)
        return fam.PolyaGamma.of(self.b).sample(natural, rng)

    def to_scipy(self, index: tuple = ()):
        self._need_posterior()
        return fam.PolyaGamma.of(self.b[index]).to_scipy(tuple(a[index] for a in self.natural))


def _shape(name: str, shape) -> np.ndarray:
    try:
        b = np.asarray(shape, float)
    except (TypeError, ValueError):
        raise HyperparameterError(f"node '{name}': shape must be numbers, got {shape!r}") from None
    if not np.all(np.isfinite(b) & (b >= 0)):
        raise HyperparameterError(f"node '{name}': shape must be non-negative and finite")
    return b


def logit_parent(name: str, family: str, factor, role: str, value: Any) -> None:
    """A ConjugacyError unless ``value`` is a constant or an expression of the family ``factor``
    takes in ``role`` (Normal-valued)."""
    if isinstance(value, Expression) and value.family is not factor.roles[role]:
        raise ConjugacyError(
            f"node '{name}' ({family}): {role}= '{value.name}' is a {value.family.name}, which is not conjugate to "
            f"a logit link. Supported: {role} <- Normal, any Normal-valued expression (vmp.dot(w, X) of a "
            f"Gaussian w and a design matrix, sums with a Normal intercept, gathers mu[group], "
            f"vmp.dot(u[rows], v[cols]), gates w[z])")


def sticks(name: str, family: str, factor, logits: Any, plates: tuple) -> Any:
    """``logits`` as the K - 1 stick-breaking logits of a node in ``plates``: an expression's
    extra plate read as an event axis (``Sticks``); a constant as it is (plates + (K - 1,))."""
    logit_parent(name, family, factor, "logits", logits)
    return Sticks(logits, name, plates) if isinstance(logits, Expression) else logits


def declare(node: Node, name: str, roles: dict, observed, mask, weights) -> None:
    """``Node.__init__`` for a logit link (its data required), then its auxiliary omega, made
    the factor's 'omega' parent."""
    if observed is None:
        raise GraphError(f"node '{name}': a logit link needs observed= (the Polya-gamma auxiliary's b comes "
                         f"from the data)")
    Node.__init__(node, name, roles, observed, mask, weights)
    stick = node.parents[next(iter(roles))]
    extra = stick.dim_plate if isinstance(stick, Sticks) else None
    b, w = _shape_and_weights(node, node.plates + ((extra,) if extra is not None else ()))
    with extra if extra is not None else nullcontext():
        omega = PolyaGamma(AUXILIARY.format(node.name), shape=b, weights=w)
    omega.owner = node
    node.parents["omega"] = omega if extra is None else Sticks(omega, node.name, node.plates)


def _shape_and_weights(node: Node, plates: tuple) -> tuple[np.ndarray, np.ndarray | None]:
    """b over ``plates`` (the node's, and the sticks') from the node's data, and the node's data
    weights laid out alike (None: all 1)."""
    b = np.asarray(node.factor.shape(node.moments[0]), float)
    b = np.broadcast_to(b, tuple(p.size for p in plates))
    if node.multiplicity is None:
        return b, None
    w = np.asarray(node.multiplicity, float)
    return b, w.reshape(w.shape + (1,) * (b.ndim - w.ndim))
