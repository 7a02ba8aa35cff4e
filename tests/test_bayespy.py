"""vmp against BayesPy (Luttinen 2016, JMLR 17(41)), an independent implementation of VMP.

Each case declares one model in both libraries with the same priors, sets BayesPy's initial q
(its natural parameters ``phi``) and copies it into a vmp State, then runs the same coordinate
path: BayesPy's ``VB.update(node)`` and vmp's ``Engine.coordinate`` node by node in one order.
After every update the moments of the updated q must agree, after every sweep the bound
(BayesPy's ``VB.compute_lowerbound()``, every constant included as in vmp's ``Engine.elbo``),
and at the end the posterior parameters. ``test_a_perturbed_message_is_caught`` moves vmp's
updates by 1e-6 relative in every case and checks that the comparison fails.

BayesPy's conventions, mapped onto vmp's natural parameters (Winn & Bishop table 1):
Wishart(n, V) has phi = (-V/2, n/2) with V the inverse scale, vmp eta = (-V/2, (n - D - 1)/2);
Gamma phi = (-b, a), eta = (-b, a - 1); Dirichlet and Beta phi = alpha, eta = alpha - 1;
CategoricalMarkovChain phi = (log p0, pairwise log-potentials of steps 0..T-2), vmp's unary
log-potentials are zero after step 0 (the same q). Gaussian, GaussianARD (vmp Normal or a
Gaussian with an ARD precision), Categorical and Bernoulli share vmp's parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import vmp
from vmp.inference.engine import Engine
from vmp.inference.state import State

bp = pytest.importorskip("bayespy.nodes")
VB = pytest.importorskip("bayespy.inference").VB

RTOL = 1e-8  # relative to each array's largest entry (at least 1): agreement is to rounding


@dataclass
class Pair:
    """One model in both libraries: vmp's model, BayesPy's hidden node for each vmp node name,
    BayesPy's observed nodes, the update order and the number of sweeps."""
    model: vmp.Model
    nodes: dict
    observed: list
    order: list
    sweeps: int = 4
    vb: VB = field(init=False)

    def __post_init__(self):
        self.vb = VB(*self.observed, *self.nodes.values())


def _set_q(node, *phi) -> None:
    """Set BayesPy's q(node) at natural parameters ``phi``."""
    node.phi = [np.asarray(p, float) for p in phi]
    node._update_moments_and_cgf()


def _full(node, plates: tuple) -> list:
    """BayesPy's phi broadcast to its plates, with its singleton plate axes (BayesPy's way to
    line plates up) dropped to vmp's ``plates`` shape."""
    out = [np.broadcast_to(p, node.plates + node.dims[i]) for i, p in enumerate(node.phi)]
    if node.plates != plates and np.prod(node.plates) == np.prod(plates):
        out = [np.reshape(p, plates + node.dims[i]) for i, p in enumerate(out)]
    return out


def _natural(family: str, phi: list) -> tuple:
    """vmp's natural parameters of BayesPy's q with natural parameters ``phi``."""
    if family == "Wishart":
        return phi[0], phi[1] - 0.5 * (phi[0].shape[-1] + 1)
    if family == "Gamma":
        return phi[0], phi[1] - 1.0
    if family == "Dirichlet":
        return (phi[0] - 1.0,)
    if family == "Beta":
        return phi[0][..., 0] - 1.0, phi[0][..., 1] - 1.0
    if family == "GaussianMarkovChain":  # BayesPy's (linear, x_t x_t^T, x_t x_{t+1}^T for t < T-1)
        linear, quad, pair = phi
        full = np.zeros(quad.shape)
        full[..., :-1, :, :] = pair
        return linear, quad, full, np.zeros(linear.shape), np.zeros(quad.shape)
    if family == "CategoricalMarkovChain":
        first, pairs = phi
        steps, k = pairs.shape[-3] + 1, first.shape[-1]
        unary = np.zeros(first.shape[:-1] + (steps, k))
        unary[..., 0, :] = first
        pairwise = np.zeros(first.shape[:-1] + (steps, k, k))
        pairwise[..., :-1, :, :] = pairs
        return unary, pairwise
    return tuple(phi)


