"""Expressions a parent role can take: random nodes, constants, and deterministic glue.

Deterministic glue (Winn & Bishop section 4.2 on gates; Paquet section 3 on the bilinear model):
``P[z]`` gates a plated node by a Categorical node (mixtures), ``P[rows]`` gathers plate
elements by an integer index (sparse data), ``dot(u, v)`` is an inner product of Gaussians,
``c * P`` scales a Gamma or Wishart node by a positive constant, and ``c * P`` for a Gamma node c
by a random scale (a Student-t's per-point precision).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .. import families as fam
from ..errors import GraphError, ShapeError
from ..factors.markov_chain import IMPOSSIBLE
from . import context
from .data import Outer, chunks, is_lazy


#: the linear maps of a Gaussian or Normal expression by name: ``scaled`` (``c * x``), ``mapped``
#: (``A @ x``, ``C @ x``) and ``is_map`` (whether ``vmp.dot(A, x)`` is ``A @ x``); their
#: expressions are in ``linear.py``, which imports this module and registers them here when
#: imported (``graph/__init__.py`` imports it)
MAPS: dict = {}

class Expression:
    """Anything that supplies moments of a family to a factor."""

    family: type[fam.Family]
    plates: tuple
    event_shape: tuple[int, ...]
    name: str
    random: bool = False
    """True for a random variable (a Node) rather than glue or a constant."""
    transparent: bool = False
    """True for a view of a node as another family (no box of its own in the DAG)."""

    def inputs(self) -> list["Expression"]:
        return []

    def view(self, family: type[fam.Family]) -> "Expression":
        """This expression as a parent that wants ``family`` (itself, unless a node reads as
        another family there: a Gaussian chain as one Gaussian per step)."""
        return self

    # numpy defers to the reflected methods (np.ones(3) * x is one expression, not an array of them)
    __array_ufunc__ = None

    def __getitem__(self, key):
        raise GraphError(f"'{self.name}' cannot be indexed; only random nodes can be gated or gathered")

    def __rmul__(self, other):
        if isinstance(other, Expression):
            return Product(other, self)
        if self.view(fam.Gaussian).family.location:
            return MAPS["scaled"](other, self)
        raise GraphError(f"'{self.name}' cannot be scaled; only Gamma and Wishart nodes can (and Gaussian or "
                         f"Normal expressions, as a linear map)")

    def __mul__(self, other):
        if isinstance(other, Expression):
            return Product(self, other)
        return self.__rmul__(other)

    def __truediv__(self, other):
        if not isinstance(other, Expression) and self.view(fam.Gaussian).family.location:
            return self.__rmul__(1.0 / np.asarray(other, float))
        return self.__rmul__(other)

    def __rmatmul__(self, other):
        """``A @ x``: a constant matrix applied to a Gaussian expression (``linear.mapped``)."""
        return MAPS["mapped"](other, self)

    def __matmul__(self, other):
        """``C @ x``: a Gaussian node over a plate of rows applied to a Gaussian expression."""
        if not isinstance(other, Expression):
            return NotImplemented
        return MAPS["mapped"](self, other)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} plates={[p.name for p in self.plates]} event={self.event_shape}>"

    def __add__(self, other):
        return Sum([self, other])

    def __radd__(self, other):
        return Sum([other, self])


class Constant(Expression):
    """A fixed value used as a parent; its moments are the sufficient statistics of the value,
    with log 0 (a zero probability) read as ``IMPOSSIBLE``: exp of it is 0 as of -inf, and the 0
    of an element that never takes that category times it is 0, not NaN."""

    def __init__(self, family: type[fam.Family], value: np.ndarray, label: str):
        self.family = family
        self.value = np.asarray(value, float)
        self.plates = ()
        self.name = label
        n = family.event_ndims[0]
        self.event_shape = self.value.shape[self.value.ndim - n:] if n else ()
        if family.outer == {1: (0, 0)}:  # (x, x x^T): the second formed only if read (a design matrix)
            self.moments = Outer(self.value, square=not n)
            return
        try:
            with np.errstate(divide="ignore"):
                self.moments = tuple(np.maximum(m, IMPOSSIBLE) if np.isneginf(m).any() else m
                                     for m in family.statistics(self.value, self.event_shape))
        except MemoryError:
            raise ShapeError(f"'{label}': the constant over shape {self.value.shape} ({self.value.size:.3g} "
                             f"elements) would need {16 * self.value.size / 1e9:.3g} GB for its statistics, more "
                             f"than this machine can allocate") from None


def plate_union(*groups) -> tuple:
    out: list = []
    for g in groups:
        for p in g:
            if p not in out:
                if any(q.name == p.name for q in out):
                    raise GraphError(f"plate '{p.name}' appears with two sizes")
                out.append(p)
    return tuple(out)


def _plate_named(plate, among: tuple, what: str):
    name = plate if isinstance(plate, str) else plate.name
    found = next((p for p in among if p.name == name), None)
    if found is None:
        raise GraphError(f"{what}: no plate '{name}' among {[p.name for p in among]}")
    return found


class _Selection(Expression):
    """A gate or gather of a node: times a constant it is ``Scaled`` (``c * tau[z]``), times a
    node a ``Product``, as the node itself would be."""

    __array_ufunc__ = None  # np.float64(2) * tau[z] is a Scaled, not an elementwise product

    def __rmul__(self, other):
        return times(other, self)

    def __mul__(self, other):
        return times(self, other)

    def __truediv__(self, other):  # mu[z] / 2 is 0.5 * mu[z], tau[z] / 2 a Scaled
        if not isinstance(other, Expression) and self.view(fam.Gaussian).family.location:
            return Expression.__truediv__(self, other)
        return Scaled(other, self, divide=True)


class Gate(_Selection):
    """``P[z]``: component z_n of the plated node P (a mixture). P's innermost plate is gated,
    or the plate named by ``P[z, plate]`` (BayesPy's cluster_plate)."""

    def __init__(self, node, selector, plate=None):
        if not getattr(selector, "random", False) or not selector.family.selects:
            raise GraphError(f"'{node.name}[...]': a gate's selector must be a node over categories (Categorical, "
                             f"Bernoulli)")
        if not node.plates:
            raise GraphError(f"'{node.name}[{selector.name}]': '{node.name}' has no plate to gate over")
        self.node, self.selector = node, selector
        where = f"'{node.name}[{selector.name}]'"
        self.gated_plate = node.plates[-1] if plate is None else _plate_named(plate, node.plates, where)
        k = selector.family.categories(selector.event_shape)
        if self.gated_plate.size != k:
            raise ShapeError(
                f"{where}: '{selector.name}' has {k} categories but the gated plate "
                f"'{self.gated_plate.name}' of '{node.name}' has size {self.gated_plate.size}"
            )
        self.family = node.family
        self.event_shape = node.event_shape
        self.plates = plate_union(selector.plates, tuple(p for p in node.plates if p != self.gated_plate))
        self.name = f"{node.name}[{selector.name}]"

    def inputs(self):
        return [self.node, self.selector]


class Gather(_Selection):
    """``P[rows]``: element rows[i] of P's outermost plate for each i of the current plate.
    ``rows`` may be a ``vmp.Data``: ``model.set_data`` then replaces it (new rows, and the
    plate's new size)."""

    def __init__(self, node, index, plate=None):
        data = index if isinstance(index, Data) else None
        if data is not None:
            index = data.values
        if not node.plates:
            raise GraphError(f"'{node.name}[...]': '{node.name}' has no plate to gather from")
        where = f"'{node.name}[...]'"
        index = self._checked(node, index, where)
        if plate is not None:
            plate = _plate_named(plate, context.active_plates(), f"{where} (open plates)")
            if plate.size != index.size:
                raise ShapeError(f"{where}: plate '{plate.name}' has size {plate.size}, the index {index.size}")
        else:
            fits = [p for p in context.active_plates() if p.size == index.size]
            if not fits:
                raise GraphError(
                    f"{where}: declare the gather inside a plate of size {index.size} (the length of the index)"
                )
            if len(fits) > 1:
                raise GraphError(
                    f"{where}: open plates {[p.name for p in fits]} all have size {index.size}; say which one "
                    f"the index runs over: {node.name}[rows, '{fits[-1].name}']"
                )
            plate = fits[0]
        self.node, self.plate = node, plate
        self.family = node.family
        self.event_shape = node.event_shape
        self.plates = (plate,) + tuple(node.plates[1:])
        self.name = f"{node.name}[{plate.name}]"
        self._set(index)
        if data is not None:
            data.uses.append((self, (), f"{where}, data '{data.name}'"))

    @staticmethod
    def _checked(node, index, where: str) -> np.ndarray:
        index = np.asarray(index)
        if index.ndim != 1 or not np.issubdtype(index.dtype, np.integer):
            raise ShapeError(f"{where}: a gather index must be a 1-D integer array")
        source = node.plates[0]
        if index.size and (index.min() < 0 or index.max() >= source.size):
            raise ShapeError(
                f"{where}: index values must lie in [0, {source.size}) (plate '{source.name}')"
            )
        return index

    def _set(self, index: np.ndarray) -> None:
        self.index = index
        self.scatter = sp.csr_matrix(
            (np.ones(index.size), (index, np.arange(index.size))), shape=(self.node.plates[0].size, index.size)
        )

    def set_index(self, index, where: str) -> None:
        """New rows (``model.set_data``; the plate already has its new size)."""
        index = self._checked(self.node, index, where)
        if index.size != self.plate.size:
            raise ShapeError(f"{where}: plate '{self.plate.name}' has size {self.plate.size}, the index {index.size}")
        self._set(index)

    def inputs(self):
        return [self.node]


class PlatedConstant(Constant):
    """A constant argument of ``dot`` (a design matrix): its leading axes are plates."""

    def __init__(self, family: type[fam.Family], value: np.ndarray, label: str, plates: tuple):
        super().__init__(family, value, label)
        self.plates = plates


class Data:
    """``vmp.Data(name, values)``: a named constant input, e.g. a design matrix in ``dot(w, X)``
    or the rows of a gather ``u[vmp.Data("users", rows)]``, that ``model.set_data(name,
    new_values)`` replaces (held-out inputs) without rebuilding."""

    def __init__(self, name: str, values):
        if not isinstance(name, str) or not name:
            raise GraphError(f"a data name must be a non-empty string, got {name!r}")
        self.name, self.values, self.uses = name, values, []
        context.current_model()._add_data(self)

    def __repr__(self) -> str:
        return f"<Data {self.name} shape={np.shape(self.values)}>"

    def __getitem__(self, key):
        raise GraphError(f"data '{self.name}' cannot be indexed: only nodes can be gated or gathered; "
                         f"to select fixed parameters by a latent index, declare them as an observed node "
                         f"in a plate (e.g. vmp.Dirichlet('B', alpha, observed=table) in the states' plate): "
                         f"the posterior is then exact, and the bound adds the node's own log prior")


def _plated(value, family: type[fam.Family], plates: tuple, event: tuple, where: str) -> PlatedConstant:
    """A constant broadcast to plates + event, or a ShapeError naming the expression. A ``Data``
    keeps the constant it became, for ``set_data``."""
    if isinstance(value, Data):
        out = _plated(value.values, family, plates, event, f"{where}, data '{value.name}'")
        out.name = value.name
        value.uses.append((out, event, where))
        return out
    target = tuple(p.size for p in plates) + event
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=float), target)
    except (ValueError, TypeError):
        raise ShapeError(
            f"{where}: the constant has shape {np.shape(value)}, which does not broadcast to plates "
            f"{[p.name for p in plates]} + event {event} = {target}"
        ) from None
    if not all(np.all(np.isfinite(block)) for block in (chunks(arr) if is_lazy(value) and arr.ndim else [arr])):
        raise GraphError(f"{where}: a constant argument must be finite")
    return PlatedConstant(family, arr, label=f"const{list(target)}" if arr.ndim else f"{float(arr):g}", plates=plates)


