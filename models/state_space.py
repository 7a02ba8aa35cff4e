"""Linear-Gaussian state-space models: Kalman smoothing inside VMP (Beal 2003 ch. 5; Ghahramani
& Hinton 2000 for the switching model).

Every builder takes one series or a list of series of different lengths (NaN entries are missing
and inferred; shorter series are padded with masked steps that add nothing) and declares the
states as one ``vmp.GaussianMarkovChain`` per series in the plates ("sequences", "time"), so
q(x) is the exact smoother given the other q's. Forecasts, filtered and smoothed estimates:
``model.forecast(h)``, ``model["x"].filtered()``, ``model["x"].smoothed()`` (docs/time-series.md).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks
from .hmm import _pad


def _series(name: str, y, vector: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(data (S, T[, M]) with missing entries at 0, observed (S, T[, M]) False at NaN and padded
    entries, lengths (S,), the weights: 0 at padded entries, None without padding) from one
    series, a list of series of different lengths, or an array of equal-length series."""
    arr = y if isinstance(y, (list, tuple)) else _checks.floats(name, "series", y)
    seqs = list(arr) if not isinstance(y, (list, tuple)) and arr.ndim == (3 if vector else 2) else \
        [arr] if not isinstance(y, (list, tuple)) else [_checks.floats(name, "series", s) for s in arr]
    data, within, lengths = _pad(name, seqs, vector)
    within = within.reshape(within.shape + (1,) * (data.ndim - 2))
    flat, seen = _checks.missing(name, "series", np.where(within, np.asarray(data, float), 0.0))
    seen = np.broadcast_to(within, data.shape) if seen is None else seen & within
    weights = None if within.all() else np.broadcast_to(within, data.shape).astype(float)
    return np.where(seen, flat, 0.0), seen, lengths, weights


def _scale(data: np.ndarray, seen: np.ndarray) -> tuple[float, float]:
    """The observed entries' mean and variance (1 for a single entry)."""
    values = data[seen]
    return float(values.mean()), float(values.var()) if values.size > 1 and values.var() > 0 else 1.0


def _step_scale(data: np.ndarray, seen: np.ndarray) -> float:
    """Half the mean square of the observed one-step differences (y_{t+1} - y_t has variance
    1/q + 2/r in the local-level model: the scale of both noises), else the variance."""
    both = seen[:, 1:] & seen[:, :-1]
    if both.sum() < 2:
        return _scale(data, seen)[1]
    diff = (data[:, 1:] - data[:, :-1])[both]
    return float(np.mean(diff ** 2)) / 2.0 or 1.0


def local_level(y, *, noise_shape: float = 1e-3, level_shape: float = 1e-3, name: str = "local_level") -> vmp.Model:
    """The local-level model (a random walk observed in noise; Harvey 1989 ch. 2; Durbin & Koopman
    2012 ch. 2), with learned noise precisions:

        level_0 ~ N(m, 100 s),  level_{t+1} = level_t + w_t,  w_t ~ N(0, 1/q),
        y_t ~ N(level_t, 1/r),  q ~ Gamma(a_q, a_q v),  r ~ Gamma(a_r, a_r v),

    m and s the observed mean and variance, v half the mean square of the observed one-step
    differences (whose variance is 1/q + 2/r; so E[q] = E[r] = 1/v a priori, from a_q and a_r
    pseudo-observations: 1e-3 by default, as the local level's likelihood is flat in q/r and a
    stronger prior moves the estimates). Nodes: ``level`` (the
    chain, D = 1), ``level_precision`` (q, in a plate "state" of size 1), ``noise_precision`` (r),
    ``y`` (plates "sequences", "time"). ``noise_shape`` = a_r, ``level_shape`` = a_q.
    """
    _checks.positive(name, noise_shape=noise_shape, level_shape=level_shape)
    data, seen, lengths, weights = _series(name, y, vector=False)
    center, var = _scale(data, seen)
    step = _step_scale(data, seen)
    with vmp.Model(name) as model:
        with vmp.Plate("state", 1):
            q = vmp.Gamma("level_precision", level_shape, level_shape * step)
        r = vmp.Gamma("noise_precision", noise_shape, noise_shape * step)
        with vmp.Plate("sequences", data.shape[0]), vmp.Plate("time", data.shape[1]):
            level = vmp.GaussianMarkovChain("level", [center], [[0.01 / var]], [[1.0]], q, lengths=lengths)
            vmp.Normal("y", vmp.dot(level, [1.0]), r, observed=data, mask=seen, weights=weights)
    return model


