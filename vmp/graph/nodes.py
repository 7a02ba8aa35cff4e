"""The node types a user declares: one class per family of q."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import families as fam
from ..errors import GraphError, HyperparameterError, ShapeError
from ..factors import (BernoulliFactor, BetaFactor, BinomialFactor, CategoricalFactor, DirichletFactor,
                       ExponentialFactor, GammaFactor, GaussianARDFactor, GaussianDiagonalJointFactor, GaussianFactor,
                       GaussianIsotropicFactor, GaussianJointFactor, MultinomialFactor, NegativeBinomialFactor,
                       NormalFactor, NormalJointFactor, PoissonFactor, WishartFactor)
from ..factors.logit import (LogitBernoulliFactor, LogitBinomialFactor, LogitNegativeBinomialFactor,
                             LogitStickBreakingFactor, stick_probabilities)
from . import context
from . import polya_gamma as logit
from .data import Outer, Rows, is_lazy
from .expressions import Constant, Diagonal, Expression
from .node import Node, fixed, real_numbers


def _dim_of(value: Any, ndim_const: int) -> int | None:
    if isinstance(value, str):
        return None
    if isinstance(value, Expression):
        return value.event_shape[0] if value.event_shape else None
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged: the node's own check of the value names it
        return None
    return arr.shape[-1] if arr.ndim >= ndim_const else None


def _constant(node: Node, role: str, value: Any) -> np.ndarray:
    """A hyperparameter that only a constant can fill (``fixed`` refused random ones), as a float
    array, or a HyperparameterError naming the node and the role."""
    arr, why = real_numbers(value)
    if why is not None:
        raise HyperparameterError(f"node '{node.name}': {role} {why}")
    return arr


def _joint(name: str, mean: Any, precision: Any, factors: tuple) -> type | None:
    """The factor whose one role 'parameters' takes ``mean`` (a joint node's expression, given
    without a precision: ``vmp.Gaussian("x", theta[z])``), or None for a mean and a precision."""
    cls = next((f for f in factors if isinstance(mean, Expression) and mean.family is f.roles["parameters"]), None)
    if cls is None and precision is None:
        joints = " or ".join(f.roles["parameters"].name for f in factors)
        raise GraphError(f"node '{name}': give a precision, or as the mean a {joints} node (mean and "
                         f"precision together), got {getattr(mean, 'name', type(mean).__name__)!r}")
    if cls is not None and precision is not None:
        raise GraphError(f"node '{name}': '{mean.name}' ({mean.family.name}) is the mean and the precision; "
                         f"give no precision beside it")
    return cls


class Gaussian(Node):
    """Multivariate Gaussian x ~ N(mean, precision^-1) with a D-vector event.

    mean: constant, Gaussian node, gate, gather or sum of them; precision: constant matrix,
    Wishart node, a Gamma node over a plate of size D (ARD: precision diag(alpha), one Gamma
    alpha_d per dimension, as BayesPy's GaussianARD), or a Gamma node on the Gaussian's own plates
    (none, or some of them: precision alpha I, one alpha for the D dimensions of each element).
    Or, without a precision, mean and precision together: a GaussianWishart node (mu, Lambda) or
    a gate or gather of one (``theta[z]``), or a NormalGamma node over a plate of the D
    coordinates (mu_d, tau_d), precision diag(tau).

    mask: over the plates, or over plates + (D,) (True where observed): the masked coordinates of
    an element are latent, q(x_m | x_o = data) (docs/reference.md, "Missing data").
    """

    family = fam.Gaussian
    factor_cls = GaussianFactor

    def __init__(self, name: str, mean: Any, precision: Any = None, *, observed=None, mask=None, weights=None):
        joint = _joint(name, mean, precision, (GaussianJointFactor, GaussianDiagonalJointFactor))
        if joint is not None:
            self.factor_cls = joint
            if joint is GaussianDiagonalJointFactor:
                mean = Diagonal(mean, name, None, joint.roles["parameters"])
            super().__init__(name, {"parameters": mean}, observed, mask, weights)
            return
        if isinstance(precision, Expression) and precision.family is GaussianARDFactor.roles["precision"]:
            if set(precision.plates) <= set(context.active_plates()):
                self.factor_cls = GaussianIsotropicFactor
            else:
                self.factor_cls = GaussianARDFactor
                precision = Diagonal(precision, name, _dim_of(mean, 1), GaussianARDFactor.roles["precision"])
        super().__init__(name, {"mean": mean, "precision": precision}, observed, mask, weights)

    def _make_factor(self):
        if self.factor_cls in (GaussianARDFactor, GaussianIsotropicFactor, GaussianDiagonalJointFactor):
            return self.factor_cls(self.event_shape, self.plate_shape)
        return super()._make_factor()

    def _infer_event_shape(self, roles):
        if "parameters" in roles:
            return roles["parameters"].event_shape
        prec = roles["precision"]
        dims = {d for d in (_dim_of(roles["mean"], 1), _dim_of(prec, 2 if self.factor_cls is GaussianFactor else 1))
                if d is not None}
        if len(dims) != 1:
            raise ShapeError(
                f"node '{self.name}': cannot tell the dimension D from mean and precision "
                f"(found {sorted(dims) or 'none'}); give a D-vector mean or a DxD precision"
            )
        return (dims.pop(),)

    lazy_data = True

    def _fill_value(self):
        return np.zeros(self.event_shape)

    def conditional(self, parents):
        """eta = (Lambda mu, -Lambda/2); an ARD precision's values are its diagonal, an isotropic
        one's its scale; a joint parent's values are (mu, Lambda) points, or (mu_d, tau_d) pairs
        over the coordinates."""
        if "parameters" in parents:
            return self.family.natural_from(*_mean_and_precision(parents["parameters"], self.factor_cls))
        precision = parents["precision"]
        if self.factor_cls is GaussianARDFactor:
            precision = precision[..., :, None] * np.eye(self.event_shape[0])
        elif self.factor_cls is GaussianIsotropicFactor:
            precision = precision[..., None, None] * np.eye(self.event_shape[0])
        return self.family.natural_from(parents["mean"], precision)

    def _statistics(self, data):
        return Outer(_points(data))


def _mean_and_precision(values: np.ndarray, factor_cls) -> tuple[np.ndarray, np.ndarray]:
    """(mu, Lambda) of a joint parent's values: GaussianWishart points (rows Lambda, then mu), or
    NormalGamma pairs (mu_d, tau_d) over a last axis of coordinates (Lambda = diag(tau))."""
    if factor_cls is GaussianDiagonalJointFactor:
        return values[..., 0], values[..., 1][..., :, None] * np.eye(values.shape[-2])
    return values[..., -1, :], values[..., :-1, :]


def _points(data):
    """Observed values as they are when out of core, else as a float array."""
    return data if is_lazy(data) else np.asarray(data, float)


class Normal(Node):
    """Univariate Gaussian, elementwise over plates: x ~ N(mean, 1/precision).

    mean: constant, Normal node, gather, gate or vmp.dot(u, v); precision: constant or Gamma node.
    Or, without a precision, mean and precision together: a NormalGamma node (mu, tau), or a gate
    or gather of one (``theta[z]``).
    """

    family = fam.Normal
    factor_cls = NormalFactor
    lazy_data = True

    def _statistics(self, data):
        return Outer(_points(data), square=True)

    def __init__(self, name: str, mean: Any, precision: Any = None, *, observed=None, mask=None, weights=None):
        if _joint(name, mean, precision, (NormalJointFactor,)) is not None:
            self.factor_cls = NormalJointFactor
            super().__init__(name, {"parameters": mean}, observed, mask, weights)
            return
        super().__init__(name, {"mean": mean, "precision": precision}, observed, mask, weights)

    def _fill_value(self):
        return np.zeros(())

    def conditional(self, parents):
        """eta = (tau mu, -tau/2); a NormalGamma parent's values are (mu, tau) pairs."""
        if "parameters" in parents:
            mean, precision = parents["parameters"][..., 0], parents["parameters"][..., 1]
        else:
            mean, precision = parents["mean"], parents["precision"]
        mean, precision = np.broadcast_arrays(mean, precision)
        return self.family.natural_from(mean, precision)


class Gamma(Node):
    """Gamma(shape, rate), E[x] = shape / rate. rate: constant or Gamma node; shape: constant."""

    family = fam.Gamma
    factor_cls = GammaFactor

    def __init__(self, name: str, shape: Any, rate: Any, *, observed=None, mask=None, weights=None):
        self._shape = fixed(name, type(self), "shape", shape)
        super().__init__(name, {"rate": rate}, observed, mask, weights)

    def _make_factor(self):
        return GammaFactor((), self._hyperparameter("shape", self._shape, ()))

    def conditional(self, parents):
        return self.family.natural_from(self.factor.shape, parents["rate"])

    def _fill_value(self):
        return np.ones(())


class Wishart(Node):
    """Wishart(dof, scale) over DxD precision matrices, E[x] = dof * scale (scipy.stats.wishart)."""

    family = fam.Wishart
    factor_cls = WishartFactor

    def __init__(self, name: str, dof: Any, scale: Any, *, observed=None, mask=None, weights=None):
        self._dof, self._scale = fixed(name, type(self), "dof", dof), fixed(name, type(self), "scale", scale)
        super().__init__(name, {}, observed, mask, weights)

    def _infer_event_shape(self, roles):
        scale = _constant(self, "scale", self._scale)
        if scale.ndim < 2 or scale.shape[-1] != scale.shape[-2]:
            raise ShapeError(f"node '{self.name}': scale must be a DxD matrix, got shape {scale.shape}")
        return (scale.shape[-1], scale.shape[-1])

    def _make_factor(self):
        v = self._hyperparameter("scale", self._scale, self.event_shape)
        return WishartFactor(self.event_shape, self._hyperparameter("dof", self._dof, ()), v)

    def conditional(self, parents):
        return self.family.natural_from(self.factor.dof, self.factor.scale)

    def _fill_value(self):
        return np.eye(self.event_shape[0])


class Dirichlet(Node):
    """Dirichlet(alpha) over probability vectors of the last axis."""

    family = fam.Dirichlet
    factor_cls = DirichletFactor

    def __init__(self, name: str, alpha: Any, *, observed=None, mask=None, weights=None):
        self._alpha = fixed(name, type(self), "alpha", alpha)
        super().__init__(name, {}, observed, mask, weights)

    def _infer_event_shape(self, roles):
        alpha = _constant(self, "alpha", self._alpha)
        if alpha.ndim < 1 or alpha.shape[-1] < 2:
            raise ShapeError(f"node '{self.name}': alpha must be a vector of at least 2 entries")
        return (alpha.shape[-1],)

    def _make_factor(self):
        return DirichletFactor(self.event_shape, self._hyperparameter("alpha", self._alpha, self.event_shape))

    def conditional(self, parents):
        return self.family.natural_from(self.factor.alpha)

    def _fill_value(self):
        return np.full(self.event_shape, 1.0 / self.event_shape[0])

    def _statistics(self, data):
        return (np.log(data),)


def _categories(name: str, roles: dict) -> tuple[int]:
    """(K,): the number of categories a node's probabilities (or K - 1 logits) give."""
    if "logits" in roles:
        k = _dim_of(roles["logits"], 1)
        return (k + 1,) if k is not None else _categories_missing(name, "logits")
    k = _dim_of(roles["probabilities"], 1)
    return (k,) if k is not None else _categories_missing(name, "probabilities")


def _categories_missing(name: str, role: str):
    raise ShapeError(f"node '{name}': cannot tell the number of categories from {role}")


def _one_link(name: str, value: Any, logit_value: Any, role: str, logit_role: str) -> bool:
    """True for the conjugate parameter, False for the logit link; a GraphError unless exactly
    one of them is given."""
    if (value is None) == (logit_value is None):
        raise GraphError(f"node '{name}': give {role}= or {logit_role}= (a logit link), exactly one of them")
    return logit_value is None


def context_plates() -> tuple:
    from .context import active_plates

    return active_plates()


class Categorical(Node):
    """Categorical(probabilities) over K categories; observed data are integers in [0, K).

    ``logits=Psi`` (observed only): the stick-breaking logistic link (Linderman et al. 2015),
    pi_k = sigmoid(psi_k) prod_{j<k} (1 - sigmoid(psi_j)), with Psi a Normal-valued expression
    whose one plate beyond the node's holds the K - 1 logits (``vmp.dot(W, X)`` with W in a
    plate of K - 1 classes); the engine adds the Polya-gamma auxiliary '<name>.omega'."""

    family = fam.Categorical
    factor_cls = CategoricalFactor

    def __init__(self, name: str, probabilities: Any = None, *, logits: Any = None, observed=None, mask=None,
                 weights=None):
        if _one_link(name, probabilities, logits, "probabilities", "logits"):
            super().__init__(name, {"probabilities": probabilities}, observed, mask, weights)
            return
        self.factor_cls = LogitStickBreakingFactor
        logits = logit.sticks(name, "Categorical", LogitStickBreakingFactor, logits, context_plates())
        logit.declare(self, name, {"logits": logits}, observed, mask, weights)

    def _make_factor(self):
        if self.factor_cls is LogitStickBreakingFactor:
            return LogitStickBreakingFactor(self.event_shape, self.plate_shape)
        return super()._make_factor()

    def _infer_event_shape(self, roles):
        return _categories(self.name, roles)

    def _data_event_shape(self):
        return ()

    def conditional(self, parents):
        if "logits" in parents:
            return self.family.natural_from(stick_probabilities(parents["logits"]))
        return self.family.natural_from(parents["probabilities"])

    def _fill_value(self):
        return np.zeros((), dtype=int)

    def _check_data(self, data):
        if data.dtype.kind == "f":
            if not np.all(np.isfinite(data)):
                return "contain NaN or inf"
            if not np.all(data == np.round(data)):
                return "must be integer category indices"
        elif data.dtype.kind not in "iu":
            return "must be integer category indices"
        if data.size and (data.min() < 0 or data.max() >= self.event_shape[0]):
            return f"must lie in [0, {self.event_shape[0]})"
        return _impossible(self, lambda p: np.take_along_axis(p, data[..., None].astype(np.int64), -1)[..., 0] <= 0)

    def _statistics(self, data):
        return _OneHot(data.astype(np.int64), self.event_shape[0])


class _OneHot(tuple):
    """(one-hot(x),) formed only when read: observed words are used through their indices."""

    def __new__(cls, data: np.ndarray, size: int):
        obj = super().__new__(cls, (None,))
        obj.data, obj.size, obj._dense = data, size, None
        return obj

    def __getitem__(self, i):
        if i not in (0, -1):
            raise IndexError(i)
        if self._dense is None:
            one_hot = lambda data: fam.Categorical.statistics(data, (self.size,))[0]  # noqa: E731
            self._dense = self.data.mapped(one_hot, (self.size,)) if isinstance(self.data, Rows) else one_hot(self.data)
        return self._dense

    def __iter__(self):
        yield self[0]

    def __reduce__(self):
        return (_OneHot, (self.data, self.size))


class Poisson(Node):
    """Poisson counts y ~ Poisson(exposure * rate), observed only (its base measure is 1/y!).

    rate: constant, Gamma node, gated Gamma ``lam[z]`` (mixtures, Poisson HMM emissions),
    ``c * lam``; exposure: positive constants over the plates (default 1).
    """

    family = fam.Poisson
    factor_cls = PoissonFactor

    def __init__(self, name: str, rate: Any, *, exposure: Any = None, observed=None, mask=None, weights=None):
        self._exposure = None if exposure is None else fixed(name, type(self), "exposure", exposure)
        super().__init__(name, {"rate": rate}, observed, mask, weights)

    def _make_factor(self):
        t = None if self._exposure is None else self._hyperparameter("exposure", self._exposure, ())
        return PoissonFactor((), t)

    def conditional(self, parents):
        """eta = log(exposure * rate)."""
        rate = parents["rate"]
        return self.family.natural_from(rate if self.factor.exposure is None else rate * self.factor.exposure)

    def _fill_value(self):
        return np.zeros(())


class Exponential(Node):
    """Exponential(rate), E[x] = 1 / rate; rate: constant or Gamma node. Observed or latent."""

    family = fam.Exponential
    factor_cls = ExponentialFactor

    def __init__(self, name: str, rate: Any, *, observed=None, mask=None, weights=None):
        super().__init__(name, {"rate": rate}, observed, mask, weights)

    def conditional(self, parents):
        return self.family.natural_from(parents["rate"])

    def _fill_value(self):
        return np.ones(())


class Multinomial(Node):
    """Count vectors x ~ Multinomial(n, probabilities) over K categories, observed only; the number
    of trials n of each element is its data's sum. probabilities: constant, Dirichlet node or gated
    Dirichlet ``p[z]`` (mixtures of count vectors); or ``logits=Psi``, K - 1 stick-breaking logits
    as for ``Categorical`` (x_k | x_<k ~ Bin(n - sum_{j<k} x_j, sigmoid(psi_k)))."""

    family = fam.Multinomial
    factor_cls = MultinomialFactor

    def __init__(self, name: str, probabilities: Any = None, *, logits: Any = None, observed=None, mask=None,
                 weights=None):
        self._n = None if observed is None else _trials(observed, mask)
        if self._n is not None:
            self.family = fam.Multinomial.of(self._n)
        if _one_link(name, probabilities, logits, "probabilities", "logits"):
            super().__init__(name, {"probabilities": probabilities}, observed, mask, weights)
            return
        self.factor_cls = LogitStickBreakingFactor
        logits = logit.sticks(name, "Multinomial", LogitStickBreakingFactor, logits, context_plates())
        logit.declare(self, name, {"logits": logits}, observed, mask, weights)

    def _make_factor(self):
        if self.factor_cls is LogitStickBreakingFactor:
            return LogitStickBreakingFactor(self.event_shape, self.plate_shape, 0.0 if self._n is None else self._n)
        return super()._make_factor()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "family"}  # a class made here, rebuilt

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._n is not None:
            self.family = fam.Multinomial.of(self._n)

    def _infer_event_shape(self, roles):
        return _categories(self.name, roles)

    def conditional(self, parents):
        if "logits" in parents:
            return self.family.natural_from(stick_probabilities(parents["logits"]))
        return self.family.natural_from(parents["probabilities"])

    def _fill_value(self):
        return np.zeros(self.event_shape)

    def _check_data(self, data):
        why = super()._check_data(data)
        return why if why is not None else _impossible(self, lambda p: np.any((data > 0) & (p <= 0), axis=-1))