def _design(value, other: Expression, where: str) -> PlatedConstant:
    """A constant side of ``dot``: plates + (D,) against a Gaussian (over the open plates), or
    open plates + (K,) against Normals sharing their innermost plate K."""
    if other.event_shape:
        return _plated(value, other.family, context.active_plates(), other.event_shape, where)
    family = fam.Normal if other.family.binary else other.family  # a constant c against z: c and c^2
    if not other.plates:
        raise ShapeError(f"{where}: a Normal argument needs an innermost plate to sum over")
    shared = other.plates[-1]
    plates = tuple(p for p in context.active_plates() if p != shared) + (shared,)
    return _plated(value, family, plates, (), where)


class Dot(Expression):
    """Inner product of two Gaussians: over the event axis (multivariate), or over a shared
    innermost plate of two Normal nodes (the fully factorized q(u_mk) of Paquet eq. (7)).
    Either side may be a constant array (a design matrix X: E[w.x] = E[w].x,
    E[(w.x)^2] = x^T E[ww^T] x). A side over a shared plate may be binary (Bernoulli z_k, with
    E[z_k^2] = E[z_k]): sum_k z_k u_k, the mean of a factorial mixture (Ghahramani 1995).

    Of two positive nodes of an ``allocates`` family (Gamma) over a shared innermost plate K, it
    is the rate sum_k theta_k beta_k of Poisson factorization (Gopalan et al. 2015): a node of
    that family, whose E[log m] is bounded through the allocation (vmp/graph/allocation.py)."""

    def __init__(self, u, v):
        u, v = (e.view(fam.Gaussian) if isinstance(e, Expression) else e for e in (u, v))
        where = f"dot({getattr(u, 'name', 'const')}, {getattr(v, 'name', 'const')})"
        if not isinstance(u, Expression) and not isinstance(v, Expression):
            raise GraphError(f"{where}: at least one argument must be a Gaussian or Normal node")
        self.allocates = any(isinstance(e, Expression) and e.family.allocates for e in (u, v))
        if self.allocates:
            self._positive(u, v, where)
            return
        for e in (u, v):
            if isinstance(e, Expression) and (not (e.family.location or e.family.binary)
                                              or isinstance(e, (Dot, Constant))):
                raise GraphError(f"dot: arguments must be Gaussian, Normal or Bernoulli nodes (or gathers of "
                                 f"them), got {e!r}")
        if not isinstance(u, Expression):
            u = _design(u, v, where)
        if not isinstance(v, Expression):
            v = _design(v, u, where)
        if u.family.binary or v.family.binary:
            if u.event_shape or v.event_shape:
                raise GraphError(f"{where}: a Bernoulli argument multiplies a Normal (or Bernoulli) over a "
                                 f"shared innermost plate")
        elif u.family is not v.family:
            raise GraphError(f"{where}: both must be Gaussian or both Normal")
        self.u, self.v = u, v
        self.family = fam.Normal
        self.event_shape = ()
        self.name = f"dot({u.name}, {v.name})"
        if u.event_shape:
            if u.event_shape != v.event_shape:
                raise ShapeError(f"{self.name}: dimensions differ, {u.event_shape} and {v.event_shape}")
            self.shared = None
            self.plates = plate_union(u.plates, v.plates)
        else:
            if not u.plates or not v.plates or u.plates[-1] != v.plates[-1]:
                raise ShapeError(f"{self.name}: Normal arguments must share their innermost plate")
            self.shared = u.plates[-1]
            self.plates = tuple(p for p in plate_union(u.plates, v.plates) if p != self.shared)

    def _positive(self, u, v, where: str) -> None:
        """dot of two plated Gamma nodes (or gathers of them) over their shared innermost plate."""
        for e in (u, v):
            if not (getattr(e, "random", False) or isinstance(e, Gather)) or not e.family.allocates:
                raise GraphError(f"{where}: a dot of Gamma variables takes two Gamma nodes (or gathers of "
                                 f"them), got {e!r}")
        if u.family is not v.family:
            raise GraphError(f"{where}: both arguments must be of one family")
        if not u.plates or not v.plates or u.plates[-1] != v.plates[-1]:
            raise ShapeError(f"{where}: the arguments must share their innermost plate (the K factors)")
        self.u, self.v, self.shared = u, v, u.plates[-1]
        self.family, self.event_shape = u.family, ()
        self.name = f"dot({u.name}, {v.name})"
        self.plates = tuple(p for p in plate_union(u.plates, v.plates) if p != self.shared)

    def inputs(self):
        return [self.u, self.v]