def _moments(family: str, u: list) -> list:
    """BayesPy's moments ``u`` in vmp's layout (a Beta's two log-moments are one array there)."""
    if family == "Beta":
        return [u[0][..., 0], u[0][..., 1]]
    return list(u)


def _vmp_moments(family: str, moments: tuple) -> list:
    """vmp's moments as BayesPy keeps them (a chain: the marginal of step 0 and the pair
    marginals, from which the other marginals follow)."""
    if family == "CategoricalMarkovChain":
        return [moments[0][..., 0, :], moments[1][..., :-1, :, :]]
    if family == "GaussianMarkovChain":
        return [moments[0], moments[1], moments[2][..., :-1, :, :]]
    return list(moments)


def _state(pair: Pair) -> State:
    state = State()
    for name, node in pair.nodes.items():
        family = pair.model[name].family
        natural = tuple(np.array(a, float) for a in _natural(family.name, _full(node, pair.model[name].plate_shape)))
        state = state.updated({name: (natural, family.moments(natural))})
    return state


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    b = np.reshape(b, np.shape(a)) if b.size == a.size else np.broadcast_to(b, np.shape(a))
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=0, atol=RTOL * scale, err_msg=what)


def compare(pair: Pair) -> list:
    """Run both on one coordinate path; assert agreement; return vmp's bounds per sweep."""
    engine = Engine(pair.model)
    state = _state(pair)
    _close(engine.elbo(state), pair.vb.compute_lowerbound(), "initial bound")
    bounds = []
    for sweep in range(pair.sweeps):
        for name in pair.order:
            node, family = pair.model[name], pair.model[name].family.name
            pair.vb.update(pair.nodes[name], verbose=False)
            natural, moments = engine.coordinate(state, node)
            state = state.updated({name: (natural, moments)})
            for i, (mine, theirs) in enumerate(zip(_vmp_moments(family, moments),
                                                   _moments(family, pair.nodes[name].u))):
                _close(mine, theirs, f"sweep {sweep}: moment {i} of q({name})")
        bounds.append(engine.elbo(state))
        _close(bounds[-1], pair.vb.compute_lowerbound(), f"sweep {sweep}: bound")
    for name, node in pair.nodes.items():
        family = pair.model[name].family
        if family.name in ("Categorical", "CategoricalMarkovChain"):
            continue  # their natural parameters are defined up to a constant; the moments agreed
        theirs = family.parameters(_natural(family.name, _full(node, pair.model[name].plate_shape)))
        for key, value in family.parameters(state.natural[name]).items():
            _close(value, theirs[key], f"posterior parameter {key} of q({name})")
    return bounds


# ------------------------------------------------------------------------------------------
# the models
# ------------------------------------------------------------------------------------------

def gaussian_mixture(n: int = 90, d: int = 2, k: int = 3, sweeps: int = 4) -> Pair:
    """BayesPy's documented GMM (Dirichlet, Categorical, Gaussian means, Wishart precisions)."""
    rng = np.random.default_rng(0)
    centres = 4.0 * rng.normal(size=(k, d))
    x = centres[rng.integers(k, size=n)] + rng.normal(size=(n, d))
    alpha = bp.Dirichlet(np.full(k, 0.5))
    z = bp.Categorical(alpha, plates=(n,))
    mu = bp.Gaussian(np.zeros(d), 0.01 * np.eye(d), plates=(k,))
    lam = bp.Wishart(d + 1, 2.0 * np.eye(d), plates=(k,))
    y = bp.Mixture(z, bp.Gaussian, mu, lam)
    y.observe(x)
    _set_q(z, rng.normal(size=(n, k)))
    with vmp.Model("gmm") as model:
        pi = vmp.Dirichlet("pi", alpha=np.full(k, 0.5))
        with vmp.Plate("components", k):
            m = vmp.Gaussian("mu", mean=np.zeros(d), precision=0.01 * np.eye(d))
            w = vmp.Wishart("Lambda", dof=d + 1, scale=0.5 * np.eye(d))
        with vmp.Plate("data", n):
            c = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=m[c], precision=w[c], observed=x)
    return Pair(model, {"pi": alpha, "z": z, "mu": mu, "Lambda": lam}, [y], ["mu", "Lambda", "z", "pi"],
                sweeps=sweeps)