def _impossible(node, zero_at) -> str | None:
    """Why data are impossible under a constant probability vector: ``zero_at(p)`` (p over plates
    + categories) marks the elements whose data need a category of probability 0 (their bound
    would be -inf); masked elements and those of weight 0 are not data."""
    p = node.parents.get("probabilities")
    if not isinstance(p, Constant):
        return None
    value = np.asarray(p.value, float)
    bad = np.array(zero_at(np.broadcast_to(value, node.plate_shape + value.shape[-1:])), bool)
    if node.mask is not None:
        bad &= np.asarray(node.mask, bool).reshape(node.mask.shape[:bad.ndim])
    if node.multiplicity is not None:
        bad &= np.broadcast_to(node.multiplicity, bad.shape) > 0
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"need a category whose constant probability is 0 at {int(bad.sum())} element(s) (the first at "
            f"{first}): impossible under the model")


def _trials(observed, mask) -> np.ndarray | None:
    """n = sum_k x_k per element (0 where masked); None when the data are not numbers (the
    node's data check then says why)."""
    try:
        n = np.asarray(observed, float).sum(-1)
        return n if mask is None else np.where(np.asarray(mask, bool), n, 0.0)
    except (TypeError, ValueError):
        return None


class Beta(Node):
    """Beta(alpha, beta) over probabilities p in (0, 1), E[p] = alpha / (alpha + beta)."""

    family = fam.Beta
    factor_cls = BetaFactor

    def __init__(self, name: str, alpha: Any, beta: Any, *, observed=None, mask=None, weights=None):
        self._alpha = fixed(name, type(self), "alpha", alpha)
        self._beta = fixed(name, type(self), "beta", beta)
        super().__init__(name, {}, observed, mask, weights)

    def _make_factor(self):
        return BetaFactor((), self._hyperparameter("alpha", self._alpha, ()), self._hyperparameter("beta", self._beta, ()))

    def conditional(self, parents):
        return self.family.natural_from(self.factor.alpha, self.factor.beta)

    def _fill_value(self):
        return np.full((), 0.5)