def dot(u, v) -> Expression:
    """Inner product node ``u . v`` usable as the mean of a Normal; u or v may be a constant array.
    A constant M x D matrix next to a Gaussian of dimension D that is not a design matrix over the
    open plates is the linear map ``u @ v`` (a Gaussian of dimension M)."""
    if MAPS["is_map"](u, v):
        return MAPS["mapped"](u, v)
    return Dot(u, v)


def random_nodes(expr: Expression) -> list:
    """The random nodes an expression reads (itself for a node), through ``inputs()``."""
    if getattr(expr, "random", False):
        return [expr]
    return list({id(n): n for e in expr.inputs() for n in random_nodes(e)}.values())


class Sum(Expression):
    """``a + b + ...``: a Gaussian or Normal mean that is a sum of terms from distinct nodes
    (nodes, gates, gathers, ``dot``, constants). Its moments are sums of products of the terms'
    moments, E[m] = sum_i E[a_i], E[m m^T] = sum_i E[a_i a_i^T] + sum_{i != j} E[a_i] E[a_j]^T,
    so every expanded term stays multilinear."""

    def __init__(self, terms: list):
        flat: list = []
        for t in terms:
            t = t.view(fam.Gaussian) if isinstance(t, Expression) else t
            flat.extend(t.terms if isinstance(t, Sum) else [t])
        random = [t for t in flat if isinstance(t, Expression)]
        where = " + ".join(getattr(t, "name", "const") for t in flat)
        if not random:
            raise GraphError(f"{where}: at least one term must be a Gaussian or Normal expression")
        family = random[0].family
        if not family.location or any(t.family is not family for t in random):
            names = ", ".join(f"'{t.name}' ({t.family.name})" for t in random)
            raise GraphError(f"{where}: terms must all be Gaussian or all Normal, got {names}")
        event = random[0].event_shape
        if any(t.event_shape != event for t in random):
            raise ShapeError(f"{where}: terms have different event shapes {[t.event_shape for t in random]}")
        seen: dict = {}
        for t in random:
            for n in (node.name for node in random_nodes(t)):
                if n in seen:
                    raise GraphError(
                        f"{where}: node '{n}' appears in two terms ('{seen[n]}' and '{t.name}'); the "
                        f"mean-field moments of such a sum are not multilinear. Combine them first"
                    )
                seen[n] = t.name
        self.terms = [t if isinstance(t, Expression) else _plated(t, family, context.active_plates(), event, where)
                      for t in flat]
        self.family, self.event_shape = family, event
        self.plates = plate_union(*(t.plates for t in self.terms))
        self.name = " + ".join(t.name for t in self.terms)

    def inputs(self):
        return list(self.terms)