def linear_regression(ard: bool) -> Pair:
    """Bayesian linear regression: Gaussian weights (an ARD Gamma precision each, or a fixed
    precision matrix), Gamma noise precision."""
    rng = np.random.default_rng(1)
    n, d = 40, 3
    x = rng.normal(size=(n, d))
    y = x @ np.array([1.0, -2.0, 0.0]) + 0.5 * rng.normal(size=n)
    tau = bp.Gamma(2.0, 1.0)
    nodes = {}
    with vmp.Model("regression") as model:
        if ard:
            alpha = bp.Gamma(1e-2, 1e-2, plates=(d,))
            w = bp.GaussianARD(0.0, alpha, shape=(d,))
            nodes["alpha"] = alpha
            with vmp.Plate("inputs", d):
                precision = vmp.Gamma("alpha", 1e-2, 1e-2)
        else:
            w = bp.Gaussian(np.zeros(d), 0.1 * np.eye(d))
            precision = 0.1 * np.eye(d)
        vw = vmp.Gaussian("w", mean=np.zeros(d), precision=precision)
        vt = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("data", n):
            vmp.Normal("y", mean=vmp.dot(vw, vmp.Data("X", x)), precision=vt, observed=y)
    out = bp.GaussianARD(bp.SumMultiply("i,i", w, x), tau)
    out.observe(y)
    nodes.update(w=w, tau=tau)
    return Pair(model, nodes, [out], (["alpha"] if ard else []) + ["w", "tau"], sweeps=5)


def pca(missing: bool = False) -> Pair:
    """Bayesian PCA with ARD (BayesPy's PCA example: GaussianARD, Dot, Gamma); ``missing``:
    a fifth of the entries unobserved (``mask``)."""
    rng = np.random.default_rng(2)
    n, d, k = 30, 4, 2
    y = rng.normal(size=(n, 2)) @ rng.normal(size=(2, d)) + 0.1 * rng.normal(size=(n, d))
    mask = rng.random((n, d)) > 0.2 if missing else None
    z = bp.GaussianARD(0.0, 1.0, plates=(n, 1), shape=(k,))
    alpha = bp.Gamma(1e-3, 1e-3, plates=(k,))
    w = bp.GaussianARD(0.0, alpha, plates=(d,), shape=(k,))
    tau = bp.Gamma(1e-3, 1e-3)
    out = bp.GaussianARD(bp.Dot(z, w), tau)
    out.observe(y, **({} if mask is None else {"mask": mask}))
    start = rng.normal(size=(d, k))
    _set_q(w, start, -0.5 * np.broadcast_to(np.eye(k), (d, k, k)))  # q(W) at N(start, I)
    with vmp.Model("pca") as model:
        with vmp.Plate("components", k):
            va = vmp.Gamma("alpha", 1e-3, 1e-3)
        with vmp.Plate("dimensions", d):
            vw = vmp.Gaussian("W", mean=np.zeros(k), precision=va)
        vt = vmp.Gamma("tau", 1e-3, 1e-3)
        with vmp.Plate("data", n):
            vz = vmp.Gaussian("z", mean=np.zeros(k), precision=np.eye(k))
            with vmp.Plate("dimensions", d):
                vmp.Normal("y", mean=vmp.dot(vz, vw), precision=vt, observed=y, mask=mask)
    return Pair(model, {"alpha": alpha, "W": w, "tau": tau, "z": z}, [out], ["z", "W", "alpha", "tau"])