class Bernoulli(Node):
    """Bernoulli(probability) over x in {0, 1}; probability: constant in (0, 1) or Beta node
    (gated, ``p[z]``, for a mixture of binary vectors). ``logit=psi`` (observed only): p =
    sigmoid(psi) for a Normal-valued expression psi (logistic regression: ``vmp.dot(w, X)``), the
    engine adding the Polya-gamma auxiliary '<name>.omega'."""

    family = fam.Bernoulli
    factor_cls = BernoulliFactor

    def __init__(self, name: str, probability: Any = None, *, logit: Any = None, observed=None, mask=None,
                 weights=None):
        if _one_link(name, probability, logit, "probability", "logit"):
            super().__init__(name, {"probability": probability}, observed, mask, weights)
            return
        _logit_link(self, name, LogitBernoulliFactor, logit, observed, mask, weights)

    def conditional(self, parents):
        if "logit" in parents:
            return (np.asarray(parents["logit"], float),)
        return self.family.natural_from(parents["probability"])

    def _fill_value(self):
        return np.zeros(())


class Binomial(Node):
    """Binomial(trials, probability): the number of successes in ``trials`` (non-negative
    integers, per element, broadcast over the plates) with success probability ``probability``
    (constant in (0, 1) or Beta node, gated ``p[z]`` for mixtures), or ``logit=psi``: p =
    sigmoid(psi) for a Normal-valued expression psi (binomial regression). Observed only."""

    family = fam.Binomial
    factor_cls = BinomialFactor
    #: keyword arguments beyond the family's parameters that a table-driven declaration needs
    example_arguments = {"trials": fam.binomial.EXAMPLE_TRIALS}

    def __init__(self, name: str, trials: Any, probability: Any = None, *, logit: Any = None, observed=None,
                 mask=None, weights=None):
        self._trials = fixed(name, type(self), "trials", trials)
        if _one_link(name, probability, logit, "probability", "logit"):
            super().__init__(name, {"probability": probability}, observed, mask, weights)
            return
        _logit_link(self, name, LogitBinomialFactor, logit, observed, mask, weights)

    def _make_factor(self):
        factor = self.factor_cls((), self._hyperparameter("trials", self._trials, ()))
        self.family = factor.child
        return factor

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "family"}  # the factor's, rebuilt

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.family = self.factor.child

    def conditional(self, parents):
        if "logit" in parents:
            return (np.asarray(parents["logit"], float),)
        return self.family.natural_from(parents["probability"])

    def _fill_value(self):
        return np.zeros(())