class Diagonal(Expression):
    """diag(alpha): the Gamma node alpha's innermost plate (size D) read as the event axis of a
    D x D diagonal precision (automatic relevance determination, one alpha_d per dimension); so
    too the (mu_d, tau_d) of a NormalGamma node over D coordinates, or a gate or gather of one
    (``theta[z, "components"]``: the plate left innermost is the coordinates')."""

    def __init__(self, node, owner: str, dim: int | None, family: type[fam.Family]):
        if not (getattr(node, "random", False) or isinstance(node, (Gate, Gather))) or node.family is not family:
            raise GraphError(
                f"node '{owner}': a {family.name} parent of a Gaussian must be a {family.name} node (or a gate "
                f"or gather of one) over a plate of the event dimensions, got {node!r}"
            )
        if not node.plates:
            raise GraphError(
                f"node '{owner}': the Gamma precision '{node.name}' has no plate; ARD needs one alpha_d per "
                f"dimension (declare '{node.name}' in a plate of size D), and a scalar precision of a "
                f"univariate variable needs vmp.Normal"
            )
        if dim is not None and node.plates[-1].size != dim:
            raise ShapeError(
                f"node '{owner}': the ARD precision '{node.name}' needs an innermost plate of size D = "
                f"{dim} (one alpha_d per dimension), it has plates {[p.name for p in node.plates]}"
            )
        self.node, self.dim_plate = node, node.plates[-1]
        self.family = family
        self.plates = node.plates[:-1]
        self.event_shape = (self.dim_plate.size,)
        self.name = f"diag({node.name})"

    def inputs(self):
        return [self.node]