def _principal(data: np.ndarray, seen: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The loadings C (M x D) and scores (S, T, D) of the first D principal components of the
    observed steps (missing entries at their output's mean), the scores of unit variance, and
    the precision 1 / sigma^2 of what they leave (probabilistic PCA's sigma^2, the mean of the
    other eigenvalues, Tipping & Bishop 1999 eq. (8); at least 1e-3 of the variance): the
    starting point of C, E[x] and tau (ARD and the state scale then start at the data's scale,
    not in the basin where x explains nothing)."""
    mean = np.array([data[..., j][seen[..., j]].mean() for j in range(data.shape[-1])])
    filled = np.where(seen, data, mean) - mean
    rows = filled.reshape(-1, filled.shape[-1])
    _, sv, vt = np.linalg.svd(rows[seen.reshape(rows.shape).any(-1)], full_matrices=False)
    k = min(d, len(sv))
    n = max(int(seen.any(-1).sum()), 1)
    eig = sv ** 2 / n
    rest = max(float(eig[k:].mean()) if len(eig) > k else 0.0, 1e-3 * float(eig.sum()) / len(eig), 1e-300)
    loadings = np.zeros((data.shape[-1], d))
    loadings[:, :k] = vt[:k].T * np.sqrt(eig[:k])
    scores = np.zeros(data.shape[:-1] + (d,))
    scores[..., :k] = filled @ vt[:k].T / np.sqrt(np.maximum(eig[:k], 1e-300))
    return loadings, scores, 1.0 / rest


def _regimes(scores: np.ndarray, lengths: np.ndarray, k: int, window: int, seed: int = 0) -> np.ndarray:
    """Starting regime marginals (S, T, K): k-means (k-means++ starts, Lloyd's iterations) on
    each step's local dynamics in the principal scores, the log mean square increment and the
    lag-one regression coefficient over a centred window of ``window`` steps; 0.8 on the
    step's cluster. Regimes that differ in their noise or their persistence separate there."""
    from vmp.inference.init import kmeanspp

    steps = scores.shape[1]
    rows = []
    for i, n in enumerate(lengths):
        z = scores[i, :n]
        dz = np.diff(z, axis=0, prepend=z[:1])
        kernel = np.ones(window) / window
        energy = np.convolve(np.sum(dz ** 2, -1), kernel, mode="same")
        lagged = np.convolve(np.sum(z[1:] * z[:-1], -1), kernel, mode="same")
        power = np.convolve(np.sum(z[:-1] ** 2, -1), kernel, mode="same")
        slope = np.append(lagged / np.maximum(power, 1e-12), lagged[-1:] / max(power[-1], 1e-12))
        rows.append(np.stack([np.log(energy + 1e-12), slope], -1))
    feats = np.concatenate(rows)
    feats = (feats - feats.mean(0)) / np.maximum(feats.std(0), 1e-12)
    centers = kmeanspp(feats, k, np.random.default_rng(seed))
    for _ in range(50):
        label = np.argmin(((feats[:, None, :] - centers[None]) ** 2).sum(-1), 1)
        centers = np.array([feats[label == j].mean(0) if np.any(label == j) else centers[j] for j in range(k)])
    out = np.full((len(lengths), steps, k), 1.0 / k)
    start = 0
    for i, n in enumerate(lengths):
        out[i, :n] = 0.2 / (k - 1)
        out[i, np.arange(n), label[start:start + n]] = 0.8
        start += n
    return out


def _dynamics(scores: np.ndarray, lengths: np.ndarray, regimes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each regime's least-squares dynamics on the principal scores, weighted by the starting
    regime marginals of the step it governs: A^(k) (D x D) laid out as the rows of the "A" node
    (D, K, D), and the innovation precisions nu^(k)_i (D, K)."""
    d, k = scores.shape[-1], regimes.shape[-1]
    within = np.arange(scores.shape[1] - 1) < (lengths - 1)[:, None]
    w = regimes[:, :-1] * within[..., None]  # (S, T-1, K)
    prev, step = scores[:, :-1], scores[:, 1:]
    a = np.empty((k, d, d))
    nu = np.empty((k, d))
    for j in range(k):
        xx = np.einsum("st,sti,stj->ij", w[..., j], prev, prev) + 1e-6 * np.eye(d)
        yx = np.einsum("st,sti,stj->ij", w[..., j], step, prev)
        a[j] = np.linalg.solve(xx.T, yx.T).T
        resid = step - np.einsum("ij,stj->sti", a[j], prev)
        nu[j] = w[..., j].sum() / np.maximum(np.einsum("st,sti->i", w[..., j], resid ** 2), 1e-12)
    return np.transpose(a, (1, 0, 2)), nu.T


#: the parameters ``linear_dynamical_system(learn=...)`` may learn
LEARNABLE = ("transition", "noise_precision", "loading", "output_precision")


def linear_dynamical_system(Y, state_dim: int, *, learn=True, transition=None, noise_precision=None,
                            loading=None, output_precision=None, inputs=None, output_noise: str = "diagonal",
                            name: str = "lds") -> vmp.Model:
    """The variational Bayesian linear dynamical system (Beal 2003 ch. 5; BayesPy's LDS):

        x_0 ~ N(0, 100 v I),  x_{t+1} = A x_t (+ B u_t) + w_t,  w_t ~ N(0, diag(nu)^-1),
        y_tm ~ N(c_m . x_t, 1/tau_m),

    with learned rows a_i ~ N(0, I) of A, innovation precisions nu_i ~ Gamma(1, 1), rows
    c_m ~ N(0, diag(gamma)^-1) of the loading matrix C with ARD precisions
    gamma_j ~ Gamma(1e-3, 1e-3), and output precisions tau_m ~ Gamma(1, v), v the observed
    variance. Nodes: ``A`` and ``nu`` (plate "states"), ``C`` and ``tau`` (plate "outputs"),
    ``gamma`` (plate "state_dims"), ``x`` (the chain, plates "sequences", "time"), ``y`` (plates
    "sequences", "time", "outputs").

    ``output_noise="full"``: correlated output noise, y_t ~ N(C x_t, R^-1) with one full precision
    R ~ Wishart(M + 2, s I / (M + 2)) ("R", E[R] = s I, s probabilistic PCA's noise precision) in
    place of tau, and y a Gaussian per step over the M outputs (``C @ x``: a learned C's rows
    meet in E[R]'s off-diagonal and are updated one at a time). A full R is told apart from
    C C^T only by the dynamics (R is white in time), so its fits take more sweeps.

    ``learn``: True (all), False (none) or a subset of ``LEARNABLE``; a parameter not learned is
    given as a constant: ``transition`` (D x D), ``noise_precision`` (D,), ``loading`` (M x D),
    ``output_precision`` (M,; M x M or its diagonal with ``output_noise="full"``). ``inputs``: (B, u), a constant
    D x K matrix and the inputs (T x K, or per sequence), x_{t+1} = A x_t + B u_t + w_t.
    """
    learned = _learned(name, learn)
    d = _checks.count(name, "state_dim", state_dim)
    data, seen, lengths, weights = _series(name, Y, vector=True)
    m = data.shape[-1]
    _, var = _scale(data, seen)
    full = _given(name, learn, learned, output_noise, transition=transition, noise_precision=noise_precision,
                  loading=loading, output_precision=output_precision)
    loadings, scores, precision = _principal(data, seen, d) if "loading" in learned or full else (None,) * 3
    with vmp.Model(name) as model:
        with vmp.Plate("states", d):
            a = vmp.Gaussian("A", np.zeros(d), np.eye(d)) if "transition" in learned else transition
            nu = vmp.Gamma("nu", 1.0, 1.0) if "noise_precision" in learned else noise_precision
        with vmp.Plate("state_dims", d):
            gamma = vmp.Gamma("gamma", 1e-3, 1e-5 * var / d) if "loading" in learned else None
        with vmp.Plate("outputs", m):
            c = vmp.Gaussian("C", np.zeros(d), gamma) if "loading" in learned else loading
            tau = vmp.Gamma("tau", 1.0, 0.1 * var) if "output_precision" in learned and not full else \
                np.diag(output_precision) if full and np.ndim(output_precision) == 1 else output_precision
        if full and "output_precision" in learned:
            tau = vmp.Wishart("R", m + 2.0, precision / (m + 2.0) * np.eye(m))
        with vmp.Plate("sequences", data.shape[0]), vmp.Plate("time", data.shape[1]):
            x = vmp.GaussianMarkovChain("x", np.zeros(d), 0.01 / var * np.eye(d), a, nu, inputs=inputs,
                                        lengths=lengths)
            _observe(data, seen, weights, c, x, tau, full)
    if "loading" in learned:
        model.start = {"C": loadings, "x": scores}
        if "output_precision" in learned and not full:
            model.start["tau"] = np.full(m, precision)
    return model


def _given(name: str, learn, learned: set, output_noise: str, **given) -> bool:
    """Check that every parameter not learned is given and the output noise's kind; True for a
    full output precision."""
    for what in LEARNABLE:
        if what not in learned and given[what] is None:
            raise vmp.GraphError(f"{name}: '{what}' is not learned (learn={learn!r}); give its value")
    if output_noise not in ("diagonal", "full"):
        raise vmp.OptionError(f"{name}: output_noise takes 'diagonal' or 'full', got {output_noise!r}")
    return output_noise == "full"


def _observe(data, seen, weights, c, x, precision, full: bool) -> None:
    """"y": one Gaussian per step over the outputs (``C @ x``, a full precision R), or one Normal
    per step and output (``vmp.dot(C, x)``, precisions tau_m)."""
    if full:
        vmp.Gaussian("y", c @ x, precision, observed=data, mask=seen, weights=None if weights is None
                     else weights[..., 0])
        return
    with vmp.Plate("outputs", data.shape[-1]):
        vmp.Normal("y", vmp.dot(c, x), precision, observed=data, mask=seen, weights=weights)


def _learned(name: str, learn) -> set:
    if learn is True:
        return set(LEARNABLE)
    if learn is False:
        return set()
    learned = {learn} if isinstance(learn, str) else set(learn)
    unknown = learned - set(LEARNABLE)
    if unknown:
        raise vmp.GraphError(f"{name}: learn takes True, False or some of {LEARNABLE}, got {sorted(unknown)}")
    return learned


def switching_lds(Y, n_regimes: int, state_dim: int, *, stay: float = 10.0, window: int = 10,
                  name: str = "switching_lds") -> vmp.Model:
    """The switching linear dynamical system (Ghahramani & Hinton 2000): a regime chain s selects
    the dynamics and the innovation precisions of each step,

        s ~ MarkovChain(pi0, Pi),  pi0 ~ Dir(1),  Pi_k ~ Dir(1 + stay e_k),
        x_{t+1} = A^(s_t) x_t + w_t,  w_t ~ N(0, diag(nu^(s_t))^-1),
        y_tm ~ N(c_m . x_t, 1/tau_m),

    with a^(k)_i ~ N(0, I) and nu^(k)_i ~ Gamma(1, 1) per regime k and state dimension i, and C,
    gamma and tau as in ``linear_dynamical_system``; q(s) q(x) is structured: q(s) by
    forward-backward, q(x) by the smoother. ``stay`` adds prior weight to staying in a regime.
    Nodes: ``s``, ``pi0``, ``Pi`` (plate "regimes"), ``A``, ``nu`` (plates "states", "regimes"),
    ``x``, ``C``, ``gamma``, ``tau``, ``y``.
    """
    k = _checks.count(name, "n_regimes", n_regimes, minimum=2)
    d = _checks.count(name, "state_dim", state_dim)
    _checks.positive(name, stay=stay) if stay else None
    data, seen, lengths, weights = _series(name, Y, vector=True)
    m = data.shape[-1]
    _, var = _scale(data, seen)
    with vmp.Model(name) as model:
        pi0 = vmp.Dirichlet("pi0", np.ones(k))
        with vmp.Plate("regimes", k):
            switch = vmp.Dirichlet("Pi", np.ones(k) + stay * np.eye(k))
        with vmp.Plate("states", d), vmp.Plate("regimes", k):
            a = vmp.Gaussian("A", np.zeros(d), np.eye(d))
            nu = vmp.Gamma("nu", 1.0, 1.0)
        with vmp.Plate("state_dims", d):
            gamma = vmp.Gamma("gamma", 1e-3, 1e-5 * var / d)
        with vmp.Plate("outputs", m):
            c = vmp.Gaussian("C", np.zeros(d), gamma)
            tau = vmp.Gamma("tau", 1.0, 0.1 * var)
        with vmp.Plate("sequences", data.shape[0]), vmp.Plate("time", data.shape[1]):
            s = vmp.CategoricalMarkovChain("s", pi0, switch, lengths=lengths)
            x = vmp.GaussianMarkovChain("x", np.zeros(d), 0.01 / var * np.eye(d), a[s], nu[s], lengths=lengths)
            with vmp.Plate("outputs", m):
                vmp.Normal("y", vmp.dot(c, x), tau, observed=data, mask=seen, weights=weights)
    loadings, scores, precision = _principal(data, seen, d)
    regimes = _regimes(scores, lengths, k, window)
    dynamics, noise = _dynamics(scores, lengths, regimes)
    model.start = {"C": loadings, "x": scores, "tau": np.full(m, precision), "s": regimes, "A": dynamics,
                   "nu": noise}
    return model