class NegativeBinomial(Binomial):
    """NegativeBinomial(r, probability): the count of successes before the r-th failure (r > 0,
    per element, broadcast over the plates), success probability ``probability`` (constant in
    (0, 1) or Beta node), or ``logit=psi``: p = sigmoid(psi) for a Normal-valued expression psi
    (overdispersed count regression, E[y] = r e^psi). Observed only."""

    family = fam.NegativeBinomial
    factor_cls = NegativeBinomialFactor
    example_arguments = {"r": fam.negative_binomial.EXAMPLE_R}

    def __init__(self, name: str, probability: Any = None, *, r: Any, logit: Any = None, observed=None, mask=None,
                 weights=None):
        self._trials = fixed(name, type(self), "r", r)
        if _one_link(name, probability, logit, "probability", "logit"):
            Node.__init__(self, name, {"probability": probability}, observed, mask, weights)
            return
        _logit_link(self, name, LogitNegativeBinomialFactor, logit, observed, mask, weights)

    def _make_factor(self):
        factor = self.factor_cls((), self._hyperparameter("r", self._trials, ()))
        self.family = factor.child
        return factor

    def conditional(self, parents):
        """eta = log p (log sigmoid(psi) for a logit)."""
        if "logit" in parents:
            return (-np.logaddexp(0.0, -np.asarray(parents["logit"], float)),)
        return self.family.natural_from(parents["probability"])


def _logit_link(node: Node, name: str, factor, psi: Any, observed, mask, weights) -> None:
    """Declare ``node`` with the logit link ``factor`` and its Polya-gamma auxiliary."""
    logit.logit_parent(name, node.family.name, factor, "logit", psi)
    node.factor_cls = factor
    logit.declare(node, name, {"logit": psi}, observed, mask, weights)
