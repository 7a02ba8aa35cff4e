"""A joint Normal-Wishart (Normal-Gamma) mixture against scikit-learn's BayesianGaussianMixture.

From the same initial responsibilities and priors, scikit-learn's own M step (``_initialize``,
``_m_step``) and E step (``_e_step``) and vmp's coordinate updates (the components, the weights,
then z) take the same path: after every sweep the responsibilities, the weights' posterior, the
means, beta, the degrees of freedom and E[Lambda] agree within 1e-8 (relative to each array's
largest entry), and at the end both sit at the same fixed point. ``reg_covar=0`` (scikit-learn
adds it to the data's covariance, which the model has no term for).

"diag": scikit-learn's E step takes E[log|Lambda|] of a D x D Wishart, sum_i psi((nu - i)/2),
where its own diagonal posterior (one Gamma(nu/2, nu sigma_d^2/2) per coordinate) has
sum_d E[log tau_d] = D psi(nu/2) + ...; the two differ by a constant per component. The test drives
scikit-learn's M step and E step with that one term replaced (``_Diagonal``), and checks that
the unreplaced E step differs from vmp's responsibilities by exactly that term.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import vmp
from vmp.inference.engine import Engine
from vmp.inference.state import State

mixture = pytest.importorskip("sklearn.mixture")
datasets = pytest.importorskip("sklearn.datasets")
threadpoolctl = pytest.importorskip("threadpoolctl")  # scikit-learn's: one BLAS thread for its small products

TOL = 1e-8
#: sweeps to the fixed point (the responsibilities then move by less than 1e-9); every one of the
#: first COMPARED is compared, and the last
SWEEPS, COMPARED = 150, 5


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, np.reshape(b, a.shape), rtol=0, atol=TOL * scale, err_msg=what)


def iris() -> np.ndarray:
    x = datasets.load_iris().data
    return (x - x.mean(0)) / x.std(0)


def synthetic() -> np.ndarray:
    rng = np.random.default_rng(5)
    centres = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [0.0, 5.0, -2.0]])
    return np.concatenate([rng.multivariate_normal(c, np.diag([1.0, 0.5, 2.0]) + 0.3, size=60) for c in centres])


class _Diagonal(mixture.BayesianGaussianMixture):
    """scikit-learn's "diag" with E[log|Lambda|] of its own Gamma posteriors, D psi(nu/2) +
    D log 2 + log|W|, in place of the Wishart's sum_i psi((nu - i)/2) + D log 2 + log|W|."""

    def _estimate_log_prob(self, X, xp=None):
        return super()._estimate_log_prob(X) + 0.5 * _diag_gap(self.degrees_of_freedom_, X.shape[1])


def _diag_gap(nu: np.ndarray, d: int) -> np.ndarray:
    return d * special.digamma(0.5 * nu) - special.digamma(0.5 * (nu - np.arange(d)[:, None])).sum(0)


def _sklearn(x, k, covariance, weights, resp):
    cls = _Diagonal if covariance == "diag" else mixture.BayesianGaussianMixture
    est = cls(n_components=k, covariance_type=covariance, weight_concentration_prior_type=weights, reg_covar=0.0)
    est._check_parameters(x)
    est._initialize(x, resp)
    return est


def _vmp(x, k, covariance, weights, est):
    n, d = x.shape
    with vmp.Model("bgm") as model:
        alpha = est.weight_concentration_prior_
        pi = (vmp.StickBreaking("pi", alpha, k) if weights == "dirichlet_process"
              else vmp.Dirichlet("pi", np.full(k, alpha)))
        if covariance == "full":
            with vmp.Plate("components", k):
                theta = vmp.GaussianWishart("theta", est.mean_prior_, est.mean_precision_prior_,
                                            est.degrees_of_freedom_prior_, np.linalg.inv(est.covariance_prior_))
            with vmp.Plate("data", n):
                z = vmp.Categorical("z", pi)
                vmp.Gaussian("x", theta[z], observed=x)
        else:
            with vmp.Plate("components", k), vmp.Plate("dims", d):
                theta = vmp.NormalGamma("theta", est.mean_prior_, est.mean_precision_prior_,
                                        0.5 * est.degrees_of_freedom_prior_, 0.5 * est.covariance_prior_)
            with vmp.Plate("data", n):
                z = vmp.Categorical("z", pi)
                with vmp.Plate("dims", d):
                    vmp.Normal("x", theta[z, "components"], observed=x)
    return model


def _update(engine, state, node):
    """q(node) at its coordinate optimum given the rest of ``state``."""
    natural = engine.target(state, node)
    return state.updated({node.name: (natural, node.family.moments(natural))})


