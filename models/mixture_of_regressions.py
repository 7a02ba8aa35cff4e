"""Mixture of linear regressions (Bishop PRML section 14.5.1, with conjugate priors)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def mixture_of_regressions(inputs: np.ndarray, targets: np.ndarray, n_components: int, *, alpha: float = 1.0,
                           prior_precision: float = 1.0, noise_prior: tuple[float, float] = (1.0, 1.0),
                           name: str = "mixture_of_regressions") -> vmp.Model:
    """Build the mixture of K = ``n_components`` regressions of ``targets`` (N) on the rows x_n of
    ``inputs`` (N x D):

        pi ~ Dir(alpha),  w_k ~ N(0, I / prior_precision),  tau_k ~ Gamma(*noise_prior)
        z_n ~ Cat(pi),  y_n ~ N(w_{z_n} . x_n, 1 / tau_{z_n})

    (a gate inside the inner product with the design matrix). Nodes: ``pi``, ``w`` and ``tau``
    (plate "components"), ``z`` and ``y`` (observed; plate "data"). Add a column of ones to
    ``inputs`` for per-component intercepts. NaN targets are missing: their rows drop out
    (their z_n is barren), and ``model.impute("y")`` gives their posterior predictive."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    k = _checks.count(name, "n_components", n_components, minimum=2)
    _checks.positive(name, alpha=alpha, prior_precision=prior_precision)
    n, d = x.shape
    with vmp.Model(name) as model:
        pi = vmp.Dirichlet("pi", alpha=np.full(k, float(alpha)))
        with vmp.Plate("components", k):
            w = vmp.Gaussian("w", mean=np.zeros(d), precision=prior_precision * np.eye(d))
            tau = vmp.Gamma("tau", *noise_prior)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Normal("y", mean=vmp.dot(w[z], x), precision=tau[z], observed=y, mask=seen)
    return model
