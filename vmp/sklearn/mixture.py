"""``GaussianMixture``: the Bayesian Gaussian mixture of ``vmp.models.gaussian_mixture``."""
from __future__ import annotations

import numpy as np
from sklearn.base import DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import VMPEstimator, bound_per_element


class GaussianMixture(DensityMixin, VMPEstimator):
    """Bayesian Gaussian mixture fitted by variational message passing.

    pi from truncated stick-breaking weights (or Dir(alpha)), (mu_k, Lambda_k) with a joint
    Normal-Wishart q (or factorized q(mu_k) q(Lambda_k), or a Normal-Gamma per coordinate),
    z_n ~ Cat(pi), x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1) (Bishop, PRML section 10.2; Blei & Jordan
    2006), built by :func:`vmp.models.gaussian_mixture` with its data-scaled defaults.

    Parameters
    ----------
    n_components : int, default=2
        Mixture components K (at least 2); components the data do not need get weights near 0.
    covariance : {"joint", "factorized", "diag"}, optional
        The components' q (scikit-learn's "full" is "joint", its "diag" is "diag"); None leaves
        the builder's default ("joint").
    weights : {"dirichlet_process", "dirichlet"}, optional
        Stick-breaking or Dirichlet weights (scikit-learn's ``weight_concentration_prior_type``);
        None leaves the builder's default ("dirichlet_process").
    alpha, mean_precision, dof, scale : optional
        The builder's hyperparameters: the weights' concentration, beta0 (the mean's precision
        relative to Lambda_k, or P0 = mean_precision * S^-1 when factorized), nu0 and W0; None
        leaves the builder's default.
    method : {"batch", "stochastic"}, default="batch"
        Batch VMP (the bound never decreases) or stochastic VMP with minibatches of
        ``batch_size`` points (Hoffman et al. 2013's SVI).
    batch_size : int, default=100
        Points per minibatch of a stochastic fit (at most n_samples).
    max_iter, tol, n_init, random_state
        The fit's options, as for every estimator of :mod:`vmp.sklearn` (:class:`VMPEstimator`).

    Attributes
    ----------
    weights_ : (K,) E[pi].
    means_ : (K, D) E[mu_k].
    precisions_ : (K, D, D) E[Lambda_k] ((K, D), its diagonal, for ``covariance="diag"``).
    covariances_ : E[Lambda_k]^-1, shaped as ``precisions_``.
    posterior_ : vmp.Model, the fitted model (diagrams, dashboards, predictives, checkpoints).
    result_ : vmp.FitResult of the fit; lower_bound_, n_iter_, converged_ read from it.

    ``predict_proba(X)`` is q(z_n) for each new point given the fitted globals;
    ``score_samples(X)`` the lower bound on log p(x_n | data) that this local step maximizes,
    log sum_k exp(E[log pi_k] + E[log N(x_n | mu_k, Lambda_k^-1)]); ``sample(n)`` draws new
    points from the posterior predictive (one draw of the parameters from q).
    """

    _builder_options = ("covariance", "weights", "alpha", "mean_precision", "dof", "scale")
    _local_plates = ("data",)

    def __init__(self, n_components: int = 2, *, covariance=None, weights=None, alpha=None, mean_precision=None,
                 dof=None, scale=None, method: str = "batch", batch_size: int = 100, max_iter: int = 100, tol=None,
                 n_init: int = 1, random_state=None):
        self.n_components = n_components
        self.covariance = covariance
        self.weights = weights
        self.alpha = alpha
        self.mean_precision = mean_precision
        self.dof = dof
        self.scale = scale
        self.method = method
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state

    def _build(self, x: np.ndarray):
        from vmp.models import gaussian_mixture

        return gaussian_mixture(x, self.n_components, name="GaussianMixture", **self._options())

    def fit(self, X, y=None) -> "GaussianMixture":
        """Fit the mixture to the rows of ``X`` (n_samples x n_features); ``y`` is ignored."""
        x = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        if x.shape[0] < self.n_components:
            raise ValueError(f"GaussianMixture: n_samples={x.shape[0]} should be >= n_components="
                             f"{self.n_components}")
        self._fit_model(self._build(x))
        self._set_attributes()
        return self

    def _set_attributes(self) -> None:
        model = self.posterior_
        self.weights_ = model["pi"].mean
        if "theta" in model:  # joint: (mu_k, Lambda_k) one node; diag: one per coordinate
            theta = model["theta"]
            self.means_, self.precisions_ = theta.mean, theta.parameters["precision"]
        else:
            self.means_, self.precisions_ = model["mu"].mean, model["Lambda"].mean
        diagonal = self.precisions_.ndim == 2
        self.covariances_ = 1.0 / self.precisions_ if diagonal else np.linalg.inv(self.precisions_)

    def _responsibilities(self, X):
        """The model on ``X`` with q(z_n) inferred given the fitted globals, and its z."""
        check_is_fitted(self, "posterior_")
        x = validate_data(self, X, dtype=np.float64, reset=False)
        return self._carried(self._build(x))["z"]

    def predict_proba(self, X) -> np.ndarray:
        """q(z_n = k): the probability of each component for each row of ``X``."""
        return self._responsibilities(X).mean

    def predict(self, X) -> np.ndarray:
        """The most probable component of each row of ``X``."""
        return np.argmax(self.predict_proba(X), axis=1)

    def fit_predict(self, X, y=None) -> np.ndarray:
        """Fit, then the most probable component of each row."""
        return self.fit(X).predict(X)

    def score_samples(self, X) -> np.ndarray:
        """Per row of ``X``, the lower bound on log p(x_n | training data) given the fitted q."""
        return bound_per_element(self._responsibilities(X))

    def score(self, X, y=None) -> float:
        """The mean of :meth:`score_samples`."""
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        """(X, labels): ``n_samples`` new points drawn from the posterior predictive (the
        parameters drawn once from q, then each z_n and x_n), seeded by ``random_state``."""
        check_is_fitted(self, "posterior_")
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
            raise ValueError(f"GaussianMixture.sample: n_samples must be a positive integer, got {n_samples!r}")
        placeholder = np.zeros((int(n_samples), self.n_features_in_))  # sizes the data plate
        draws = self._draw_new(self._build(placeholder), self._generator(random_state))
        return draws["x"], draws["z"].astype(np.int64)