def _agree(model, state, est, covariance, weights, what):
    theta = model["theta"].family.parameters(state.natural["theta"])
    _close(theta["mean"], est.means_, f"{what}: means")
    beta = theta["beta"] if covariance == "full" else theta["beta"][:, 0]
    _close(beta, est.mean_precision_, f"{what}: beta")
    if covariance == "full":
        _close(theta["dof"], est.degrees_of_freedom_, f"{what}: dof")
        _close(theta["precision"], np.linalg.inv(est.covariances_), f"{what}: E[Lambda]")
    else:
        _close(2.0 * theta["shape"], np.broadcast_to(est.degrees_of_freedom_[:, None], theta["shape"].shape),
               f"{what}: 2a = nu")
        _close(theta["precision"], 1.0 / est.covariances_, f"{what}: E[tau]")
    pi = model["pi"].family.parameters(state.natural["pi"])
    if weights == "dirichlet_process":
        _close(pi["alpha"], est.weight_concentration_[0], f"{what}: stick a")
        _close(pi["beta"], est.weight_concentration_[1], f"{what}: stick b")
    else:
        _close(pi["alpha"], est.weight_concentration_, f"{what}: Dirichlet alpha")


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpoolctl.threadpool_limits(limits=1):
        yield


@pytest.mark.parametrize("data", [iris, synthetic])
@pytest.mark.parametrize("weights", ["dirichlet_distribution", "dirichlet_process"])
@pytest.mark.parametrize("covariance", ["full", "diag"])
def test_the_same_path_and_fixed_point_as_scikit_learn(data, weights, covariance):
    x = data()
    k = 4
    resp = np.random.default_rng(1).dirichlet(np.ones(k), size=x.shape[0])
    est = _sklearn(x, k, covariance, weights, resp)
    model = _vmp(x, k, covariance, weights, est)
    engine = Engine(model)
    state = State().updated({"z": ((np.log(resp),), (resp,))})
    for name in ("theta", "pi"):
        state = _update(engine, state, model[name])
    _agree(model, state, est, covariance, weights, "initial M step")
    for sweep in range(SWEEPS):
        before = state.moments["z"][0]
        _, log_resp = est._e_step(x)
        est._m_step(x, log_resp)
        state = _update(engine, state, model["z"])
        for name in ("theta", "pi"):
            state = _update(engine, state, model[name])
        if sweep < COMPARED or sweep == SWEEPS - 1:
            _close(state.moments["z"][0], np.exp(log_resp), f"sweep {sweep}: responsibilities")
            _agree(model, state, est, covariance, weights, f"sweep {sweep}")
    assert np.abs(state.moments["z"][0] - before).max() < 1e-9  # a fixed point of both


def test_scikit_learns_diag_e_step_differs_by_the_wishart_log_determinant_alone():
    """Unreplaced, scikit-learn's "diag" E step gives log responsibilities that differ from
    vmp's by 1/2 (sum_i psi((nu_k - i)/2) - D psi(nu_k/2)) per component, up to each row's
    normalizer: nothing else differs."""
    x = iris()
    k, d = 3, x.shape[1]
    resp = np.random.default_rng(2).dirichlet(np.ones(k), size=x.shape[0])
    est = _sklearn(x, k, "diag", "dirichlet_distribution", resp)
    model = _vmp(x, k, "diag", "dirichlet_distribution", est)
    engine = Engine(model)
    state = State().updated({"z": ((np.log(resp),), (resp,))})
    for name in ("theta", "pi"):
        state = _update(engine, state, model[name])
    ours = np.log(_update(engine, state, model["z"]).moments["z"][0])
    plain = mixture.BayesianGaussianMixture(n_components=k, covariance_type="diag", reg_covar=0.0,
                                            weight_concentration_prior_type="dirichlet_distribution")
    plain._check_parameters(x)
    plain._initialize(x, resp)
    theirs = plain._estimate_weighted_log_prob(x)
    gap = ours - theirs
    gap -= gap[:, :1]
    want = 0.5 * _diag_gap(est.degrees_of_freedom_, d)
    _close(gap, np.broadcast_to(want - want[0], gap.shape), "the E steps' difference")
    assert np.ptp(want) > 1e-3  # the term is not a constant over components: a real difference


def test_a_gaussian_child_of_normal_gammas_over_its_coordinates_is_the_normal_children():
    """x_n ~ N(mu_z, diag(tau_z)^-1) as one Gaussian per point (theta's coordinates' plate read
    as the event axis) gives the q of D Normals per point."""
    x = synthetic()
    n, d = x.shape
    k = 3
    resp = np.random.default_rng(3).dirichlet(np.ones(k), size=n)
    est = _sklearn(x, k, "diag", "dirichlet_distribution", resp)
    normals = _vmp(x, k, "diag", "dirichlet_distribution", est)
    with vmp.Model("gaussian") as gaussian:
        pi = vmp.Dirichlet("pi", np.full(k, est.weight_concentration_prior_))
        with vmp.Plate("components", k), vmp.Plate("dims", d):
            theta = vmp.NormalGamma("theta", est.mean_prior_, 1.0, 0.5 * d, 0.5 * est.covariance_prior_)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", theta[z, "components"], observed=x)
    states = []
    for model in (normals, gaussian):
        engine = Engine(model)
        state = State().updated({"z": ((np.log(resp),), (resp,))})
        for _ in range(5):
            for name in ("theta", "pi", "z"):
                state = _update(engine, state, model[name])
        states.append(state)
        assert np.isfinite(engine.elbo(state))
    for name in ("theta", "pi", "z"):
        for a, b in zip(states[0].moments[name], states[1].moments[name]):
            _close(a, b, name)
    _close(Engine(normals).elbo(states[0]), Engine(gaussian).elbo(states[1]), "bound")