class Rows(Expression):
    """A Dirichlet node over a plate of K rows read as one K x K matrix: the plate becomes the
    first event axis (a transition matrix, row j the distribution of the next state after j)."""

    def __init__(self, node, owner: str, k: int, family: type[fam.Family]):
        if not getattr(node, "random", False) or not node.family.fills(family) or not node.plates:
            raise GraphError(f"node '{owner}': a random transition matrix must be a Dirichlet (or stick-breaking) "
                             f"node over a plate of its K rows, got {node!r}")
        if node.plates[-1].size != k or node.event_shape != (k,):
            raise ShapeError(f"node '{owner}': the transition matrix '{node.name}' must have an innermost plate "
                             f"of K = {k} rows and K = {k} states, it has plates {[p.name for p in node.plates]} "
                             f"and event {node.event_shape}")
        self.node, self.dim_plate = node, node.plates[-1]
        self.family = node.family
        self.plates = node.plates[:-1]
        self.event_shape = (k, k)
        self.name = f"rows({node.name})"

    def inputs(self):
        return [self.node]


class Sticks(Expression):
    """The K - 1 stick-breaking logits of a Categorical or Multinomial node over K categories (or
    their Polya-gamma auxiliaries): the one plate of ``inner`` that the node is not in, of size
    K - 1, read as an event axis (as ``Diagonal`` reads a plate of ARD precisions)."""

    def __init__(self, inner: Expression, owner: str, plates: tuple):
        extra = [p for p in inner.plates if p not in plates]
        if len(extra) != 1:
            raise ShapeError(f"node '{owner}': logits= needs the K - 1 logits of K categories over one plate that "
                             f"'{owner}' is not in (e.g. vmp.dot(W, X) with W in a plate of K - 1 classes); "
                             f"'{inner.name}' has plates {[p.name for p in inner.plates]}, '{owner}' "
                             f"{[p.name for p in plates]}")
        self.node, self.dim_plate = inner, extra[0]
        self.family = inner.family
        self.plates = tuple(p for p in inner.plates if p != self.dim_plate)
        self.event_shape = (self.dim_plate.size,)
        self.name = f"sticks({inner.name})"

    def inputs(self):
        return [self.node]