def factor_analysis() -> Pair:
    """``vmp.models.factor_analysis`` (PCA with ARD plus a mean per dimension: a sum ``a + b``
    of a dot and a Normal) against BayesPy's ``Add(Dot(z, W), mu)``."""
    from vmp.models import factor_analysis as build

    rng = np.random.default_rng(11)
    n, d, k = 25, 4, 2
    y = rng.normal(size=(n, 2)) @ rng.normal(size=(2, d)) + 3.0 + 0.1 * rng.normal(size=(n, d))
    z = bp.GaussianARD(0.0, 1.0, plates=(n, 1), shape=(k,))
    alpha = bp.Gamma(1e-3, 1e-3, plates=(k,))
    w = bp.GaussianARD(0.0, alpha, plates=(d,), shape=(k,))
    mu = bp.GaussianARD(0.0, 1e-3, plates=(d,))
    tau = bp.Gamma(1e-3, 1e-3)
    out = bp.GaussianARD(bp.Add(bp.Dot(z, w), mu), tau)
    out.observe(y)
    _set_q(w, rng.normal(size=(d, k)), -0.5 * np.broadcast_to(np.eye(k), (d, k, k)))
    model = build(y, k)
    return Pair(model, {"alpha": alpha, "W": w, "mu": mu, "tau": tau, "z": z}, [out],
                ["z", "W", "mu", "alpha", "tau"])


def categorical_hmm() -> Pair:
    """A categorical HMM: CategoricalMarkovChain with Dirichlet initial and transition
    probabilities, Categorical emissions gated by the chain."""
    rng = np.random.default_rng(3)
    s, t, k, m = 3, 25, 2, 3
    emit = np.array([[0.8, 0.15, 0.05], [0.05, 0.15, 0.8]])
    states = np.zeros((s, t), int)
    for i in range(1, t):
        stay = rng.random(s) < 0.9
        states[:, i] = np.where(stay, states[:, i - 1], 1 - states[:, i - 1])
    y = np.array([[rng.choice(m, p=emit[j]) for j in row] for row in states])
    p0 = bp.Dirichlet(np.ones(k))
    a = bp.Dirichlet(np.ones(k), plates=(k,))
    z = bp.CategoricalMarkovChain(p0, a, states=t, plates=(s,))
    b = bp.Dirichlet(np.ones(m), plates=(k,))
    out = bp.Mixture(z, bp.Categorical, b)
    out.observe(y)
    _set_q(b, 1.0 + 5.0 * rng.random((k, m)))
    with vmp.Model("hmm") as model:
        vp = vmp.Dirichlet("pi0", alpha=np.ones(k))
        with vmp.Plate("states", k):
            va = vmp.Dirichlet("A", alpha=np.ones(k))
            vb = vmp.Dirichlet("B", alpha=np.ones(m))
        with vmp.Plate("sequences", s), vmp.Plate("time", t):
            vz = vmp.CategoricalMarkovChain("z", initial=vp, transition=va)
            vmp.Categorical("y", vb[vz], observed=y)
    return Pair(model, {"pi0": p0, "A": a, "B": b, "z": z}, [out], ["z", "pi0", "A", "B"])


def bernoulli_mixture() -> Pair:
    """BayesPy's documented Bernoulli mixture: Beta probabilities per (dimension, component)."""
    rng = np.random.default_rng(4)
    n, d, k = 60, 5, 2
    truth = np.array([[0.9, 0.9, 0.1, 0.1, 0.5], [0.1, 0.2, 0.9, 0.8, 0.5]])
    x = (rng.random((n, d)) < truth[rng.integers(k, size=n)]).astype(int)
    r = bp.Dirichlet(np.ones(k))
    z = bp.Categorical(r, plates=(n, 1))
    p = bp.Beta([0.5, 0.5], plates=(d, k))
    out = bp.Mixture(z, bp.Bernoulli, p)
    out.observe(x)
    _set_q(z, rng.normal(size=(n, 1, k)))
    with vmp.Model("bernoulli_mixture") as model:
        vr = vmp.Dirichlet("r", alpha=np.ones(k))
        with vmp.Plate("dimensions", d), vmp.Plate("components", k):
            vp = vmp.Beta("p", 0.5, 0.5)
        with vmp.Plate("data", n):
            vz = vmp.Categorical("z", vr)
            with vmp.Plate("dimensions", d):
                vmp.Bernoulli("x", vp[vz], observed=x)
    nodes = {"r": r, "z": z, "p": p}
    pair = Pair(model, nodes, [out], ["p", "z", "r"])
    return pair


