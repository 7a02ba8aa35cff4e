"""Bayesian Gaussian mixture (Bishop PRML section 10.2; scikit-learn's BayesianGaussianMixture).

    pi ~ Dir(alpha 1)                      (weights="dirichlet"; node "pi")
      or pi_k = v_k prod_{j<k} (1 - v_j), v_k ~ Beta(1, alpha)   (weights="dirichlet_process")
    z_n ~ Cat(pi)                                              (node "z", plate "data")
    x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1)                         (node "x")

and per component k (plate "components"), by ``covariance``:

- "joint": (mu_k, Lambda_k) ~ N(mu_k | m0, (beta0 Lambda_k)^-1) W(Lambda_k | nu0, W0), one
  Normal-Wishart q(mu_k, Lambda_k) (node "theta"; PRML eqs. (10.40), (10.59)-(10.63));
- "factorized": mu_k ~ N(m0, (beta0 S^-1)^-1), Lambda_k ~ W(nu0, W0), q(mu_k) q(Lambda_k)
  (nodes "mu", "Lambda");
- "diag": (mu_kd, tau_kd) ~ N(m0_d, (beta0 tau_kd)^-1) Gamma(tau_kd | nu0/2, 1/(2 W0_dd)), one
  Normal-Gamma per coordinate (node "theta" over plates "components", "dims"; scikit-learn's
  "diag", whose E step takes the Wishart's E[log|Lambda|] instead: tests/joint/test_sklearn_mixture.py).
"""
from __future__ import annotations

import numpy as np

import vmp
from vmp.graph.data import is_lazy

from . import _checks

COVARIANCES = ("joint", "factorized", "diag")
WEIGHTS = ("dirichlet", "dirichlet_process")
#: scikit-learn's names of the priors, and the builder's
SKLEARN_NAMES = {"weight_concentration_prior": "alpha", "mean_precision_prior": "mean_precision",
                 "degrees_of_freedom_prior": "dof", "mean_prior": "mean"}


def gaussian_mixture(data: np.ndarray, n_components: int, *, covariance: str = "joint",
                     weights: str = "dirichlet_process", alpha: float | None = None,
                     mean_precision: float | None = None, mean: np.ndarray | None = None, dof: float | None = None,
                     scale: np.ndarray | str | None = None, covariance_prior: np.ndarray | None = None,
                     weight_concentration_prior: float | None = None, mean_precision_prior: float | None = None,
                     mean_prior: np.ndarray | None = None, degrees_of_freedom_prior: float | None = None,
                     mask: np.ndarray | None = None, name: str = "gaussian_mixture") -> vmp.Model:
    """Build the mixture of K = ``n_components`` Gaussians for ``data`` (N x D):

        pi ~ Dir(alpha 1), or stick-breaking weights pi_k = v_k prod_{j<k} (1 - v_j), v_k ~ Beta(1, alpha)
        (mu_k, Lambda_k) ~ N(m0, (beta0 Lambda_k)^-1) W(nu0, W0)                k = 1..K
        z_n ~ Cat(pi),  x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1)

    Nodes: ``pi``, ``theta`` (plate "components": (mu_k, Lambda_k); ``covariance="factorized"``:
    ``mu`` and ``Lambda``; "diag": ``theta`` over plates "components" x "dims"), ``z`` and
    ``x`` (observed; plate "data").

    The defaults answered best on real data (iris, wine and digits against the labels:
    docs/reference.md, "Mixtures on real data"): covariance "joint", weights "dirichlet_process"
    (truncated stick-breaking at K = ``n_components``) with concentration alpha = 1/K, m0 the
    data mean, beta0 = 0.01, nu0 = D and W0^-1 = S, the data covariance (so E[Lambda_k] = D S^-1 a
    priori): scikit-learn's BayesianGaussianMixture's priors but for beta0 (its 1 ties each
    component's mean to within its own spread of m0, and on iris merges two species). With
    "joint" (and "diag") components, a fit starts from k-means responsibilities, as
    scikit-learn's (vmp/inference/init.py). ``covariance="factorized"`` puts the precision
    beta0 S^-1 on mu_k.

    Priors by vmp's or scikit-learn's names: ``alpha`` / ``weight_concentration_prior``,
    ``mean_precision`` / ``mean_precision_prior`` (beta0), ``mean`` / ``mean_prior`` (m0),
    ``dof`` / ``degrees_of_freedom_prior`` (nu0), ``covariance_prior`` (W0^-1: a D x D matrix,
    or the D variances for "diag") or ``scale`` (W0 itself; ``"data"``: S^-1 / nu0, so that
    E[Lambda_k] = S^-1 a priori, components as broad as the data).

    Missing values: NaN entries of ``data``, and those where ``mask`` (N x D, True where
    observed) is False. The missing coordinates of a row are latent (q(x_n,m | x_n,o), the
    textbook variational treatment; docs/reference.md, "Missing data"); a row with none observed
    drops out. m0 and S then come from the observed entries (pairwise covariances).

    Data out of core (a numpy memmap, an HDF5 dataset, a zarr array) stay there: m0 and S are
    read by blocks of rows and the fit reads the rows it needs (docs/scale.md); with NaN entries
    they are read into memory.
    """
    priors = _priors(name, dict(alpha=alpha, mean_precision=mean_precision, mean=mean, dof=dof),
                     dict(weight_concentration_prior=weight_concentration_prior, mean_precision_prior=mean_precision_prior,
                          mean_prior=mean_prior, degrees_of_freedom_prior=degrees_of_freedom_prior))
    _choice(name, "covariance", covariance, COVARIANCES)
    _choice(name, "weights", weights, WEIGHTS)
    if scale is not None and covariance_prior is not None:
        raise vmp.OptionError(f"{name}: give scale (W0) or covariance_prior (W0^-1), not both")
    x, seen, center, cov = _data(name, data, mask)
    n, d = np.shape(data)
    k = _checks.count(name, "n_components", n_components, minimum=2)
    alpha = 1.0 / k if priors["alpha"] is None else priors["alpha"]
    beta = 1e-2 if priors["mean_precision"] is None else priors["mean_precision"]
    _checks.positive(name, alpha=alpha, mean_precision=beta)
    m0 = center if priors["mean"] is None else priors["mean"]
    nu = float(d) if priors["dof"] is None else priors["dof"]
    w0 = _scale(name, covariance, cov, scale, covariance_prior, nu)
    with vmp.Model(name) as model:
        pi = vmp.StickBreaking("pi", alpha, k) if weights == "dirichlet_process" else \
            vmp.Dirichlet("pi", alpha=np.full(k, alpha))
        component = _COMPONENTS[covariance](m0, beta, nu, w0, cov, k, d)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", *component(z), observed=x, mask=seen)
    return model


