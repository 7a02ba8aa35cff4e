"""A mixture of Normals with NormalGamma components against BayesPy (Luttinen 2016).

BayesPy's GaussianGamma node with one dimension is the Normal-Gamma: x | alpha ~ N(mu, (alpha
Lambda)^-1), alpha ~ Gamma(a, b), with phi = (Lambda mu, -Lambda/2, -b - mu Lambda mu / 2, a)
(its base measure holds alpha^(D/2 - 1)), vmp's eta = (beta m, -beta/2, -(b + beta m^2/2),
a - 1/2) with beta = Lambda. Its Gaussian child with precision matrix 1 is vmp's Normal child
of a NormalGamma. From the same q(z), both run the same coordinate path; after every update
the moments agree within 1e-8, after every sweep the bounds (every constant included in both).
BayesPy's GaussianWishart node is not implemented (its moments raise), so the Normal-Wishart is
checked against scikit-learn and hmmlearn (test_sklearn_mixture.py, test_hmmlearn_joint.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.inference.engine import Engine
from vmp.inference.state import State

bp = pytest.importorskip("bayespy.nodes")
VB = pytest.importorskip("bayespy.inference").VB

TOL = 1e-8


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, np.reshape(b, a.shape), rtol=0, atol=TOL * scale, err_msg=what)


def _update(engine, state, node):
    natural = engine.target(state, node)
    return state.updated({node.name: (natural, node.family.moments(natural))})


def test_normal_gamma_mixture_takes_bayespys_path():
    rng = np.random.default_rng(4)
    n, k = 90, 3
    y = np.concatenate([rng.normal(-3.0, 1.0, 30), rng.normal(1.0, 0.4, 30), rng.normal(5.0, 2.0, 30)])
    m0, beta0, a0, b0 = 0.5, 0.2, 1.5, 2.0
    r = bp.Dirichlet(np.full(k, 0.8))
    z = bp.Categorical(r, plates=(n,))
    t = bp.GaussianGamma(np.full(1, m0), beta0 * np.eye(1), a0, b0, plates=(k,))
    x = bp.Mixture(z, bp.Gaussian, t, np.eye(1))
    x.observe(y[:, None])
    z.phi = [rng.normal(size=(n, k))]
    z._update_moments_and_cgf()
    vb = VB(x, z, t, r)
    with vmp.Model("normal_gamma_mixture") as model:
        pi = vmp.Dirichlet("pi", np.full(k, 0.8))
        with vmp.Plate("components", k):
            theta = vmp.NormalGamma("theta", m0, beta0, a0, b0)
        with vmp.Plate("data", n):
            c = vmp.Categorical("z", pi)
            vmp.Normal("x", theta[c], observed=y)
    engine = Engine(model)
    logits = z.phi[0]
    state = State().updated({"z": ((logits,), model["z"].family.moments((logits,)))})
    for name in ("theta", "pi"):
        state = _update(engine, state, model[name])  # q's to be overwritten; the bound needs one
    pairs = {"theta": t, "pi": r, "z": z}
    for sweep in range(6):
        for name in ("theta", "pi", "z"):
            vb.update(pairs[name], verbose=False)
            state = _update(engine, state, model[name])
            for i, (mine, theirs) in enumerate(zip(state.moments[name], pairs[name].u)):
                _close(mine, theirs, f"sweep {sweep}: moment {i} of q({name})")
        _close(engine.elbo(state), vb.compute_lowerbound(), f"sweep {sweep}: bound")
    phi = t.phi
    ours = state.natural["theta"]
    for i, (mine, theirs) in enumerate(zip(ours, (phi[0][:, 0], phi[1][:, 0, 0], phi[2], phi[3] - 0.5))):
        _close(mine, theirs, f"natural parameter {i} of q(theta)")