class Scaled(Expression):
    """``c * P`` (or ``P * c``, ``P / c``) for a positive constant c and a Gamma or Wishart node P,
    a gate or gather of one (``c * tau[z]``, ``c * tau[rows]``; ``(c * tau)[z]`` is ``c * tau[z]``),
    or a product of nodes."""

    def __init__(self, scale: float, node, *, divide: bool = False):
        written = f"'{node.name}' / {_describe(scale)}" if divide else f"{_describe(scale)} * '{node.name}'"
        if not node.family.scalable:
            names = " and ".join(f.name for f in fam.ALL if f.scalable)
            raise GraphError(f"{written}: only {names} nodes can be scaled (and Gaussian or Normal "
                             f"expressions, as a linear map)")
        if isinstance(scale, Expression):
            raise GraphError(f"{written}: a ratio of two nodes is not conjugate (E[1/c] is not a moment of "
                             f"c's q); multiply by a Gamma node instead, '{node.name}' * c")
        if np.ndim(scale) != 0 or isinstance(scale, (bool, np.bool_, str, bytes)):
            raise GraphError(f"{written}: '{node.name}' can only be scaled by one positive number; "
                             f"give per-element values in the node's own parameters instead")
        try:
            scale = float(scale)
        except (TypeError, ValueError):
            raise GraphError(f"{written}: the scale must be a positive finite number") from None
        if divide:
            scale = 1.0 / scale if scale != 0 else np.inf
        if not np.isfinite(scale) or scale <= 0:
            raise GraphError(f"{written}: the scale must be a positive finite number")
        self.scale, self.node = scale, node
        self.family, self.plates, self.event_shape = node.family, node.plates, node.event_shape
        self.name = f"{self.scale:g}*{node.name}"

    def inputs(self):
        return [self.node]

    def __getitem__(self, key):
        """``(c * P)[z]`` and ``(c * P)[rows]``: c times the gate or gather of the node P."""
        if not getattr(self.node, "random", False):
            return super().__getitem__(key)
        return Scaled(self.scale, self.node[key])