def _joint(m0, beta, nu, w0, cov, k, d):
    with vmp.Plate("components", k):
        theta = vmp.GaussianWishart("theta", mean=m0, beta=beta, dof=nu, scale=w0)
    return lambda z: (theta[z],)


def _factorized(m0, beta, nu, w0, cov, k, d):
    with vmp.Plate("components", k):
        mu = vmp.Gaussian("mu", mean=m0, precision=beta * np.linalg.inv(cov))
        lam = vmp.Wishart("Lambda", dof=nu, scale=w0)
    return lambda z: (mu[z], lam[z])


def _diagonal(m0, beta, nu, w0, cov, k, d):
    with vmp.Plate("components", k), vmp.Plate("dims", d):
        theta = vmp.NormalGamma("theta", mean=m0, beta=beta, shape=0.5 * nu, rate=0.5 * np.diagonal(np.linalg.inv(w0)))
    return lambda z: (theta[z, "components"],)


_COMPONENTS = {"joint": _joint, "factorized": _factorized, "diag": _diagonal}


def _priors(name: str, given: dict, sklearn_names: dict) -> dict:
    """The priors given by vmp's names or scikit-learn's (not both for one prior)."""
    out = dict(given)
    for theirs, ours in SKLEARN_NAMES.items():
        if sklearn_names[theirs] is not None:
            if out[ours] is not None:
                raise vmp.OptionError(f"{name}: give {ours} or {theirs}, not both")
            out[ours] = sklearn_names[theirs]
    return out


def _choice(name: str, what: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise vmp.OptionError(f"{name}: {what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def _data(name: str, data, mask):
    """(x, the observed mask or None, the data mean, the data covariance S)."""
    if not is_lazy(data):
        data = _checks.floats(name, "data", data)
    shape = np.shape(data)
    if len(shape) != 2:
        raise vmp.ShapeError(f"{name}: data must be N x D, got shape {shape}")
    streamed = _checks.streamed_moments(name, "data", data) if mask is None and is_lazy(data) else None
    if streamed is None:
        x, seen = _checks.missing(name, "data", data, mask)
        return (x, seen) + _checks.moments(x, seen)
    return (data, None) + streamed


def _scale(name: str, covariance: str, cov, scale, covariance_prior, nu: float) -> np.ndarray:
    """W0: ``scale`` (``"data"``: S^-1 / nu0), the inverse of ``covariance_prior`` (variances for
    "diag"), or S^-1."""
    d = cov.shape[0]
    if isinstance(scale, str):
        if scale != "data":
            raise vmp.OptionError(f"{name}: scale must be a D x D matrix or 'data', got {scale!r}")
        return np.linalg.inv(cov) / nu
    given, what = (scale, "scale") if scale is not None else (covariance_prior, "covariance_prior")
    if given is None:
        return np.linalg.inv(cov)
    value = np.asarray(given, float)
    if covariance == "diag" and what == "covariance_prior" and value.shape == (d,):
        value = np.diag(value)
    if value.shape != (d, d) or not np.all(vmp.families.constraints.positive_definite.check(value)):
        also = " (or D positive variances)" if covariance == "diag" and what == "covariance_prior" else ""
        raise vmp.HyperparameterError(f"{name}: {what} must be a symmetric positive-definite {d} x {d} matrix{also}")
    return value if what == "scale" else np.linalg.inv(value)
