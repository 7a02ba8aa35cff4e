"""``LinearRegression``: the Bayesian linear regression of ``vmp.models.linear_regression``."""
from __future__ import annotations

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import VMPEstimator


class LinearRegression(RegressorMixin, VMPEstimator):
    """Bayesian linear regression fitted by variational message passing.

    w ~ N(0, p^-1 I) (or an ARD prior), y_n ~ N(w . x_n, 1/tau), tau ~ Gamma (Bishop, PRML
    sections 3.3 and 10.3), built by :func:`vmp.models.linear_regression`.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Center X and y before the fit (as scikit-learn's BayesianRidge); the intercept is
        mean(y) - mean(X) . E[w].
    noise_precision, noise_prior, prior_precision, ard, ard_prior : optional
        The builder's options (a fixed tau, tau's Gamma prior, the weights' prior precision,
        automatic relevance determination and its Gamma prior); None leaves the builder's default.
    max_iter, tol, random_state
        The fit's options, as for every estimator of :mod:`vmp.sklearn` (:class:`VMPEstimator`).

    Attributes
    ----------
    coef_ : (D,) E[w].
    intercept_ : float.
    coef_covariance_ : (D, D) Cov[w] under q.
    posterior_ : vmp.Model, the fitted model; result_, lower_bound_, n_iter_, converged_ as for
        the other estimators.

    ``predict(X, return_std=True)`` gives the posterior predictive's mean and standard deviation
    (``model.predict("y")`` of a model of X with the fitted q(w), q(tau): Var[w . x] plus
    E[1/tau]).
    """

    _builder_options = ("noise_precision", "noise_prior", "prior_precision", "ard", "ard_prior")
    _local_plates = ("data",)

    def __init__(self, *, fit_intercept: bool = True, noise_precision=None, noise_prior=None,
                 prior_precision=None, ard=None, ard_prior=None, max_iter: int = 100, tol=None,
                 random_state=None):
        self.fit_intercept = fit_intercept
        self.noise_precision = noise_precision
        self.noise_prior = noise_prior
        self.prior_precision = prior_precision
        self.ard = ard
        self.ard_prior = ard_prior
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _build(self, x: np.ndarray, target: np.ndarray):
        from vmp.models import linear_regression

        return linear_regression(x - self._x_offset, target - self._y_offset, name="LinearRegression",
                                 **self._options())

    def fit(self, X, y) -> "LinearRegression":
        """Fit the regression of ``y`` (n_samples) on the rows of ``X`` (n_samples x n_features)."""
        x, target = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self._x_offset = x.mean(0) if self.fit_intercept else np.zeros(x.shape[1])
        self._y_offset = float(target.mean()) if self.fit_intercept else 0.0
        model = self._build(x, target)
        self._fit_model(model)
        w = model["w"]
        self.coef_ = w.mean
        self.coef_covariance_ = w.parameters["covariance"]
        self.intercept_ = self._y_offset - float(self._x_offset @ self.coef_)
        return self

    def predict(self, X, return_std: bool = False):
        """The posterior predictive mean of y at each row of ``X``, and with ``return_std`` its
        standard deviation."""
        check_is_fitted(self, "posterior_")
        x = validate_data(self, X, dtype=np.float64, reset=False)
        placeholder = np.full(len(x), self._y_offset)  # the predictive of y does not read y's data
        predictive = self._carried(self._build(x, placeholder)).predict("y")
        mean = predictive.mean + self._y_offset
        return (mean, predictive.std) if return_std else mean
