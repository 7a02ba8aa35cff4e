"""Mixture of multinomials over count vectors (a bag-of-words document clustering; Nigam et al.
2000, with Dirichlet priors)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def multinomial_mixture(counts: np.ndarray, n_components: int, *, alpha: float = 1.0, beta: float = 0.5,
                        name: str = "multinomial_mixture") -> vmp.Model:
    """Build the mixture of K = ``n_components`` multinomials for ``counts`` (N x V non-negative
    integers):

        pi ~ Dir(alpha),  p_k ~ Dir(beta)
        z_n ~ Cat(pi),  x_n ~ Mult(n_n, p_{z_n})    n_n = sum_v x_nv

    Nodes: ``pi``, ``p`` (plate "components"), ``z`` and ``x`` (observed; plate "data")."""
    x = _checks.matrix(name, "counts", counts)
    k = _checks.count(name, "n_components", n_components, minimum=2)
    _checks.positive(name, alpha=alpha, beta=beta)
    with vmp.Model(name) as model:
        pi = vmp.Dirichlet("pi", alpha=np.full(k, alpha))
        with vmp.Plate("components", k):
            p = vmp.Dirichlet("p", alpha=np.full(x.shape[1], beta))
        with vmp.Plate("data", x.shape[0]):
            z = vmp.Categorical("z", pi)
            vmp.Multinomial("x", p[z], observed=x)
    return model
