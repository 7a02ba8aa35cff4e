"""What every estimator shares: the fit of a ``vmp.models`` builder, the fitted model's globals
carried to new data, and draws of new data from the fitted q.

An estimator builds its model with a builder of ``vmp.models`` (only the builder options a user
set are passed, so the builder's own defaults apply to the rest), fits it with ``model.fit`` and
keeps the fitted model as ``posterior_``. New data get a model of their own from the same
builder; the q of the global nodes (those off the data plates) is copied into it from
``posterior_`` and the local nodes are inferred given them (``model.infer_locals``): the exact
local step of VMP, one element of the data plate independent of the others.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..errors import ConvergenceError
from ..graph.draws import draw
from ..graph.prior import ancestral


class VMPEstimator(BaseEstimator):
    """Base of the estimators: subclasses name their builder's options (``_builder_options``)
    and the plates that hold the data (``_local_plates``).

    The options of the fit, shared by every estimator:

    max_iter : int, default=100
        Sweeps of batch VMP, steps of stochastic VMP (``model.fit``'s ``iterations``).
    tol : float or None, default=None
        ``model.fit``'s stopping tolerance (None: its default).
    n_init : int, default=1
        Fits from successive seeds; the best final bound is kept (not for LinearRegression, whose
        fit has no symmetry to break).
    random_state : int, RandomState or None, default=None
        The seed of the fit (an int is vmp's ``seed``) and of ``sample``.
    """

    #: constructor parameters passed to the builder when they are not None
    _builder_options: tuple[str, ...] = ()
    #: plates of the data: nodes on them are local (inferred again for new data)
    _local_plates: tuple[str, ...] = ("data",)

    def _option_names(self) -> tuple[str, ...]:
        """The constructor parameters that are builder options."""
        return self._builder_options

    def _options(self) -> dict:
        """The builder options the user set."""
        return {name: getattr(self, name) for name in self._option_names() if getattr(self, name) is not None}

    def _seed(self) -> int:
        """vmp's seed from scikit-learn's ``random_state``."""
        return seed_of(self.random_state)

    def _generator(self, random_state=None) -> np.random.Generator:
        """A numpy Generator from ``random_state`` (None: the estimator's own)."""
        return np.random.default_rng(seed_of(self.random_state if random_state is None else random_state))

    def _fit_options(self, model) -> dict:
        """``model.fit`` options: batch VMP, or stochastic VMP with minibatches of
        ``batch_size`` elements (at most all) of the first local plate where the estimator has a
        ``method``."""
        options = {"iterations": self.max_iter, "n_init": getattr(self, "n_init", 1), "seed": self._seed(),
                   "progress": False}
        if self.tol is not None:
            options["tol"] = self.tol
        if getattr(self, "method", "batch") == "stochastic":
            from ..inference import Minibatch

            plate = self._local_plates[0]
            size = min(self.batch_size, model.plates[plate].size)  # at most the whole plate
            options.update(method="stochastic", subsample=Minibatch(plate, size), **self._step_options())
        return options

    def _step_options(self) -> dict:
        """Step-size options of a stochastic fit (none: vmp's default)."""
        return {}

    def _fit_model(self, model) -> "VMPEstimator":
        """Fit ``model`` and keep it and the result; a diverged fit raises."""
        result = model.fit(**self._fit_options(model))
        if result.diverged:
            raise ConvergenceError(f"{type(self).__name__}: the fit diverged: {result.message}")
        self.posterior_, self.result_ = model, result
        self.lower_bound_, self.n_iter_, self.converged_ = result.final_elbo, result.iterations, result.converged
        return self

    def _global_names(self, model) -> list[str]:
        """The hidden nodes of ``model`` off the data plates."""
        return [n.name for n in model if not n.observed and not any(p.name in self._local_plates for p in n.plates)]

    def _carried(self, model, iterations: int = 50, tol: float = 1e-4):
        """``model`` (built on new data) with the fitted q of the globals and its locals
        inferred given them."""
        check_is_fitted(self, "posterior_")
        for name in self._global_names(self.posterior_):
            model[name].set_natural(self.posterior_[name].natural)
        return model.infer_locals(iterations, tol)

    def _draw_new(self, model, rng: np.random.Generator) -> dict:
        """One draw of every node of ``model`` (built on placeholder data of the wanted size):
        the globals from the fitted q (one joint draw), the rest from their conditionals (a draw
        from the posterior predictive of new data)."""
        check_is_fitted(self, "posterior_")
        memo: dict = {}
        given = {name: draw(self.posterior_[name], 1, rng, memo) for name in self._global_names(self.posterior_)}
        return {name: values[0] for name, values in ancestral(model, 1, rng, given).items()}


def seed_of(random_state) -> int:
    """vmp's seed from scikit-learn's ``random_state``: an int as it is, else a draw of the
    RandomState (None: numpy's global one)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def bound_per_element(node) -> np.ndarray:
    """The bound's terms that read the local ``node`` (its factors' expected log-densities and
    its entropy), per element, right after its coordinate update: ``Family.optimum``, A(eta) -
    E[log h] (Winn & Bishop 2005 eq. (5)). For a node that is the only local of its data
    element, this is the element's lower bound on log p(x_n | q of the globals)."""
    return node.family.optimum(node.natural, node.moments)