def multinomial_dirichlet() -> Pair:
    """Multinomial counts with Dirichlet probabilities, one per group (the base measure
    n! / prod x_k! included in both bounds)."""
    rng = np.random.default_rng(5)
    g = 4
    counts = rng.multinomial(20, [0.5, 0.3, 0.2], size=g) + rng.multinomial(5, [0.1, 0.1, 0.8], size=g)
    p = bp.Dirichlet(np.array([1.0, 2.0, 0.5]), plates=(g,))
    out = bp.Multinomial(counts.sum(axis=1), p)
    out.observe(counts)
    with vmp.Model("multinomial") as model:
        with vmp.Plate("groups", g):
            vp = vmp.Dirichlet("p", alpha=np.array([1.0, 2.0, 0.5]))
            vmp.Multinomial("x", vp, observed=counts)
    return Pair(model, {"p": p}, [out], ["p"], sweeps=1)


def poisson_gamma() -> Pair:
    """Poisson counts with Gamma rates whose rate parameter is itself Gamma (hierarchical)."""
    rng = np.random.default_rng(6)
    g, n = 3, 12
    y = rng.poisson([[2.0], [5.0], [9.0]], size=(g, n))
    beta = bp.Gamma(1.0, 1.0)
    lam = bp.Gamma(2.0, beta, plates=(g, 1))
    out = bp.Poisson(lam, plates=(g, n))
    out.observe(y)
    with vmp.Model("poisson") as model:
        vb = vmp.Gamma("beta", 1.0, 1.0)
        with vmp.Plate("groups", g):
            vl = vmp.Gamma("lam", 2.0, vb)
            with vmp.Plate("draws", n):
                vmp.Poisson("y", vl, observed=y)
    return Pair(model, {"beta": beta, "lam": lam}, [out], ["lam", "beta"], sweeps=5)


def gaussian_hmm() -> Pair:
    """BayesPy's HMM example: a CategoricalMarkovChain gating Gaussian means and Wishart
    precisions."""
    rng = np.random.default_rng(7)
    t, k, d = 60, 2, 2
    states = np.cumsum(rng.random(t) < 0.1) % k
    y = np.array([[0.0, 0.0], [3.0, 3.0]])[states] + rng.normal(size=(t, d))
    p0 = bp.Dirichlet(np.ones(k))
    a = bp.Dirichlet(np.ones(k), plates=(k,))
    z = bp.CategoricalMarkovChain(p0, a, states=t)
    mu = bp.Gaussian(np.zeros(d), 0.1 * np.eye(d), plates=(k,))
    lam = bp.Wishart(d, np.eye(d), plates=(k,))
    out = bp.Mixture(z, bp.Gaussian, mu, lam)
    out.observe(y)
    _set_q(mu, np.array([[0.1, 0.0], [2.0, 2.0]]), -0.5 * np.broadcast_to(np.eye(d), (k, d, d)))
    with vmp.Model("gaussian_hmm") as model:
        vp = vmp.Dirichlet("pi0", alpha=np.ones(k))
        with vmp.Plate("states", k):
            va = vmp.Dirichlet("A", alpha=np.ones(k))
            vm = vmp.Gaussian("mu", mean=np.zeros(d), precision=0.1 * np.eye(d))
            vl = vmp.Wishart("Lambda", dof=d, scale=np.eye(d))
        with vmp.Plate("time", t):
            vz = vmp.CategoricalMarkovChain("z", initial=vp, transition=va)
            vmp.Gaussian("y", mean=vm[vz], precision=vl[vz], observed=y)
    return Pair(model, {"pi0": p0, "A": a, "mu": mu, "Lambda": lam, "z": z}, [out],
                ["z", "pi0", "A", "mu", "Lambda"])


