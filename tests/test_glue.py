"""Gates over any plate of the gated node, and gathers that bind to a named plate."""
from __future__ import annotations

import numpy as np
import pytest

import vmp


def _mixture(outer: bool, x):
    """x_nd ~ N(mu_{z_n, d}, 1): the components' plate K is outer (K, D) or inner (D, K)."""
    n, d = x.shape
    with vmp.Model("m") as model:
        pi = vmp.Dirichlet("pi", np.ones(2))
        with vmp.Plate(*(("K", 2) if outer else ("D", d))), vmp.Plate(*(("D", d) if outer else ("K", 2))):
            mu = vmp.Normal("mu", 0.0, 0.1)
        with vmp.Plate("N", n):
            z = vmp.Categorical("z", pi)
            with vmp.Plate("D", d):
                vmp.Normal("x", mu[z, "K"] if outer else mu[z], 1.0, observed=x)
    return model


def test_gate_over_an_outer_plate_equals_the_innermost_gate():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(-2, 1, (10, 3)), rng.normal(2, 1, (10, 3))]
    init = {"z": np.eye(2)[(np.arange(20) >= 10).astype(int)] * 0.8 + 0.1}
    a, b = _mixture(True, x), _mixture(False, x)
    ra, rb = a.fit(iterations=50, init=init), b.fit(iterations=50, init=init)
    assert ra.final_elbo == pytest.approx(rb.final_elbo, rel=1e-12)
    assert np.allclose(a["mu"].mean, b["mu"].mean.T, rtol=1e-10)


def test_gather_over_two_open_plates_of_one_size_must_name_one():
    with vmp.Model("m"):
        with vmp.Plate("U", 4):
            u = vmp.Normal("u", 0.0, 1.0)
        rows = np.array([0, 1, 3])
        with vmp.Plate("A", 3), vmp.Plate("B", 3):
            with pytest.raises(vmp.GraphError, match=r"open plates \['A', 'B'\] all have size 3"):
                u[rows]
            g = u[rows, "A"]
            assert g.plate.name == "A" and g.plates[0].name == "A"
            with pytest.raises(vmp.GraphError, match="no plate 'C'"):
                u[rows, "C"]
