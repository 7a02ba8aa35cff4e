"""``LogisticRegression``: Bayesian logistic regression of ``vmp.models.logistic_regression`` (two
classes) and ``vmp.models.multiclass_logistic_regression`` (more), by Polya-gamma VMP."""
from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import VMPEstimator


class LogisticRegression(ClassifierMixin, VMPEstimator):
    """Bayesian logistic regression fitted by variational message passing.

    Two classes: y_n ~ Bernoulli(sigmoid(w . x_n + b)), w ~ N(0, C I), b ~ N(0, 10^4); more
    classes: the stick-breaking logits of Linderman, Johnson & Adams (2015), K - 1 weight vectors
    W_k. Each likelihood term is made conditionally Gaussian by a Polya-gamma auxiliary (Polson,
    Scott & Windle 2013), so q(w) stays a Gaussian and the bound is the Jaakkola-Jordan bound at its
    optimum. ``C`` is scikit-learn's: the prior precision of the weights is 1 / C, so the posterior
    mode is scikit-learn's L2 ``LogisticRegression(C=C)``.

    Parameters
    ----------
    C : float, default=1.0
        The prior variance of each weight (the inverse of the prior precision).
    fit_intercept : bool, default=True
        An intercept b with a broad Normal prior (precision 1e-4), as scikit-learn's
        unpenalized intercept.
    ard : bool or None, default=None
        Automatic relevance determination (two classes only): one Gamma precision per input
        instead of 1 / C.
    max_iter, tol, random_state
        The fit's options, as for every estimator of :mod:`vmp.sklearn`.

    Attributes
    ----------
    classes_ : (K,) the class labels.
    coef_ : (1, D) E[w] for two classes; (K - 1, D) E[W_k] of the stick-breaking logits
        psi_k = W_k . x + b_k (P(y = k | y >= k) = sigmoid(psi_k)) for more.
    intercept_ : (1,) or (K - 1,) E[b].
    posterior_ : vmp.Model, the fitted model; result_, lower_bound_, n_iter_, converged_.

    ``predict_proba(X)`` is the posterior predictive P(y = k | x, data) under q: the logits'
    Gaussian q integrated by quadrature (``model.predict("y")``), not the plug-in sigmoid of E[w]
    .x, so it is less confident away from the data.
    """

    _local_plates = ("data",)

    def __init__(self, *, C: float = 1.0, fit_intercept: bool = True, ard=None, max_iter: int = 500, tol=None,
                 random_state=None):
        self.C = C
        self.fit_intercept = fit_intercept
        self.ard = ard
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _build(self, x: np.ndarray, labels: np.ndarray):
        from vmp.models import logistic_regression, multiclass_logistic_regression

        if not (isinstance(self.C, (int, float, np.number)) and self.C > 0):
            raise ValueError(f"LogisticRegression: C must be a positive number, got {self.C!r}")
        options = {"prior_precision": 1.0 / float(self.C), "intercept": bool(self.fit_intercept),
                   "name": "LogisticRegression"}
        if len(self.classes_) == 2:
            return logistic_regression(x, labels, ard=bool(self.ard), **options)
        if self.ard:
            raise ValueError("LogisticRegression: ard=True is for two classes; "
                             f"got {len(self.classes_)} classes")
        return multiclass_logistic_regression(x, labels, len(self.classes_), **options)

    def fit(self, X, y) -> "LogisticRegression":
        """Fit the classes ``y`` (n_samples labels) on the rows of ``X`` (n_samples x n_features)."""
        x, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, labels = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"LogisticRegression: needs samples of at least 2 classes in y; got one class "
                             f"({self.classes_[0]!r})")
        model = self._build(x, labels.astype(np.float64))
        self._fit_model(model)
        weights = model["w" if len(self.classes_) == 2 else "W"].mean
        self.coef_ = np.atleast_2d(weights)
        self.intercept_ = (np.atleast_1d(model["b"].mean).astype(np.float64) if self.fit_intercept
                           else np.zeros(len(self.coef_)))
        return self

    def predict_proba(self, X) -> np.ndarray:
        """P(y = k | x_n, training data) for each row of ``X`` (n_samples x n_classes)."""
        check_is_fitted(self, "posterior_")
        x = validate_data(self, X, dtype=np.float64, reset=False)
        placeholder = np.zeros(len(x))  # the predictive of y reads the logits' q only, not y's data
        mean = self._carried(self._build(x, placeholder)).predict("y").mean
        return np.column_stack([1.0 - mean, mean]) if mean.ndim == 1 else mean

    def predict_log_proba(self, X) -> np.ndarray:
        """log :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row of ``X``."""
        check_is_fitted(self, "posterior_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