def linear_dynamical_system() -> Pair:
    """BayesPy's LDS example (Luttinen 2016, section 5.3): a GaussianMarkovChain x with learned
    dynamics A (ARD rows) and innovation precisions nu (Gamma per dimension), a learned loading
    matrix C (ARD) and Gamma noise precisions per output dimension."""
    rng = np.random.default_rng(12)
    t, d, m = 40, 2, 3
    rot = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    x = np.zeros((t, d))
    x[0] = rng.normal(size=d)
    for i in range(1, t):
        x[i] = 0.95 * rot @ x[i - 1] + 0.3 * rng.normal(size=d)
    y = x @ rng.normal(size=(m, d)).T + 0.2 * rng.normal(size=(t, m))
    alpha = bp.Gamma(1e-3, 1e-3, plates=(d,))
    a = bp.GaussianARD(0.0, alpha, shape=(d,), plates=(d,))
    nu = bp.Gamma(1e-3, 1e-3, plates=(d,))
    xs = bp.GaussianMarkovChain(np.zeros(d), 1e-3 * np.eye(d), a, nu, n=t)
    gamma = bp.Gamma(1e-3, 1e-3, plates=(d,))
    c = bp.GaussianARD(0.0, gamma, shape=(d,), plates=(m, 1))
    tau = bp.Gamma(1e-3, 1e-3, plates=(m, 1))
    out = bp.GaussianARD(bp.Dot(c, xs), tau)
    out.observe(y.T)
    _set_q(c, rng.normal(size=(m, 1, d)), -0.5 * np.broadcast_to(np.eye(d), (m, 1, d, d)))
    _set_q(a, 0.5 * np.eye(d), -0.5 * np.broadcast_to(np.eye(d), (d, d, d)))
    # q(nu) with moments of full shape (D,): BayesPy sums E[log nu_d] over the last axis of its
    # stored moments, which a prior's broadcast moments (shape (1,)) would count once
    _set_q(nu, np.full(d, -1.0), np.full(d, 1.0))
    with vmp.Model("lds") as model:
        with vmp.Plate("dims", d):
            va = vmp.Gamma("alpha", 1e-3, 1e-3)
            vg = vmp.Gamma("gamma", 1e-3, 1e-3)
            vn = vmp.Gamma("nu", 1e-3, 1e-3)
        with vmp.Plate("rows", d):
            vA = vmp.Gaussian("A", np.zeros(d), va)
        with vmp.Plate("outputs", m):
            vc = vmp.Gaussian("C", np.zeros(d), vg)
            vt = vmp.Gamma("tau", 1e-3, 1e-3)
        with vmp.Plate("time", t):
            vx = vmp.GaussianMarkovChain("x", np.zeros(d), 1e-3 * np.eye(d), vA, vn)
            with vmp.Plate("outputs", m):
                vmp.Normal("y", vmp.dot(vc, vx), vt, observed=y)
    return Pair(model, {"x": xs, "C": c, "A": a, "nu": nu, "tau": tau, "gamma": gamma, "alpha": alpha}, [out],
                ["x", "C", "gamma", "A", "alpha", "nu", "tau"], sweeps=5)


def poisson_mixture() -> Pair:
    """A mixture of Poissons: Gamma rates gated by a Categorical."""
    rng = np.random.default_rng(8)
    n, k = 80, 2
    y = rng.poisson(np.where(rng.random(n) < 0.4, 2.0, 9.0))
    r = bp.Dirichlet(np.ones(k))
    z = bp.Categorical(r, plates=(n,))
    lam = bp.Gamma(1.0, 0.2, plates=(k,))
    out = bp.Mixture(z, bp.Poisson, lam)
    out.observe(y)
    _set_q(lam, -np.array([1.0, 0.5]), np.array([2.0, 5.0]))
    with vmp.Model("poisson_mixture") as model:
        vr = vmp.Dirichlet("r", alpha=np.ones(k))
        with vmp.Plate("components", k):
            vl = vmp.Gamma("lam", 1.0, 0.2)
        with vmp.Plate("data", n):
            vz = vmp.Categorical("z", vr)
            vmp.Poisson("y", vl[vz], observed=y)
    return Pair(model, {"r": r, "lam": lam, "z": z}, [out], ["z", "lam", "r"])


