"""Random nodes: a factor p(x | parents) and, unless observed, a variational factor q(x)."""
from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from .. import families as fam
from ..errors import ConjugacyError, DataError, GraphError, ShapeError
from ..factors import Conditional
from . import context
from .data import chunks, file_of, is_lazy
from .expressions import Constant, Data, Expression, Gate, Gather, Scaled, times
from .plate import Plate


class Node(Expression, ABC):
    """A random variable with one element per combination of its plates."""

    family: ClassVar[type[fam.Family]]
    factor_cls: ClassVar[type[Conditional]]
    random = True
    #: the node whose factor declared this one as its auxiliary (a logit link's Polya-Gamma
    #: variable, ``graph/polya_gamma.py``), else None
    owner = None

    def __init__(self, name: str, roles: dict[str, Any], observed=None, mask=None, weights=None):
        if not isinstance(name, str) or not name:
            raise GraphError(f"a node name must be a non-empty string, got {name!r}")
        self.name = name
        self.model = context.current_model()
        self.plates = context.active_plates()
        self.plate_shape = tuple(p.size for p in self.plates)
        self.parents: dict[str, Expression | str] = {}
        self.event_shape = self._infer_event_shape(roles)
        if observed is None:
            self._check_memory()
        for role, value in roles.items():
            self.parents[role] = value if isinstance(value, str) else self._parent(role, value)
        self.factor = self._make_factor()
        self.weights = self._check_weights(weights)
        self.multiplicity = self.weights  # m_i; ``weights`` becomes the entropy weight (0 where observed or barren)
        self.clamp = None  # set by missing.resolve for a masked observed node with children
        self.barren = None
        self.mask = None
        self.observed = observed is not None
        self.data = None
        self._data_moments: tuple[np.ndarray, ...] | None = None
        if self.observed:
            self._set_data(observed, mask)
            self.factor.observe(self.data)
        elif mask is not None:
            raise DataError(f"node '{name}': mask= needs observed=")
        elif not self.family.latent:
            raise GraphError(f"node '{name}': a {self.family.name} node must be observed (observed=...); "
                             f"it cannot be latent")
        self.model._add(self)

    # ----- declaration-time checks -------------------------------------------------------
    def _infer_event_shape(self, roles: dict[str, Any]) -> tuple[int, ...]:
        """The event shape implied by the parameters (D for a Gaussian, K for a Dirichlet...);
        by default a scalar per plate element."""
        return ()

    def _check_memory(self) -> None:
        """A ShapeError when q cannot be held in memory: its natural parameters and moments take
        8 bytes per number of each component (``component_shapes``), twice."""
        need = 16 * sum(math.prod(shape) for shape in self.component_shapes())
        have = physical_memory()
        if have is not None and need > have:
            plates = ", ".join(f"{p.name}: {p.size}" for p in self.plates)
            raise ShapeError(f"node '{self.name}': its plates ({plates}) hold {math.prod(self.plate_shape):.3g} "
                             f"elements, and q (natural parameters and moments) would need {_bytes(need)}, more "
                             f"than this machine's memory ({_bytes(have)})")

    def _make_factor(self) -> Conditional:
        return self.factor_cls(self.event_shape)

    def _constant_shape(self, role: str, value: np.ndarray, event: tuple[int, ...]) -> np.ndarray:
        target = self.plate_shape + event
        try:
            return np.broadcast_to(value, target)
        except ValueError:
            raise ShapeError(
                f"node '{self.name}': {role} has shape {value.shape}, which does not broadcast to "
                f"plates {self.plate_shape} + event {event} = {target}"
            ) from None

    def _parent(self, role: str, value: Any) -> Expression:
        family = self.factor_cls.roles[role]
        if not isinstance(value, Expression):
            arr = self._real(role, value)
            event = self._role_event(role)
            arr = self._constant_shape(role, arr, event)
            why = self.factor_cls.check(role, _unbroadcast(arr, len(self.plate_shape)), self.event_shape)
            if why is not None:
                raise_hyper(self.name, why)
            return Constant(family, arr, label=f"{self.name}.{role}")
        value = value.view(family)
        self.check_parent(role, value)
        return value

    def _real(self, role: str, value) -> np.ndarray:
        """A constant parameter as a float array, or a HyperparameterError naming the node and
        the role (:func:`real_numbers`)."""
        if isinstance(value, Data):
            self._array(role, value)
        arr, why = real_numbers(value)
        if why is not None:
            raise_hyper(self.name, f"{role} {why}")
        return arr

    def _role_event(self, role: str) -> tuple[int, ...]:
        return self.factor_cls.role_event(role, self.event_shape)

    def _hyperparameter(self, role: str, value: Any, event: tuple[int, ...]) -> np.ndarray:
        """A fixed hyperparameter (``fixed`` refused random ones) broadcast to plates + event
        and checked against the factor's constraints, or a HyperparameterError naming the node
        and the role."""
        arr = self._real(role, value)
        arr = self._constant_shape(role, arr, event)
        why = self.factor_cls.check(role, arr, self.event_shape)
        if why is not None:
            raise_hyper(self.name, why)
        return arr

    def check_parent(self, role: str, value: Expression) -> None:
        family = self.factor_cls.roles[role]
        if not value.family.fills(family):
            supported = ", ".join(f"{r} <- {f.name}" for r, f in self.factor_cls.roles.items())
            raise ConjugacyError(
                f"node '{self.name}' ({self.family.name}): parent '{value.name}' is a {value.family.name}, "
                f"which is not conjugate to role '{role}'. Supported parents: {supported or 'constants only'}"
            )
        if value.event_shape != self._role_event(role):
            raise ShapeError(
                f"node '{self.name}': parent '{value.name}' for role '{role}' has event shape "
                f"{value.event_shape}, expected {self._role_event(role)}"
            )
        missing = [p.name for p in value.plates if p not in self.plates]
        if missing:
            raise GraphError(
                f"node '{self.name}': parent '{value.name}' has plates {missing} that '{self.name}' is not in "
                f"(declare '{self.name}' inside them, or gate/gather the parent)"
            )

    def _check_weights(self, weights) -> np.ndarray | None:
        """The data multiplicities m_i over the plates; a ``vmp.Data`` is kept as an input that
        ``model.set_data`` replaces (a document's word counts, with new documents)."""
        if weights is None:
            return None
        if isinstance(weights, Data):
            weights.uses.append((self, (), f"node '{self.name}', weights data '{weights.name}'"))
            weights = weights.values
        w, why = real_numbers(self._array("weights", weights))
        if why is not None:
            raise DataError(f"node '{self.name}': weights {why}")
        w = self._constant_shape("weights", w, ())
        if not np.all(np.isfinite(w) & (w >= 0)):
            raise DataError(f"node '{self.name}': weights must be finite and non-negative")
        return w

    #: observed data may stay out of core (memmap, HDF5, zarr): read by rows, never converted
    lazy_data: ClassVar[bool] = False
    #: the file behind out-of-core data, as declared (``data.file_of``; None: in memory)
    data_file: tuple | None = None

    #: True when the node's weights derive from another node's data (a logit link's Polya-Gamma
    #: auxiliary): ``model.set_data`` recomputes them (``follow_data``) instead of broadcasting
    #: them to a new plate size
    derived: ClassVar[bool] = False

    def follow_data(self) -> None:
        """Recompute what the node derives from another node's data (``derived``), once
        ``model.set_data`` has replaced the data and resized the plates."""

    def _set_data(self, observed, mask) -> None:
        lazy = self.lazy_data and mask is None and is_lazy(observed)
        data = observed if lazy else self._array("observed data", observed)
        event = self._data_event_shape()
        want = self.plate_shape + event
        if data.shape != want:
            raise ShapeError(
                f"node '{self.name}': observed data have shape {data.shape}, expected plates "
                f"{self.plate_shape} + event {event} = {want}"
            )
        if mask is not None:
            mask = self._check_mask(mask)
            self.mask = mask
            fill = self._fill_value()
            data = np.array(data, dtype=fill.dtype if data.dtype.kind in "iub" else float, copy=True)
            if mask.shape == self.plate_shape:
                data[~mask] = fill
            else:
                data = np.where(mask, data, fill)
        why = self._check_chunks(data) if lazy else self._check_data(data)
        if why is not None:
            hint = "" if mask is not None or "NaN" not in why else " (give mask= to mark missing entries)"
            raise DataError(f"node '{self.name}': observed data {why}{hint}")
        self.data = data
        self.data_file = file_of(data) if lazy else None
        self._data_moments = self._statistics(data)

    def _array(self, what: str, value) -> np.ndarray:
        """``np.asarray(value)``, a ragged nesting of lists refused with the node's name, as is a
        ``vmp.Data`` (an input of ``dot`` or a gather's rows, not a node's argument)."""
        if isinstance(value, Data):
            raise GraphError(f"node '{self.name}': {what} is vmp.Data '{value.name}', which enters a model "
                             f"only in vmp.dot(w, X) or as the rows of a gather u[X]; give its array here")
        try:
            return np.asarray(value)
        except ValueError as err:
            raise DataError(f"node '{self.name}': {what} are ragged (rows of different lengths): {err}") from None

    def _check_mask(self, mask) -> np.ndarray:
        """A boolean mask over the plates (True where observed) or, for a family whose single
        coordinates may be observed (``pins_coordinates``), over plates + event; one that is
        constant along the event is the plates' mask."""
        arr = self._array("mask values", mask)
        if arr.dtype != bool:
            raise DataError(f"node '{self.name}': mask must be booleans (True where observed), got dtype "
                            f"{arr.dtype}")
        coordinates = self.family.pins_coordinates and self.event_shape
        if arr.shape == self.plate_shape:
            return arr
        if coordinates and arr.shape == self.plate_shape + self.event_shape:
            axes = tuple(range(len(self.plate_shape), arr.ndim))
            full, none = arr.all(axis=axes), ~arr.any(axis=axes)
            return full if np.all(full | none) else arr
        also = f" or plates + event {self.plate_shape + self.event_shape}" if coordinates else ""
        raise ShapeError(f"node '{self.name}': mask has shape {arr.shape}, expected plates {self.plate_shape}{also}")

    @property
    def partial(self) -> bool:
        """Whether some element has observed and masked coordinates (a mask over plates + event)."""
        return self.mask is not None and self.mask.shape != self.plate_shape

    def pinned(self, natural: tuple, ctx=None, plate=None, index: int | None = None) -> tuple:
        """q's natural parameters with observed coordinates held at the data (``Clamp.pin``, for
        a mask over plates + event; ``ctx``, ``plate`` and ``index`` select the elements)."""
        return natural if self.clamp is None else self.clamp.pin(tuple(natural), ctx, plate, index)

    @property
    def has_data(self) -> bool:
        """Observed, or partially observed (masked entries latent, ``missing.resolve``): the
        node's plate is a data plate."""
        return self.observed or self.clamp is not None

    @property
    def complete(self) -> np.ndarray | None:
        """The elements with every coordinate observed (over the plates; None without a mask)."""
        if not self.partial:
            return self.mask
        return self.mask.all(axis=tuple(range(len(self.plate_shape), self.mask.ndim)))

    def _data_event_shape(self) -> tuple[int, ...]:
        return self.event_shape

    @abstractmethod
    def _fill_value(self) -> np.ndarray:
        """A valid value that stands in for masked observations."""

    def _check_chunks(self, data) -> str | None:
        """``_check_data`` one block of rows at a time (data out of core)."""
        return next((why for block in chunks(data) if (why := self._check_data(block)) is not None), None)

    def _check_data(self, data: np.ndarray) -> str | None:
        if data.dtype.kind in "USO":
            return f"must be numbers, got {_dtype_words(data)}"
        if data.dtype.kind == "c":
            return "must be real numbers, got complex values"
        if data.dtype.kind not in "iufb" or not np.all(np.isfinite(data)):
            return "contain NaN or inf"
        if not np.all(self.family.support.check(data)):
            return f"must be {self.family.support.description}"
        return None

    def _statistics(self, data: np.ndarray) -> tuple[np.ndarray, ...]:
        return self.family.statistics(data, self.event_shape)

    def component_shapes(self, plate_shape: tuple[int, ...] | None = None) -> list[tuple[int, ...]]:
        """Shape of each moment component: plates + event axes of that component."""
        ps = self.plate_shape if plate_shape is None else plate_shape
        d = self.event_shape[:1]
        return [ps + d * n for n in self.family.event_ndims]

    @property
    def joint_plates(self) -> tuple[Plate, ...]:
        """The innermost plates whose elements are one variable of the family
        (``Family.joint_plates``: a chain's time plate); a minibatch cannot split them."""
        k = self.family.joint_plates
        return tuple(self.plates[len(self.plates) - k:]) if k else ()

    def live(self, alive: np.ndarray) -> np.ndarray:
        """The elements that stay in the bound, given those with an observed descendant (the rest
        are barren, see ``missing.resolve``); a node with a structured q widens them."""
        return alive

    # ----- q, read from the state of the fit that owns the model ---------------------------
    @property
    def natural(self) -> tuple[np.ndarray, ...] | None:
        """Natural parameters of q(x) in ``model.state`` (None for observed nodes or before a fit)."""
        state = self.model.state
        return None if self.observed or state is None else state.natural.get(self.name)

    @property
    def moments(self) -> tuple[np.ndarray, ...] | None:
        """E[u(x)] under q (the data's statistics for an observed node, and at the observed
        elements or coordinates of a partially observed one: ``Clamp.apply``)."""
        if self.observed:
            return self._data_moments
        state = self.model.state
        moments = None if state is None else state.moments.get(self.name)
        return moments if moments is None or self.clamp is None else self.clamp.apply(moments)

    def set_natural(self, natural: tuple[np.ndarray, ...], moments: tuple[np.ndarray, ...] | None = None) -> None:
        """Set q's natural parameters in ``model.state``; the moments follow (the gradient of
        the log-normalizer)."""
        natural = tuple(natural)
        moments = self.family.moments(natural) if moments is None else tuple(moments)
        self.model.state = self.model.current_state().updated({self.name: (natural, moments)})

    # ----- glue -------------------------------------------------------------------------
    def __getitem__(self, key):
        """``P[z]`` / ``P[z, plate]``: gate P's innermost plate (or ``plate``) by the Categorical z;
        ``P[rows]`` / ``P[rows, plate]``: gather P's outermost plate into the open ``plate``."""
        plate = None
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], (str, Plate)):
            key, plate = key
        if isinstance(key, Node) and key.family.selects:
            return Gate(self, key, plate)
        if isinstance(key, Expression):
            raise GraphError(f"'{self.name}[{key.name}]': only a node over categories (Categorical, Bernoulli) "
                             f"can gate")
        return Gather(self, key, plate)

    def __rmul__(self, other):
        return times(other, self)

    def __mul__(self, other):  # tau * 2.0 is 2.0 * tau; tau * lam is a Product
        return times(self, other)

    def __truediv__(self, other):  # tau / 2 is 0.5 * tau
        if not isinstance(other, Expression) and self.view(fam.Gaussian).family.location:
            return Expression.__truediv__(self, other)
        return Scaled(other, self, divide=True)

    def factor_weights(self) -> np.ndarray | None:
        """Data multiplicity times the mask of an observed node, over the plates (None when all
        ones). A partially observed node keeps all its elements: observed ones are data, masked
        ones latent."""
        if "_factor_weights" not in self.__dict__:
            w = self.multiplicity
            if self.observed and self.mask is not None and not self.partial:
                w = self.mask.astype(float) if w is None else w * self.mask
            self._factor_weights = w
        return self._factor_weights

    # ----- posterior --------------------------------------------------------------------
    def _need_posterior(self) -> None:
        if self.moments is None:
            if self.model.state is not None and self.model.state.natural:
                raise GraphError(f"node '{self.name}' has no q in the fit's state: a minibatch fit keeps only "
                                 f"the global nodes; model.infer_locals() computes the local ones (O(N))")
            raise GraphError(f"node '{self.name}' has no posterior yet: call model.fit() first")

    @property
    def parameters(self) -> dict[str, np.ndarray]:
        """Parameters of q(x) (or of the data, for an observed node)."""
        self._need_posterior()
        if self.observed:
            return {"value": self.data}
        if self.clamp is not None and self.clamp.coordinates is not None:
            return self.family.pinned_parameters(self.natural, self.clamp.coordinates)
        return self.family.parameters(self.natural)

    @property
    def mean(self) -> np.ndarray:
        self._need_posterior()
        if self.observed:
            return np.asarray(self.data, float)
        return self.family.mean(self.natural, self.moments)

    def describe(self, mean: np.ndarray, fmt=str) -> str:
        """One line about q's mean when it is too large to print (the family's ``describe``); the
        absent elements (``missing.Clamp.absent``: padded steps) are NaN there, not the fill value."""
        absent = None if self.clamp is None else self.clamp.absent
        if absent is not None:
            mean = np.where(absent.reshape(absent.shape + (1,) * (mean.ndim - absent.ndim)), np.nan, mean)
        return self.family.describe(mean, fmt)

    def entropy(self) -> np.ndarray:
        self._need_posterior()
        return self.family.entropy(self.natural, self.model.state.moments[self.name])  # (q's own, not pinned)

    def sample(self, n: int = 1, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` independent draws from q(x), shaped (n,) + plates + event (a Categorical's draws
        are integers); the observed elements of a partially observed node are its data, its absent
        ones (weight 0, ``missing.Clamp.absent``: padded steps) NaN."""
        if self.observed:
            raise GraphError(f"node '{self.name}' is observed: it has no posterior to sample; "
                             f"model.predict('{self.name}').sample(n) draws from its predictive")
        return self._draw(_count(n, self.name), np.random.default_rng(rng), {})

    def _draw(self, n: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
        """Draws of this node for ``vmp.graph.draws``: the data where observed, else q's."""
        if self.observed:
            data = np.asarray(self.data)
            return np.broadcast_to(data, (n,) + data.shape)
        self._need_posterior()
        natural = tuple(np.broadcast_to(a, (n,) + a.shape) for a in self.natural)
        out = self.family.sample(natural, rng)
        if self.clamp is not None:
            keep = self.clamp.observed if self.clamp.coordinates is None else self.clamp.coordinates
            keep = keep.reshape(keep.shape + (1,) * (out.ndim - 1 - keep.ndim))
            out = np.where(keep, np.asarray(self.data, out.dtype), out)
            absent = self.clamp.absent
            if absent is not None:  # no value at an absent element (a padded step)
                out = np.where(absent.reshape(absent.shape + (1,) * (out.ndim - 1 - absent.ndim)), np.nan, out)
        return out

    def conditional(self, parents: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """Natural parameters of p(x | parents) at point values of the parents (each laid out
        over this node's plates, with any leading draw axes)."""
        raise GraphError(f"node '{self.name}' ({type(self).__name__}): no conditional at point values")

    def to_scipy(self, index: tuple = ()):
        """scipy.stats frozen distribution of q at one plate element ``index``."""
        self._need_posterior()
        if self.observed:
            raise GraphError(f"node '{self.name}' is observed: it has no posterior")
        return self.family.to_scipy(tuple(a[index] for a in self.natural))


def _count(n, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise GraphError(f"node '{name}': the number of draws must be a positive integer, got {n!r}")
    return int(n)


def fixed(name: str, node_cls, what: str, value: Any) -> Any:
    """``value`` for a hyperparameter that no conjugate rule lets be random (a Gamma's shape, a
    Wishart's dof and scale, a Dirichlet's alpha), or a ConjugacyError listing what is supported."""
    if isinstance(value, (Expression, str)):
        from ..factors import rules

        label = f"'{value}'" if isinstance(value, str) else f"'{value.name}' ({value.family.name})"
        roles = ", ".join(f"{r} <- {f.name}" for r, f in node_cls.factor_cls.roles.items()) or "constants only"
        table = "; ".join(f"{c}.{r} <- {f}" for c, r, f in rules())
        raise ConjugacyError(
            f"node '{name}' ({node_cls.family.name}): {what} must be a constant, got the random node "
            f"{label}; no conjugate rule takes a random {what}. Random parents a "
            f"{node_cls.family.name} accepts: {roles}. All rules: {table}"
        )
    return value


def _dtype_words(data: np.ndarray) -> str:
    kind = {"U": "strings", "S": "bytes", "O": "Python objects"}[data.dtype.kind]
    sample = next(iter(data.flat), None)
    return f"{kind} (dtype {data.dtype}{f', e.g. {str(sample)!r}' if sample is not None else ''})"


SMALLEST_NORMAL = np.finfo(float).tiny


def real_numbers(value) -> tuple[np.ndarray | None, str | None]:
    """(``value`` as a float array, None), or (None, why it is not an array of real numbers:
    not numbers, complex, or subnormal: a nonzero magnitude below 2.2e-308, whose reciprocal,
    logarithm or products overflow or lose every digit)."""
    try:
        raw = np.asarray(value)
    except ValueError:
        return None, "must not be ragged (rows of different lengths)"
    if raw.dtype.kind == "c":
        return None, f"must be real numbers, got complex values ({value!r})"[:200]
    try:
        arr = np.asarray(raw, float)
    except (TypeError, ValueError):
        return None, f"must be numbers, got {value!r}"[:200]
    magnitude = np.abs(arr)
    if np.any((magnitude > 0) & (magnitude < SMALLEST_NORMAL)):
        return None, "must not be subnormal (nonzero and below 2.2e-308): give 0 or a normal float"
    return arr, None


def raise_hyper(name: str, why: str):
    from ..errors import HyperparameterError

    raise HyperparameterError(f"node '{name}': {why}")


def _unbroadcast(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` with each of its first ``n`` axes that repeats one value (stride 0: a constant
    broadcast over a plate) cut to length 1: the same values, checked once."""
    return a[tuple(slice(0, 1) if a.strides[i] == 0 else slice(None) for i in range(n))]


def physical_memory() -> int | None:
    """The bytes of this machine's memory (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _bytes(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"
