"""An independent Monte Carlo reference for E_q[log p(child | parents)].

Draws every random node from its q with numpy/scipy samplers built from the node's parameters
(not the families' own samplers), pushes the draws through the glue (gate, gather, dot, sum,
scale, product, diag, C @ x) with plain numpy written here, and evaluates log p(child | parents) with
scipy.stats or the textbook density. Nothing here calls vmp's message, moment or draw code.

Every array has a leading axis of S draws, then one axis per plate of its expression (in that
expression's ``plates`` order), then the event axes. A Categorical or Bernoulli selector is one-hot.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from vmp.graph.expressions import Constant, Diagonal, Dot, Gate, Gather, PlatedConstant, Product, Scaled, Sticks, Sum
from vmp.graph.gaussian_chain import Matrix, Steps
from vmp.graph.linear import Linear, RandomMap

#: terms of the Polya-Gamma draws' gamma series (Polson et al. 2013 eq. (1)); the rest by its mean
PG_TERMS = 200


def align(values: np.ndarray, source: tuple, target: tuple) -> np.ndarray:
    names, wanted = [p.name for p in source], [p.name for p in target]
    assert set(names) <= set(wanted), (names, wanted)
    order = [names.index(n) for n in wanted if n in names]
    moved = np.transpose(values, [0] + [1 + i for i in order] + list(range(1 + len(source), values.ndim)))
    shape = (values.shape[0],) + tuple(q.size if q.name in names else 1 for q in target)
    return moved.reshape(shape + moved.shape[1 + len(order):])


def _sample_q(node, s: int, rng: np.random.Generator) -> np.ndarray:
    """S draws of q(node), from its parameters; one-hot for a selector."""
    name = node.family.name
    p = node.family.parameters(node.natural)
    shape = (s,) + node.plate_shape
    if name == "Normal":
        return p["mean"] + rng.standard_normal(shape) / np.sqrt(p["precision"])
    if name == "Gaussian":
        cov = np.linalg.inv(p["precision"])
        chol = np.linalg.cholesky((cov + np.swapaxes(cov, -1, -2)) / 2)
        z = rng.standard_normal(shape + node.event_shape)
        return p["mean"] + np.einsum("...ij,...j->...i", chol, z)
    if name == "Gamma":
        return rng.gamma(np.broadcast_to(p["shape"], shape)) / p["rate"]
    if name == "Exponential":
        return rng.exponential(size=shape) / p["rate"]
    if name == "Beta":
        return rng.beta(np.broadcast_to(p["alpha"], shape), np.broadcast_to(p["beta"], shape))
    if name == "Dirichlet":
        g = rng.gamma(np.broadcast_to(p["alpha"], shape + node.event_shape))
        return g / g.sum(-1, keepdims=True)
    if name == "Wishart":
        out = np.empty(shape + node.event_shape)
        for idx in np.ndindex(*node.plate_shape):
            w = stats.wishart(df=p["dof"][idx], scale=p["scale"][idx]).rvs(size=s, random_state=rng)
            out[(slice(None),) + idx] = w.reshape((s,) + node.event_shape)
        return out
    if name == "Bernoulli":
        return (rng.uniform(size=shape) < p["probability"]).astype(float)
    if name == "GaussianMarkovChain":
        return _sample_chain(node.natural, s, rng)
    if name == "CategoricalMarkovChain":
        return _sample_paths(node.natural, s, rng)
    if name == "GaussianWishart":  # points: Lambda's rows, then mu ~ N(m, (beta Lambda)^-1)
        lam = np.empty(shape + node.event_shape * 2)
        for idx in np.ndindex(*node.plate_shape):
            w = stats.wishart(df=p["dof"][idx], scale=p["scale"][idx]).rvs(size=s, random_state=rng)
            lam[(slice(None),) + idx] = w.reshape((s,) + node.event_shape * 2)
        cov = np.linalg.inv(p["beta"][..., None, None] * lam)
        z = rng.standard_normal(shape + node.event_shape)
        mu = p["mean"] + np.einsum("...ij,...j->...i", np.linalg.cholesky((cov + np.swapaxes(cov, -1, -2)) / 2), z)
        return np.concatenate([lam, mu[..., None, :]], axis=-2)
    if name == "NormalGamma":  # pairs (mu, tau)
        tau = rng.gamma(np.broadcast_to(p["shape"], shape)) / p["rate"]
        return np.stack([p["mean"] + rng.standard_normal(shape) / np.sqrt(p["beta"] * tau), tau], -1)
    if name in ("StickBreaking", "ClosedStickBreaking"):  # weights from Beta sticks
        v = rng.beta(np.broadcast_to(p["alpha"], shape + node.event_shape),
                     np.broadcast_to(p["beta"], shape + node.event_shape))
        if name == "ClosedStickBreaking":
            v[..., -1] = 1.0
        rest = np.cumprod(1.0 - v, axis=-1)
        return v * np.concatenate([np.ones(v.shape[:-1] + (1,)), rest[..., :-1]], axis=-1)
    if name == "Categorical":
        probs = p["probabilities"]
        u = rng.uniform(size=shape + (1,))
        k = (u > np.cumsum(probs, -1)).sum(-1)
        return np.eye(probs.shape[-1])[np.minimum(k, probs.shape[-1] - 1)]
    if name == "PolyaGamma":  # the variable PG(b, c) itself: b is the node's shape
        return _polya_gamma(np.broadcast_to(node.b, shape), np.broadcast_to(p["tilt"], shape), rng)
    raise NotImplementedError(name)


def _polya_gamma(b, c, rng) -> np.ndarray:
    """PG(b, c) = sum_k g_k / (2 pi^2 (k - 1/2)^2 + c^2 / 2), g_k ~ Gamma(b, 1), from its first
    PG_TERMS terms and the mean of the rest (sum_{k > K} b / d_k ~ b / (2 pi^2 K))."""
    out = np.zeros(b.shape)
    for k in range(1, PG_TERMS + 1):
        out += rng.gamma(np.maximum(b, 1e-300)) * (b > 0) / (2 * np.pi**2 * (k - 0.5) ** 2 + 0.5 * c * c)
    return out + b / (2 * np.pi**2 * PG_TERMS)
def _sample_chain(natural, s: int, rng: np.random.Generator) -> np.ndarray:
    """S paths of Gaussian chains from their precision formed whole from the natural parameters
    (h, J, K, g, L): log q = sum_t h_t.x_t + x_t^T J_t x_t + x_t^T K_t x_{t+1} + g_t.x_{t+1}
    + x_{t+1}^T L_t x_{t+1} + const, read term by term into a T D x T D quadratic form."""
    h, j, k, g, l_next = (np.asarray(a, float) for a in natural)
    chains, (steps, d) = h.shape[:-2], h.shape[-2:]
    out = np.empty((s,) + h.shape)
    for idx in np.ndindex(*chains):
        quad, lin = np.zeros((steps * d, steps * d)), np.zeros(steps * d)
        for t in range(steps):
            a = slice(t * d, (t + 1) * d)
            lin[a] += h[idx][t]
            quad[a, a] += j[idx][t]
            if t < steps - 1:
                b = slice((t + 1) * d, (t + 2) * d)
                quad[a, b] += k[idx][t]
                lin[b] += g[idx][t]
                quad[b, b] += l_next[idx][t]
        prec = -(quad + quad.T)  # log q = -1/2 x^T prec x + lin^T x
        cov = np.linalg.inv(prec)
        draw = rng.multivariate_normal(cov @ lin, (cov + cov.T) / 2, size=s)
        out[(slice(None),) + idx] = draw.reshape(s, steps, d)
    return out


def _sample_paths(natural, s: int, rng: np.random.Generator) -> np.ndarray:
    """S one-hot paths of categorical chains (unary U (..., T, K), pairwise P (..., T, K, K)),
    every one of the K^T paths scored and drawn by its probability."""
    import itertools

    unary, pairwise = (np.asarray(a, float) for a in natural)
    chains, (steps, k) = unary.shape[:-2], unary.shape[-2:]
    paths = np.array(list(itertools.product(range(k), repeat=steps)))
    out = np.empty((s,) + unary.shape)
    for idx in np.ndindex(*chains):
        score = unary[idx][np.arange(steps), paths].sum(-1)
        score += pairwise[idx][np.arange(steps - 1), paths[:, :-1], paths[:, 1:]].sum(-1)
        p = np.exp(score - score.max())
        out[(slice(None),) + idx] = np.eye(k)[paths[rng.choice(len(paths), size=s, p=p / p.sum())]]
    return out


def _data(node) -> np.ndarray:
    x = np.asarray(node.data, float)[None]
    if node.family.name == "Categorical":
        k = node.event_shape[-1] if node.event_shape else node.family.categories(node.event_shape)
        return np.eye(k)[x.astype(int)]
    return x


def node_draws(node, s: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
    if node.name not in memo:
        if node.observed and node.natural is None:
            memo[node.name] = _data(node)
        elif node.observed or node.clamp is not None:  # observed where the mask is, drawn from q elsewhere
            mask = np.asarray(node.mask, bool)
            drawn = _sample_q(node, s, rng)
            memo[node.name] = np.where(mask.reshape(mask.shape + (1,) * (drawn.ndim - 1 - mask.ndim)),
                                       _data(node), drawn)
        else:
            memo[node.name] = _sample_q(node, s, rng)
    return memo[node.name]


def _selector(node, s, rng, memo) -> np.ndarray:
    z = node_draws(node, s, rng, memo)
    return np.stack([1.0 - z, z], -1) if node.family.name == "Bernoulli" else z


def draws(expr, owner, s: int, rng: np.random.Generator, memo: dict) -> np.ndarray:
    """S draws of a parent expression over ``expr.plates`` (a role constant: over ``owner.plates``)."""
    if getattr(expr, "random", False):
        return node_draws(expr, s, rng, memo)
    if isinstance(expr, PlatedConstant):
        return np.asarray(expr.value, float)[None]
    if isinstance(expr, Constant):
        return np.broadcast_to(expr.value, owner.plate_shape + expr.event_shape)[None]
    if isinstance(expr, Scaled):
        return expr.scale * draws(expr.node, owner, s, rng, memo)
    if isinstance(expr, Product):
        p = align(draws(expr.node, owner, s, rng, memo), expr.node.plates, expr.plates)
        c = align(draws(expr.scale, owner, s, rng, memo), expr.scale.plates, expr.plates)
        return c.reshape(c.shape + (1,) * (p.ndim - c.ndim)) * p
    if isinstance(expr, Gather):
        return np.take(draws(expr.node, owner, s, rng, memo), expr.index, axis=1)
    if isinstance(expr, Steps):
        return node_draws(expr.node, s, rng, memo)
    if isinstance(expr, Matrix):
        if expr.node is None:
            return np.asarray(expr.constant, float)[None]
        rows = align(draws(expr.node, owner, s, rng, memo), expr.node.plates, expr.plates + (expr.dim_plate,))
        return rows
    if isinstance(expr, Linear):
        x = align(draws(expr.node, owner, s, rng, memo), _plates(expr.node, owner), expr.plates)
        w = align(np.asarray(expr.weight, float)[None], expr.weight_plates, expr.plates)
        return np.einsum("...ij,...j->...i", w, x) if expr.matrix else w * x
    if isinstance(expr, RandomMap):  # C x: the rows' draws (P, D) times x's draws, per plate element
        rows = align(draws(expr.rows, owner, s, rng, memo), expr.rows.plates, expr.plates)
        x = align(draws(expr.node, owner, s, rng, memo), _plates(expr.node, owner), expr.plates)
        return np.einsum("...ij,...j->...i", rows, x)
    if isinstance(expr, Diagonal):
        alpha = draws(expr.node, owner, s, rng, memo)
        if expr.family.name == "NormalGamma":  # (mu_d, tau_d) over the coordinates, as they are
            return alpha
        return alpha[..., :, None] * np.eye(alpha.shape[-1])
    if isinstance(expr, Sticks):
        return align(draws(expr.node, owner, s, rng, memo), expr.node.plates, expr.plates + (expr.dim_plate,))
    if isinstance(expr, Gate):
        values = align(draws(expr.node, owner, s, rng, memo), expr.node.plates, expr.plates + (expr.gated_plate,))
        onehot = align(_selector(expr.selector, s, rng, memo), expr.selector.plates, expr.plates)
        event = values.ndim - 2 - len(expr.plates)
        return np.sum(onehot.reshape(onehot.shape + (1,) * event) * values, axis=1 + len(expr.plates))
    if isinstance(expr, Dot):
        if expr.shared is None:
            u = align(draws(expr.u, owner, s, rng, memo), _plates(expr.u, owner), expr.plates)
            v = align(draws(expr.v, owner, s, rng, memo), _plates(expr.v, owner), expr.plates)
            return np.sum(u * v, -1)
        target = expr.plates + (expr.shared,)
        u = align(draws(expr.u, owner, s, rng, memo), _plates(expr.u, owner), target)
        v = align(draws(expr.v, owner, s, rng, memo), _plates(expr.v, owner), target)
        return np.sum(u * v, -1)
    if isinstance(expr, Sum):
        return sum(align(draws(t, owner, s, rng, memo), _plates(t, owner), expr.plates) for t in expr.terms)
    raise NotImplementedError(type(expr).__name__)


def _plates(expr, owner) -> tuple:
    return owner.plates if isinstance(expr, Constant) and not isinstance(expr, PlatedConstant) else expr.plates


def _gaussian_logpdf(x, mean, precision):
    d = x.shape[-1]
    r = x - mean
    _, logdet = np.linalg.slogdet(precision)
    return 0.5 * logdet - 0.5 * d * np.log(2 * np.pi) - 0.5 * np.einsum("...i,...ij,...j->...", r, precision, r)


def _joint_parameters(node, values: np.ndarray) -> dict:
    """Mean and precision from a joint parent's draws: GaussianWishart points (Lambda's rows,
    then mu), or NormalGamma pairs (mu, tau) (over the coordinates: precision diag(tau))."""
    if type(node.factor).__name__ == "GaussianJointFactor":
        return {"mean": values[..., -1, :], "precision": values[..., :-1, :]}
    if node.family.name == "Gaussian":
        return {"mean": values[..., 0], "precision": values[..., 1][..., :, None] * np.eye(values.shape[-2])}
    return {"mean": values[..., 0], "precision": values[..., 1]}


def _sticks(pi: np.ndarray, closed: bool) -> np.ndarray:
    """The sticks v_k = pi_k / (1 - sum_{j<k} pi_j) of weights (the K-th left out when v_K = 1)."""
    before = np.concatenate([np.zeros(pi.shape[:-1] + (1,)), np.cumsum(pi, -1)[..., :-1]], -1)
    v = pi / (1.0 - before)
    return v[..., :-1] if closed else v


def _joint_prior(node, x: np.ndarray) -> np.ndarray:
    """log NW(mu, Lambda | m0, beta0, nu0, W0) or log NG(mu, tau | m0, beta0, a0, b0) per element."""
    f = node.factor
    if node.family.name == "NormalGamma":
        mu, tau = x[..., 0], x[..., 1]
        return (stats.gamma.logpdf(tau, f.shape, scale=1 / f.rate)
                + stats.norm.logpdf(mu, f.mean, 1 / np.sqrt(f.beta * tau)))
    mu, lam = x[..., -1, :], x[..., :-1, :]
    out = _gaussian_logpdf(mu, np.broadcast_to(f.mean, mu.shape), np.broadcast_to(f.beta, mu.shape[:-1])[..., None, None] * lam)
    for idx in np.ndindex(*node.plate_shape):
        sl = (slice(None),) + idx
        out[sl] += stats.wishart(df=f.dof[idx], scale=f.scale[idx]).logpdf(np.moveaxis(lam[sl], 0, -1))
    return out


def log_density(node, x: np.ndarray, pa: dict) -> np.ndarray:
    """log p(x | parents) per draw and child plate element, by scipy.stats or the textbook form."""
    name, f = node.family.name, node.factor
    if "omega" in pa:
        return _augmented(node, x, pa)
    if "parameters" in pa:
        pa = _joint_parameters(node, pa["parameters"])
    if name == "Normal":
        return stats.norm.logpdf(x, pa["mean"], 1 / np.sqrt(pa["precision"]))
    if name == "Gaussian":
        precision = pa["precision"]
        if type(node.factor).__name__ == "GaussianIsotropicFactor":  # a scalar alpha per element: alpha I
            precision = np.asarray(precision)[..., None, None] * np.eye(x.shape[-1])
        return _gaussian_logpdf(x, pa["mean"], precision)
    if name in ("GaussianWishart", "NormalGamma"):
        return _joint_prior(node, x)
    if name in ("StickBreaking", "ClosedStickBreaking"):
        v = _sticks(x, name == "ClosedStickBreaking")
        return stats.beta.logpdf(v, 1.0, pa["concentration"][..., None]).sum(-1)
    if name == "Gamma":
        return stats.gamma.logpdf(x, f.shape, scale=1 / pa["rate"])
    if name == "Exponential":
        return stats.expon.logpdf(x, scale=1 / pa["rate"])
    if name == "Poisson":
        t = 1.0 if f.exposure is None else f.exposure
        return stats.poisson.logpmf(x, t * pa["rate"])
    if name == "Binomial":
        return stats.binom.logpmf(x, f.trials, pa["probability"])
    if name == "NegativeBinomial":
        return stats.nbinom.logpmf(x, f.r, 1.0 - pa["probability"])
    if name == "Bernoulli":
        return stats.bernoulli.logpmf(x, pa["probability"])
    if name == "Beta":
        return stats.beta.logpdf(x, f.alpha, f.beta)
    if name == "Categorical":
        return np.sum(x * np.log(pa["probabilities"]), -1)
    if name == "Multinomial":
        n = x.sum(-1)
        return (special.gammaln(n + 1) - special.gammaln(x + 1).sum(-1)
                + np.sum(special.xlogy(x, pa["probabilities"]), -1))
    if name == "Dirichlet":
        a = np.broadcast_to(f.alpha, x.shape)
        return (special.gammaln(a.sum(-1)) - special.gammaln(a).sum(-1)
                + np.sum((a - 1) * np.log(x), -1))
    if name == "Wishart":
        out = np.empty(x.shape[:-2])
        dof = np.broadcast_to(f.dof, node.plate_shape)
        scale = np.broadcast_to(f.scale, node.plate_shape + node.event_shape)
        for idx in np.ndindex(*node.plate_shape):
            sl = (slice(None),) + idx
            out[sl] = stats.wishart(df=dof[idx], scale=scale[idx]).logpdf(np.moveaxis(x[sl], 0, -1))
        return out
    if name == "GaussianMarkovChain":
        return _chain_log_density(node, x, pa)
    raise NotImplementedError(name)


def _augmented(node, x: np.ndarray, pa: dict) -> np.ndarray:
    """log p(y, omega | psi) - log PG(omega | b, 0) = (a - b/2) psi - b log 2 - omega psi^2 / 2
    + log h(y), summed over the sticks (Polson et al. 2013 Theorem 1; Linderman et al. 2015):
    a = y, b = 1, n or y + r; a_k = x_k, b_k = N - sum_{j<k} x_j over K - 1 sticks."""
    name, f = node.family.name, node.factor
    psi = pa.get("logit", pa.get("logits"))
    if name in ("Categorical", "Multinomial"):
        n = x.sum(-1, keepdims=True)
        b = n - np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, -1)[..., :-2]], -1)
        a, log_h = x[..., :-1], 0.0
        if name == "Multinomial":
            log_h = special.gammaln(n[..., 0] + 1) - special.gammaln(x + 1).sum(-1)
    elif name == "Bernoulli":
        a, b, log_h = x, 1.0, 0.0
    elif name == "Binomial":
        a, b = x, f.trials
        log_h = special.gammaln(b + 1) - special.gammaln(x + 1) - special.gammaln(b - x + 1)
    else:  # NegativeBinomial
        a, b = x, x + f.r
        log_h = special.gammaln(x + f.r) - special.gammaln(f.r) - special.gammaln(x + 1)
    per = (a - b / 2) * psi - b * np.log(2.0) - 0.5 * pa["omega"] * psi * psi
    return (per.sum(-1) if name in ("Categorical", "Multinomial") else per) + log_h
def _chain_log_density(node, x: np.ndarray, pa: dict) -> np.ndarray:
    """Per step t: log N(x_0; mu, P^-1) at t = 0, log N(x_{t+1}; A_t x_t + B u_t, Q_t^-1) for
    t < L-1, and log N(x_t; 0, I) at a padded step t >= L."""
    f = node.factor
    d = x.shape[-1]
    out = np.zeros(x.shape[:-1])
    out[..., 0] = _gaussian_logpdf(x[..., 0, :], pa["mean"][..., 0, :], pa["precision"][..., 0, :, :])
    noise = np.broadcast_to(pa["noise"], x.shape[:-1] + (d, d))
    mean = np.einsum("...ij,...j->...i", pa["transition"], x)
    if "control" in pa:
        mean = mean + np.einsum("...ij,...j->...i", pa["control"], f.inputs)
    step = _gaussian_logpdf(x[..., 1:, :], mean[..., :-1, :], noise[..., :-1, :, :])
    out[..., :-1] += f.within[..., :-1] * step
    pad = _gaussian_logpdf(x, np.zeros(d), np.eye(d))
    return out * (1.0 - f.padding) + f.padding * pad


def expected_log_density(node, s: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo mean and standard error of log p(child | parents) per child plate element."""
    rng = np.random.default_rng(seed)
    memo: dict = {}
    x = node_draws(node, s, rng, memo)
    pa = {}
    for role, expr in node.parents.items():
        value = draws(expr, node, s, rng, memo)
        pa[role] = align(value, _plates(expr, node), node.plates)
    with np.errstate(divide="ignore"):
        values = np.broadcast_to(log_density(node, x, pa), (s,) + node.plate_shape)
    return values.mean(0), values.std(0) / np.sqrt(s)
