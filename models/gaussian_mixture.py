"""Bayesian Gaussian mixture (Bishop, PRML section 10.2, with independent q(mu_k) q(Lambda_k)).

pi ~ Dir(alpha), mu_k ~ N(m0, P0^-1), Lambda_k ~ W(nu0, W0), z_n ~ Cat(pi), x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1).
"""
from __future__ import annotations

import numpy as np

import vmp
from vmp.graph.data import is_lazy

from . import _checks


def gaussian_mixture(data: np.ndarray, n_components: int, *, alpha: float = 1.0,
                     mean_precision: float = 1e-2, dof: float | None = None,
                     scale: np.ndarray | None = None, mask: np.ndarray | None = None,
                     name: str = "gaussian_mixture") -> vmp.Model:
    """Build the mixture of K = ``n_components`` Gaussians for ``data`` (N x D):

        pi ~ Dir(alpha)
        mu_k ~ N(m0, P0^-1),  Lambda_k ~ W(nu0, W0)     k = 1..K
        z_n ~ Cat(pi),  x_n ~ N(mu_{z_n}, Lambda_{z_n}^-1)

    Nodes: ``pi``, ``mu`` and ``Lambda`` (plate "components"), ``z`` and ``x`` (observed; plate
    "data").

    Defaults are weak and scaled to the data: m0 is the data mean, P0 = mean_precision * S^-1,
    nu0 = D and W0 = S^-1 / D (so E[Lambda_k] = S^-1), with S the data covariance.

    Missing values: NaN entries of ``data``, and those where ``mask`` (N x D, True where
    observed) is False. The missing coordinates of a row are latent (q(x_n,m | x_n,o), the
    textbook variational treatment; docs/reference.md, "Missing data"); a row with none observed
    drops out. m0 and S then come from the observed entries (pairwise covariances).

    Data out of core (a numpy memmap, an HDF5 dataset, a zarr array) stay there: m0 and S are
    read by blocks of rows and the fit reads the rows it needs (docs/scale.md); with NaN entries
    they are read into memory.
    """
    if not is_lazy(data):
        data = _checks.floats(name, "data", data)
    shape = np.shape(data)
    if len(shape) != 2:
        raise vmp.ShapeError(f"{name}: data must be N x D, got shape {shape}")
    streamed = _checks.streamed_moments(name, "data", data) if mask is None and is_lazy(data) else None
    if streamed is None:
        x, seen = _checks.missing(name, "data", data, mask)
        center, cov = _checks.moments(x, seen)
    else:
        (x, seen), (center, cov) = (data, None), streamed
    n, d = shape
    k = _checks.count(name, "n_components", n_components, minimum=2)
    prec = np.linalg.inv(cov)
    dof = float(d) if dof is None else dof
    scale = prec / dof if scale is None else scale
    with vmp.Model(name) as model:
        pi = vmp.Dirichlet("pi", alpha=np.full(k, alpha))
        with vmp.Plate("components", k):
            mu = vmp.Gaussian("mu", mean=center, precision=mean_precision * prec)
            lam = vmp.Wishart("Lambda", dof=dof, scale=scale)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=mu[z], precision=lam[z], observed=x, mask=seen)
    return model
