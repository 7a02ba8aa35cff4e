"""The exponential-family protocol.

A distribution is written, as in Winn & Bishop (2005) eq. (2),

    log p(x) = <eta, u(x)> - A(eta) + log h(x)

with natural parameters ``eta`` and sufficient statistics ``u(x)``, both tuples of arrays
shaped ``plates + event``, and base measure h. The moments E[u(x)] are the gradient of the
log-normalizer A. Everything the engine, the initializer, the diagnostics and the tests know
about a family is a method or an attribute here: no code outside ``vmp/families/`` asks which
family a node has.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar

import numpy as np

from . import constraints
from ._linalg import inner, mark_symmetric, symmetric_part

Arrays = tuple[np.ndarray, ...]


class Family(ABC):
    """Exponential-family math on arrays with leading plate axes. Stateless."""

    name: ClassVar[str]
    #: number of trailing event axes of each component of eta and u
    event_ndims: ClassVar[tuple[int, ...]]
    #: components that, for a point mass, are outer products of other components:
    #: {c: (a, b)} means u_c(x) = u_a(x) (x) u_b(x)
    outer: ClassVar[dict[int, tuple[int, int]]] = {}
    #: the domain of x
    support: ClassVar[constraints.Constraint]
    #: the domain of each parameter of ``natural_from`` / ``parameters``; ``valid`` checks them
    arg_constraints: ClassVar[dict[str, constraints.Constraint]]
    #: True when x picks one of ``categories(event_shape)`` components, the expectation of its
    #: one-hot indicator [x = k] being ``indicator(E[u_0])``, affine in E[u_0]: such a node can
    #: select a component, ``P[z]`` (Winn & Bishop section 4.2 on gates)
    selects: ClassVar[bool] = False
    #: True when a selecting family's E[u_0] is that indicator itself (a distribution over the
    #: last event axis, as the Categorical's); False when ``indicator`` maps it (the Bernoulli)
    one_hot: ClassVar[bool] = True
    #: True when x is a point of R^D with u = (x, x x^T): sums and inner products of such
    #: variables keep every term multilinear, and k-means++ centers are starting points for it
    location: ClassVar[bool] = False
    #: True when x is 0 or 1, so x^2 = x: such a variable may multiply a Normal inside a
    #: factorized ``dot`` (E[(z u)^2] = E[z] E[u^2]), e.g. the binary Z_nk of a factorial mixture
    binary: ClassVar[bool] = False
    #: True when c x (a constant c > 0) is in the family with u(c x) = (c u_0(x), u_1(x) +
    #: ``scale_dimension`` log c): the ``c * P`` glue
    scalable: ClassVar[bool] = False
    #: True when x > 0 is a scalar with u = (x, log x): a node of it may scale a ``scalable`` node
    #: P, ``c * P`` for a random c, keeping every term multilinear under mean field
    #: (E[c P] = E[c] E[P], E[u_1(c P)] = E[u_1(P)] + ``scale_dimension`` E[log c]): the
    #: variational Student-t's per-point precision scale (Bishop PRML 10.2, Archambeau & Verleysen 2007)
    scales: ClassVar[bool] = False
    #: True when x > 0 with u = (x, log x): for m = sum_k x_k over independent q(x_k), E[m] stays
    #: multilinear and E[log m] >= sum_k phi_k (E[log x_k] - log phi_k) for every allocation phi
    #: (Jensen), with equality at phi_k ∝ exp E[log x_k]: ``vmp.dot`` of two such plated nodes
    #: (Poisson factorization, Gopalan et al. 2015, eq. (3)-(5))
    allocates: ClassVar[bool] = False
    #: h(x) = 1; a family with another base measure is observed-only (``latent`` False), as the
    #: bound has no E_q[log h(x)] term for a latent q
    unit_base_measure: ClassVar[bool] = True
    #: may a node of this family be latent (have a q)
    latent: ClassVar[bool] = True
    #: True when ``optimum`` reads fewer numbers than the inner products <message, E[u]> it
    #: replaces (the Gaussian's: E[x] and the kept factorization, never E[x x^T]): the bound
    #: right after such a node's update takes it (``Engine._at_optimum``)
    closed_optimum: ClassVar[bool] = False
    #: the number of innermost plate axes whose elements are one variable, not independent ones
    #: (a Markov chain's time axis): ``log_normalizer``, ``entropy`` and the log-density are
    #: per element only as terms of a sum over these axes, and ``valid`` answers for them whole
    joint_plates: ClassVar[int] = 0
    #: True when single coordinates of an event may be observed, the others latent: ``pin`` gives
    #: q(x_m | x_o) in the event's layout and ``pinned_entries`` the statistics' entries that
    #: the observed coordinates fix (the Gaussian's; a mask over plates + event)
    pins_coordinates: ClassVar[bool] = False
    #: True when ``spread`` gives Var[c^T x] of a q over vectors from its natural parameters
    #: (the Gaussian's: a solve with its precision's factor), which a regression's quadratic
    #: reads about q's mean (``graph/strategies/centered.py``)
    spreads: ClassVar[bool] = False
    #: the family of one step of a chain read alone (a Gaussian chain's x_t is a Gaussian), for
    #: a family whose ``joint_plates`` are steps; None otherwise
    step_family: ClassVar[type | None] = None
    #: True when a node of it is a Gaussian's mean and precision together (a mixture component of
    #: points in R^D): gated components of it start from the k-means responsibilities of their
    #: child's points (``inference.init.kmeans_components``), as scikit-learn's and hmmlearn's
    clusters: ClassVar[bool] = False
    #: a family whose first statistics are another family's (a stick-breaking node's log pi is a
    #: Dirichlet's u): it may fill a factor's role for that family, which reads only those
    #: statistics (``fills``)
    reads_as: ClassVar[type | None] = None
    #: event shape of ``example()``
    example_event: ClassVar[tuple[int, ...]] = ()
    #: the class attributes holding per-element data that ``bound`` fixes (a Binomial's trials)
    bound_to: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.unit_base_measure and cls.latent:
            raise TypeError(f"family {cls.__name__}: a non-unit base measure needs latent = False "
                            f"(the bound has no E_q[log h(x)] term for a latent q)")

    @classmethod
    def fills(cls, role: type) -> bool:
        """May a node of this family fill a factor's role that consumes ``role``'s moments: it is
        that family, or its first statistics are that family's (``reads_as``)."""
        return cls is role or cls.reads_as is role

    # ----- a selector's indicator (``selects``) ------------------------------------------
    @classmethod
    def categories(cls, event_shape: tuple[int, ...]) -> int:
        """The number of components a selecting family picks among."""
        return event_shape[0]

    @classmethod
    def indicator(cls, mean: np.ndarray) -> np.ndarray:
        """E[[x = k]] over a last axis of ``categories`` from E[u_0] (a selecting family)."""
        return mean

    @classmethod
    def indicator_message(cls, message: np.ndarray) -> np.ndarray:
        """The message to E[u_0] of a term linear in ``indicator(E[u_0])`` with coefficients
        ``message`` over the categories (the chain rule through ``indicator``)."""
        return message

    # ----- parameters <-> natural parameters --------------------------------------------
    @staticmethod
    @abstractmethod
    def natural_from(**parameters: Any) -> Arrays:
        """eta from the parameters in the user's parameterization (the keys of ``parameters``)."""

    @classmethod
    @abstractmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """The parameters of eta: ``natural_from(**parameters(eta)) == eta`` for the keys of
        ``arg_constraints`` (more keys, e.g. a covariance, may be given)."""

    # ----- the log-normalizer and its gradient ------------------------------------------
    @classmethod
    @abstractmethod
    def moments(cls, natural: Arrays) -> Arrays:
        """E[u(x)] = dA/d eta."""

    @classmethod
    @abstractmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """A(eta) = log int h(x) exp(<eta, u(x)>) dx, one value per plate element."""

    @classmethod
    def inner(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """<eta, u> = sum_c sum over event axes of eta_c * u_c, one value per plate element."""
        return sum(inner(e, u, n) for e, u, n in zip(natural, moments, cls.event_ndims))

    @classmethod
    def log_base_measure(cls, x: np.ndarray, event_shape: tuple[int, ...]) -> np.ndarray:
        """log h(x) of observed values x (plates + data event), one value per plate element
        (0, broadcasting, for a unit base measure). An observed node's factor adds
        sum_n w_n log h(x_n) to the bound (e.g. a Poisson's -log y!), so the evidence is exact."""
        return np.zeros(())

    @classmethod
    def expected_log_base_measure(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """E_q[log h(x)], one value per plate element: 0 for a unit base measure; a family with
        another base measure overrides it for its entropy (or leaves it unavailable)."""
        if cls.unit_base_measure:
            return np.zeros(cls.plate_shape(natural))
        raise NotImplementedError(f"{cls.name}: E[log h(x)] has no closed form here")

    @classmethod
    def optimum(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """A(eta) - E[log h(x)] = H[q] + <eta, E[u]>, one value per plate element: the bound's
        terms that read a node (its factors' expected log-densities, linear in E[u], plus its
        entropy) when eta is the sum of those factors' messages, i.e. right after its coordinate
        update (Winn & Bishop eq. (5)). A family with a cheaper closed form overrides it."""
        return cls.entropy(natural, moments) + cls.inner(natural, moments)

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H[q] = A(eta) - <eta, E[u]> - E[log h(x)]."""
        if moments is None:
            moments = cls.moments(natural)
        h = cls.log_normalizer(natural) - cls.inner(natural, moments)
        return h if cls.unit_base_measure else h - cls.expected_log_base_measure(natural, moments)

    @classmethod
    def tempered_log_normalizer(cls, natural: Arrays, s: float) -> np.ndarray:
        """log int p(x | eta)^s dx, one value per plate element (Mandt et al., Variational
        Tempering, eq. (3) for one observation): A(s eta) - s A(eta) when h = 1. A family with
        another base measure raises h(x) to s as well and overrides this."""
        if not cls.unit_base_measure:
            raise NotImplementedError(f"{cls.name}: the tempered log-normalizer raises h(x) to s; no closed form here")
        return cls.log_normalizer(tuple(e * s for e in natural)) - s * cls.log_normalizer(natural)

    @classmethod
    def kl(cls, natural: Arrays, other: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """KL(q_eta || q_eta') = A(eta') - A(eta) - <eta' - eta, E_eta[u]>, one value per plate
        element (the Bregman divergence of the log-normalizer; Winn & Bishop: the bound still to
        gain by moving a conjugate node from eta to its coordinate optimum eta')."""
        if moments is None:
            moments = cls.moments(natural)
        step = tuple(np.subtract(b, a) for a, b in zip(natural, other))
        return cls.log_normalizer(other) - cls.log_normalizer(natural) - cls.inner(step, moments)

    @classmethod
    def mean(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """E[x] in the user's parameterization; by default E[u_0] (x itself for most
        families; probabilities for a Categorical)."""
        return (cls.moments(natural) if moments is None else moments)[0]

    @classmethod
    def mean_change(cls, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """Per element, the mean absolute difference of two means over the event axes (the local
        convergence test, as scikit-learn's mean change of a document's topic proportions)."""
        diff = np.abs(old - new)
        events = cls.event_ndims[0]
        return diff.mean(axis=tuple(range(diff.ndim - events, diff.ndim))) if events else diff

    # ----- domains ----------------------------------------------------------------------
    @classmethod
    def constraints_for(cls, event_shape: tuple[int, ...]) -> dict[str, constraints.Constraint]:
        """``arg_constraints`` for this event shape (a Wishart's dof > D - 1 depends on D)."""
        return cls.arg_constraints

    @classmethod
    def constrained(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """The values the ``arg_constraints`` speak of, at eta (by default ``parameters``; a
        family may give cheaper equivalents, e.g. the Gaussian's Lambda mu for mu)."""
        return cls.parameters(natural)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """Boolean per plate element: is eta in the natural-parameter domain, i.e. do the
        parameters satisfy ``constraints_for`` (each of which requires finite values)."""
        plates = cls.plate_shape(natural)
        ok = np.ones(plates, dtype=bool)
        with np.errstate(all="ignore"):
            try:
                values = cls.constrained(natural)
            except (np.linalg.LinAlgError, ValueError):
                return np.zeros(plates, dtype=bool)
            for key, c in cls.constraints_for(cls.event_shape(natural)).items():
                good = np.asarray(c.check(values[key]))
                if good.ndim > len(plates):
                    good = good.reshape(good.shape[:len(plates)] + (-1,)).all(-1)
                ok &= good
        return ok

    @classmethod
    def symmetrize(cls, message: Arrays, exact: frozenset = frozenset()) -> Arrays:
        """The message with every matrix component (u = x x^T, u = Lambda) replaced by its symmetric
        part: <eta, u> is unchanged for symmetric u, and q's natural parameters stay symmetric.
        The components in ``exact`` are exactly symmetric as formed (the caller knows how): kept
        as they are, which is what their symmetric part is, without reading them."""
        return tuple(m if i in exact or n != 2 else symmetric_part(m)
                     for i, (m, n) in enumerate(zip(message, cls.event_ndims)))

    @classmethod
    def spread(cls, natural: Arrays, c: np.ndarray) -> np.ndarray:
        """Var[c^T x] for each vector c of a q without plates, where ``spreads``."""
        raise NotImplementedError(f"{cls.name} has no spread along vectors")

    @staticmethod
    def parts(message: Arrays | None) -> Any:
        """What a message says of itself beyond its values (``Gaussian.parts``), taken before
        it is summed into; None for a family whose messages say nothing more."""
        return None

    @staticmethod
    def declare_parts(total: Arrays | None, parts: list) -> None:
        """Say of a sum of messages ``total`` what its terms said of themselves (``parts``, each
        taken by :meth:`parts`; ``Gaussian``); nothing here."""

    @staticmethod
    def factor_from_parts(total: Arrays, prior: Arrays | None, parts: Any) -> None:
        """Given lambda^temp = ``prior`` + the message whose ``parts`` were taken, keep what
        reads ``total`` better from its parts than from its values (``Gaussian``); nothing here."""

    @staticmethod
    def blended(out: Arrays, old: Arrays, new: Arrays, rho: Any) -> None:
        """Given ``out`` = (1 - rho) ``old`` + rho ``new``, keep what reads ``out`` better from
        the parts of ``old`` and ``new`` than from its values (``Gaussian``); nothing here."""

    @classmethod
    def summed_symmetric(cls, total: Arrays) -> Arrays:
        """lambda^temp summed from messages that :meth:`symmetrize` made exactly symmetric (and
        divided by a multiplicity per element): so is the sum, elementwise. Its matrix
        components are marked so (``_linalg.mark_symmetric``), so that their factorization
        reads one triangle (the same numbers)."""
        return tuple(mark_symmetric(m) if n == 2 else m for m, n in zip(total, cls.event_ndims))

    # ----- points -------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...]) -> Arrays:
        """Sufficient statistics u(x) of points x shaped plates + data event (a Categorical's
        data are indices and its event_shape (K,) gives K)."""

    @classmethod
    @abstractmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Draws x ~ p(x | eta), shaped size + plates + data event."""

    @classmethod
    @abstractmethod
    def to_scipy(cls, natural: Arrays):
        """The distribution as a frozen ``scipy.stats`` object (its entropy, logpdf/logpmf and
        mean), or an object with those methods where scipy has no batched form."""

    @classmethod
    def random_natural(cls, rng: np.random.Generator, plate_shape: tuple[int, ...],
                       event_shape: tuple[int, ...]) -> Arrays:
        """A random, well-conditioned valid eta (for tests: rule checks draw q's from it)."""
        raise NotImplementedError(f"{cls.name}.random_natural")

    @classmethod
    def bound(cls, **data) -> type:
        """A subclass with per-element data fixed as class attributes (a Binomial's or a
        Multinomial's trials n and the support they imply), named and documented as ``cls``."""
        return type(cls.__name__, (cls,), {**data, "__module__": cls.__module__, "__doc__": cls.__doc__})

    @classmethod
    def example(cls) -> Arrays:
        """A valid eta over a small plate (3 elements) with event ``example_event``, for
        table-driven tests."""
        return cls.random_natural(np.random.default_rng(0), (3,), cls.example_event)

    # ----- what the initializer and the diagnostics ask -----------------------------------
    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """eta with E[x] moved to ``mean`` and its spread kept (the initializer sets gated
        components and factors of inner products this way)."""
        raise NotImplementedError(f"cannot set the mean of a {cls.name}")

    @classmethod
    def start_at(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """The q a fit's ``init`` mean stands for: ``with_mean`` (the spread kept); a family whose
        kept spread would blur the start (a chain of states at its prior's) overrides it."""
        return cls.with_mean(natural, mean)

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays | None:
        """eta moved at random to break the symmetry of the components of a mixture, or None
        when the family has no such move (then the components start equal). ``concentration`` sets the
        move's concentration where it has one: a Gamma(c, 1/c) multiplicative or additive noise of
        sd c^-1/2."""
        return None

    @classmethod
    def scale_dimension(cls, event_shape: tuple[int, ...]) -> int:
        """k in u_1(c x) = u_1(x) + k log c, for a ``scalable`` family."""
        raise NotImplementedError(f"a {cls.name} cannot be scaled")

    @classmethod
    def describe(cls, mean: np.ndarray, fmt: Callable[[np.ndarray], str] = str) -> str:
        """One line about a posterior mean too large to print (``fmt`` prints a short array); NaN
        entries (absent elements) are left out of the statistics."""
        return (f"mean shape {mean.shape}: min {np.nanmin(mean):.3g}, mean {np.nanmean(mean):.3g}, "
                f"max {np.nanmax(mean):.3g}")

    @classmethod
    def marginal(cls, natural: Arrays):
        """Elementwise marginals of q as one frozen scipy distribution over arrays shaped like the
        mean, for credible intervals; None where the family has none here (Wishart)."""
        return None

    # ----- shapes -------------------------------------------------------------------------
    @classmethod
    def plate_shape(cls, natural: Arrays) -> tuple[int, ...]:
        a, n = natural[0], cls.event_ndims[0]
        return a.shape[: a.ndim - n]

    @classmethod
    def event_shape(cls, natural: Arrays) -> tuple[int, ...]:
        a, n = natural[0], cls.event_ndims[0]
        return a.shape[a.ndim - n:]
