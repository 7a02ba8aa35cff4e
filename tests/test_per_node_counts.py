"""Per-node child subsampling (Paquet Alg. 1, eq. (6)) through a gather, on a Gamma-Poisson model
with exposures: after one step with rho = 1 each rate lambda_u is its prior plus N_u / C times the
statistics of some C of its own N_u children (all of them when N_u <= C), found here by
enumerating the subsets."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import vmp

ROWS = np.array([0, 0, 0, 0, 1, 1, 2, 0, 1, 2, 2, 2, 2, 3])


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_each_rate_reads_n_over_c_times_a_subset_of_its_own_children(seed):
    rng = np.random.default_rng(0)
    y, t = rng.poisson(3.0, size=ROWS.size), rng.uniform(0.5, 2.0, size=ROWS.size)
    c = 2
    with vmp.Model("m") as model:
        with vmp.Plate("U", 4):
            lam = vmp.Gamma("lam", 2.0, 0.5)
        with vmp.Plate("R", ROWS.size):
            vmp.Poisson("y", lam[ROWS], exposure=t, observed=y)
    model.fit(method="stochastic", subsample=vmp.PerNode(c), step=vmp.Constant(1.0), iterations=1, seed=seed,
              evaluate_every=0)
    shape, rate = lam.parameters["shape"], lam.parameters["rate"]
    for u in range(4):
        mine = np.flatnonzero(ROWS == u)
        k, scale = min(c, mine.size), mine.size / min(c, mine.size)
        fits = [s for s in itertools.combinations(mine, k)
                if np.isclose(shape[u], 2.0 + scale * y[list(s)].sum(), rtol=1e-12)
                and np.isclose(rate[u], 0.5 + scale * t[list(s)].sum(), rtol=1e-12)]
        assert fits, f"lambda_{u}: no subset of its {mine.size} children gives its update"