def binomial_and_exponential() -> Pair:
    """Binomial counts with Beta probabilities, and Exponential waiting times with a Gamma rate
    (two conjugate pairs in one model)."""
    rng = np.random.default_rng(9)
    trials = np.array([10, 20, 5, 8])
    x = rng.binomial(trials, 0.3)
    w = rng.exponential(0.5, size=15)
    p = bp.Beta([2.0, 3.0], plates=(4,))
    out = bp.Binomial(trials, p)
    out.observe(x)
    rate = bp.Gamma(2.0, 1.5)
    wait = bp.Gamma(1.0, rate, plates=(15,))  # BayesPy: "Use Gamma(1, lambda)" for an Exponential
    wait.observe(w)
    with vmp.Model("binomial_exponential") as model:
        with vmp.Plate("groups", 4):
            vp = vmp.Beta("p", 2.0, 3.0)
            vmp.Binomial("x", trials, vp, observed=x)
        vr = vmp.Gamma("rate", 2.0, 1.5)
        with vmp.Plate("waits", 15):
            vmp.Exponential("w", vr, observed=w)
    return Pair(model, {"p": p, "rate": rate}, [out, wait], ["p", "rate"], sweeps=1)


def matrix_factorization() -> Pair:
    """Sparse ratings y_i ~ N(u_{row_i} . v_{col_i}, 1/tau): gathers (BayesPy's Take) inside a
    dot product."""
    rng = np.random.default_rng(10)
    m, n, k, count = 6, 5, 2, 20
    rows, cols = rng.integers(m, size=count), rng.integers(n, size=count)
    y = np.sum(rng.normal(size=(m, k))[rows] * rng.normal(size=(n, k))[cols], axis=1) + 0.1 * rng.normal(size=count)
    u = bp.GaussianARD(0.0, 1.0, plates=(m,), shape=(k,))
    v = bp.GaussianARD(0.0, 1.0, plates=(n,), shape=(k,))
    tau = bp.Gamma(1.0, 1.0)
    out = bp.GaussianARD(bp.SumMultiply("d,d", bp.Take(u, rows), bp.Take(v, cols)), tau)
    out.observe(y)
    _set_q(v, rng.normal(size=(n, k)), -0.5 * np.broadcast_to(np.eye(k), (n, k, k)))
    with vmp.Model("mf") as model:
        with vmp.Plate("rows", m):
            vu = vmp.Gaussian("u", mean=np.zeros(k), precision=np.eye(k))
        with vmp.Plate("cols", n):
            vv = vmp.Gaussian("v", mean=np.zeros(k), precision=np.eye(k))
        vt = vmp.Gamma("tau", 1.0, 1.0)
        with vmp.Plate("ratings", count):
            vmp.Normal("y", mean=vmp.dot(vu[rows], vv[cols]), precision=vt, observed=y)
    return Pair(model, {"u": u, "v": v, "tau": tau}, [out], ["u", "v", "tau"])


def lda() -> Pair:
    """``vmp.models.lda`` with one token per row against BayesPy's LDA example: topics
    ``Categorical(Take(theta, documents))``, words ``Mixture(topics, Categorical, beta)``."""
    from vmp.models import lda as build

    rng = np.random.default_rng(12)
    docs, vocab, k, count = 5, 8, 2, 70
    documents = np.sort(rng.integers(docs, size=count))
    words = rng.integers(vocab, size=count)
    theta = bp.Dirichlet(np.full(k, 0.1), plates=(docs,))
    beta = bp.Dirichlet(np.full(vocab, 0.01), plates=(k,))
    z = bp.Categorical(bp.Take(theta, documents))
    out = bp.Mixture(z, bp.Categorical, beta)
    out.observe(words)
    _set_q(beta, 0.01 + rng.gamma(1.0, size=(k, vocab)) * 5)
    model = build(documents, words, np.ones(count), k, n_documents=docs, n_words=vocab, alpha=0.1, eta=0.01)
    return Pair(model, {"beta": beta, "theta": theta, "z": z}, [out], ["z", "theta", "beta"])