class Product(Expression):
    """``P * c`` (or ``c * P``) for a random scale c, a Gamma node, and P a Gamma or Wishart node
    (each a node, a gather or gate of one, or one of those times a constant). Under mean field
    every term stays multilinear: E[c P] = E[c] E[P], E[log c P] = E[log P] + k E[log c] with
    k = 1 for a Gamma P, D for a D x D Wishart (E[log|c Lambda|] = D E[log c] + E[log|Lambda|]),
    so each side receives a message of its own family (Winn & Bishop 2005 section 4 on
    deterministic nodes; the variational Student-t of Bishop PRML 10.2, Archambeau & Verleysen 2007,
    Svensen & Bishop 2005). ``node`` is the side that sets the family, ``scale`` the Gamma side."""

    def __init__(self, a: Expression, b: Expression):
        where = f"'{a.name}' * '{b.name}'"
        for e in (a, b):
            if not _scalable_side(e):
                raise GraphError(
                    f"{where}: '{e.name}' ({e.family.name}{', ' + type(e).__name__.lower() if not e.random else ''})"
                    f" cannot be a side of a product of nodes; a random scale multiplies a Gamma or Wishart "
                    f"node by a Gamma node (each a node, a gather or gate of one, or one times a constant)")
        if b.family.scales and not b.event_shape:
            node, scale = a, b
        elif a.family.scales and not a.event_shape:
            node, scale = b, a
        else:
            raise GraphError(f"{where}: one side must be a Gamma node (the random scale); got "
                             f"'{a.name}' ({a.family.name}) and '{b.name}' ({b.family.name})")
        shared = {n.name for n in _scaled_nodes(a)} & {n.name for n in _scaled_nodes(b)}
        if shared:
            raise GraphError(f"{where}: node(s) {sorted(shared)} appear on both sides; E[c^2] and E[log c^2] "
                             f"mix moments a {scale.family.name} q does not keep multilinear")
        self.node, self.scale = node, scale
        self.dimension = node.family.scale_dimension(node.event_shape)
        self.family, self.event_shape = node.family, node.event_shape
        self.plates = plate_union(node.plates, scale.plates)
        self.name = f"{node.name}*{scale.name}"

    def inputs(self):
        return [self.node, self.scale]

    def __rmul__(self, other):  # 2 * (tau * lam): a constant scales the product
        return Product(other, self) if isinstance(other, Expression) else Scaled(other, self)

    def __mul__(self, other):
        return Product(self, other) if isinstance(other, Expression) else Scaled(other, self)

    def __truediv__(self, other):
        return Scaled(other, self, divide=True)


def _scalable_side(e: Expression) -> bool:
    """A side of ``Product``: a node of a scalable family, a gather or gate of one, or one of
    those times a constant."""
    inner = e.node if isinstance(e, Scaled) else e
    return e.family.scalable and (getattr(inner, "random", False) or isinstance(inner, (Gather, Gate)))


def _scaled_nodes(e: Expression) -> list:
    """The nodes whose value a side of ``Product`` carries (not a gate's selector: z_k z_l = 0 for
    k != l, so two sides gated by one z stay multilinear)."""
    return [e] if e.random else _scaled_nodes(e.node)


def times(a, b) -> Expression:
    """``a * b`` of a node with anything: a constant scale (``Scaled``), a random one
    (``Product``), or a constant times a Gaussian or Normal node (``linear.scaled``)."""
    if isinstance(a, Expression) and isinstance(b, Expression):
        return Product(a, b)
    value, node = (a, b) if isinstance(b, Expression) else (b, a)
    if node.view(fam.Gaussian).family.location:
        return MAPS["scaled"](value, node)
    return Scaled(value, node)


def _describe(value) -> str:
    """How a scale appears in a message: a number as written, an array by its shape."""
    if isinstance(value, Expression):
        return f"'{value.name}'"
    if isinstance(value, np.ndarray) and value.ndim:
        return f"an array of shape {value.shape}"
    return repr(value)
