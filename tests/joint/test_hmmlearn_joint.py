"""``models.hmm(..., covariance="joint")`` against hmmlearn's VariationalGaussianHMM
(covariance_type="full"; McGrory & Titterington 2009): the same priors and the same start
(hmmlearn's posteriors given, ``init_params=""``), then one hmmlearn iteration (forward-backward
on the subnormalized parameters, then the M step) against vmp's coordinate updates of z, then
pi0, A and theta. After every iteration the posteriors agree within 1e-8, and hmmlearn's bound
(taken after its E step) is vmp's bound at that state less N D/2 log 2 pi (the constant of every
observation's Gaussian, which hmmlearn leaves out)."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.inference.engine import Engine
from vmp.inference.state import State

vhmm = pytest.importorskip("hmmlearn.vhmm")
threadpoolctl = pytest.importorskip("threadpoolctl")

TOL = 1e-8
ITERATIONS = 12


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, np.reshape(b, a.shape), rtol=0, atol=TOL * scale, err_msg=what)


def _sequences(rng):
    means = np.array([[0.0, 0.0], [3.0, 1.0], [-1.0, 4.0]])
    out = []
    for length in (40, 25, 55):
        state, seq = 0, []
        for _ in range(length):
            state = state if rng.random() < 0.85 else int(rng.integers(3))
            seq.append(rng.multivariate_normal(means[state], [[1.0, 0.3], [0.3, 0.6]]))
        out.append(np.array(seq))
    return out


def _start(est, model, rng, k, d):
    """hmmlearn's priors from vmp's model, and one start for both."""
    theta = model["theta"].factor
    est.startprob_prior_ = np.full(k, 0.7)
    est.transmat_prior_ = np.full((k, k), 1.3)
    est.means_prior_ = np.array(theta.mean, float)
    est.beta_prior_ = np.array(theta.beta, float)
    est.dof_prior_ = np.array(theta.dof, float)
    est.scale_prior_ = np.linalg.inv(theta.scale)
    est.startprob_posterior_ = est.startprob_prior_ + rng.uniform(0, 2, k)
    est.transmat_posterior_ = est.transmat_prior_ + rng.uniform(0, 20, (k, k))
    est.means_posterior_ = rng.normal(1.0, 2.0, (k, d))
    est.beta_posterior_ = rng.uniform(5, 30, k)
    est.dof_posterior_ = rng.uniform(5, 30, k)
    a = rng.normal(size=(k, d, d))
    est.scale_posterior_ = (a @ np.swapaxes(a, 1, 2) + np.eye(d)) * est.dof_posterior_[:, None, None]
    fam = model["theta"].family
    natural = {
        "pi0": (est.startprob_posterior_ - 1.0,),
        "A": (est.transmat_posterior_ - 1.0,),
        "theta": fam.natural_from(est.means_posterior_, est.beta_posterior_, est.dof_posterior_,
                                  np.linalg.inv(est.scale_posterior_)),
    }
    return State().updated({n: (e, model[n].family.moments(e)) for n, e in natural.items()})


def _update(engine, state, node):
    natural = engine.target(state, node)
    return state.updated({node.name: (natural, node.family.moments(natural))})


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """hmmlearn's small products on one BLAS thread (many threads on a busy machine cost seconds)."""
    with threadpoolctl.threadpool_limits(limits=1):
        yield


def test_joint_hmm_takes_hmmlearns_variational_path():
    rng = np.random.default_rng(0)
    seqs = _sequences(rng)
    k, d = 3, 2
    model = vmp.models.hmm(seqs, k, covariance="joint", initial_alpha=0.7, transition_alpha=1.3,
                           mean_precision=0.5, dof=4.0)
    est = vhmm.VariationalGaussianHMM(n_components=k, covariance_type="full", n_iter=1, tol=0.0,
                                     init_params="", params="stmc")
    state = _start(est, model, rng, k, d)
    engine = Engine(model)
    x, lengths = np.concatenate(seqs), [len(s) for s in seqs]
    constant = 0.5 * x.size * np.log(2 * np.pi)
    for it in range(ITERATIONS):
        est.fit(x, lengths)
        state = _update(engine, state, model["z"])
        _close(engine.elbo(state) + constant, est.monitor_.history[-1], f"iteration {it}: bound")
        for name in ("pi0", "A", "theta"):
            state = _update(engine, state, model[name])
        p = model["theta"].family.parameters(state.natural["theta"])
        _close(state.natural["pi0"][0] + 1.0, est.startprob_posterior_, f"iteration {it}: pi0")
        _close(state.natural["A"][0] + 1.0, est.transmat_posterior_, f"iteration {it}: A")
        _close(p["mean"], est.means_posterior_, f"iteration {it}: means")
        _close(p["beta"], est.beta_posterior_, f"iteration {it}: beta")
        _close(p["dof"], est.dof_posterior_, f"iteration {it}: dof")
        _close(np.linalg.inv(p["scale"]), est.scale_posterior_, f"iteration {it}: W^-1")