CASES = {
    "gaussian_mixture": gaussian_mixture,
    "gaussian_mixture_large": lambda: gaussian_mixture(n=6000, d=4, k=4, sweeps=2),
    "lda": lda,
    "linear_regression": lambda: linear_regression(ard=False),
    "linear_regression_ard": lambda: linear_regression(ard=True),
    "pca": pca,
    "pca_missing": lambda: pca(missing=True),
    "factor_analysis": factor_analysis,
    "categorical_hmm": categorical_hmm,
    "bernoulli_mixture": bernoulli_mixture,
    "multinomial_dirichlet": multinomial_dirichlet,
    "poisson_gamma": poisson_gamma,
    "gaussian_hmm": gaussian_hmm,
    "linear_dynamical_system": linear_dynamical_system,
    "poisson_mixture": poisson_mixture,
    "binomial_and_exponential": binomial_and_exponential,
    "matrix_factorization": matrix_factorization,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_path_as_bayespy(case):
    bounds = compare(CASES[case]())
    assert np.all(np.diff(bounds) >= -1e-9 * np.abs(bounds[:-1]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_perturbed_message_is_caught(case, monkeypatch):
    """Break vmp (scale the first natural parameter of every update by 1 + 1e-6) and the
    comparison must fail: the tolerance is tight enough to see it."""
    original = Engine.target

    def perturbed(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        return (out[0] * (1.0 + 1e-6),) + tuple(out[1:])

    monkeypatch.setattr(Engine, "target", perturbed)
    with pytest.raises(AssertionError):
        compare(CASES[case]())


def test_both_bounds_are_the_exact_log_evidence_of_conjugate_pairs():
    """A third computation for the one-sweep cases: after one update the bound of a conjugate
    pair is its log evidence (Dirichlet-multinomial; Beta-binomial times Gamma-exponential)."""
    from scipy.special import betaln, gammaln

    pair = multinomial_dirichlet()
    bound = compare(pair)[-1]
    x = np.asarray(pair.model["x"].data, float)
    a, n = np.array([1.0, 2.0, 0.5]), x.sum(axis=1)
    exact = np.sum(gammaln(n + 1) - gammaln(x + 1).sum(1) + gammaln(a.sum()) - gammaln(a.sum() + n)
                   + (gammaln(a + x) - gammaln(a)).sum(1))
    assert bound == pytest.approx(exact, rel=1e-10)

    pair = binomial_and_exponential()
    bound = compare(pair)[-1]
    k, trials = np.asarray(pair.model["x"].data, float), np.array([10, 20, 5, 8])
    w = np.asarray(pair.model["w"].data, float)
    beta_binomial = np.sum(gammaln(trials + 1) - gammaln(k + 1) - gammaln(trials - k + 1)
                           + betaln(2.0 + k, 3.0 + trials - k) - betaln(2.0, 3.0))
    gamma_exponential = (2.0 * np.log(1.5) - gammaln(2.0) + gammaln(2.0 + w.size)
                         - (2.0 + w.size) * np.log(1.5 + w.sum()))
    assert bound == pytest.approx(beta_binomial + gamma_exponential, rel=1e-10)


def test_the_benchmark_runs_the_same_computation_in_both(tmp_path):
    """benchmarks/bench_bayespy.py on a small mixture: both libraries' bounds agree from the
    shared initial q, and the ratio line is printed."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_bayespy.py"), "--n", "400", "--k", "3",
                          "--dims", "3", "--iterations", "2", "--bayespy-iterations", "2"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    (difference,) = re.findall(r"largest relative difference ([0-9.e+-]+)", out.stdout)
    assert float(difference) < 1e-10
    assert "D=3: BayesPy / vmp = " in out.stdout
