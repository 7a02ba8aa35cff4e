"""A Gaussian Markov chain x_0 .. x_{T-1} (x_t in R^D) as one exponential family.

    log q(x) = sum_t [<h_t, x_t> + <J_t, x_t x_t^T>]
               + sum_{t < T-1} [<K_t, x_t x_{t+1}^T> + <g_t, x_{t+1}> + <L_t, x_{t+1} x_{t+1}^T>] - A(eta)

Sufficient statistics u = (x_t, x_t x_t^T, x_t x_{t+1}^T, x_{t+1}, x_{t+1} x_{t+1}^T), natural
parameters eta = (h, J, K, g, L), each shaped ``plates + (T, ...)`` with the time axis the last
plate; the last three are zero statistics at t = T-1 (there is no x_T). The two "next" components
repeat x_{t+1} at step t so that a factor over the pair (x_t, x_{t+1}) (a transition) is a sum of
terms over the steps t, multilinear in the moments at t (the representation is overcomplete:
eta and eta' with the same sums below are one q). The chain's precision is block-tridiagonal,

    Lambda_tt = -2 sym(J_t + L_{t-1}),   Lambda_{t,t+1} = -K_t,   linear term b_t = h_t + g_{t-1},

and the moments (E[x_t], E[x_t x_t^T], E[x_t x_{t+1}^T] and their shifts) are the smoothed
marginals (Beal 2003 ch. 5; BayesPy's GaussianMarkovChain), computed by block cyclic reduction
in ``_cyclic.py`` in O(T D^3) work and O(log T) vectorized steps over all chains (the filter is
the sequential forward pass in ``_kalman.py``). A = 1/2 b^T Lambda^-1 b
- 1/2 log|Lambda| + TD/2 log 2 pi is reported per step (the terms of each step's pivot), as is
the entropy 1/2 log|2 pi e Lambda^-1| = sum_t [D/2 (1 + log 2 pi) - 1/2 log|P_t|].
"""
from __future__ import annotations

import numpy as np

from . import constraints
from ._cyclic import reduce
from ._kalman import forward
from ._linalg import mark_symmetric, symmetric_part, sym
from .base import Arrays, Family
from .gaussian import Gaussian

#: the last few solved chains, by the identity of their natural-parameter arrays (read-only while
#: kept): an update's moments, validity check and entropy read one smoother pass
_SOLVED: list = []
SOLVED_KEPT = 2


def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def canonical(natural: Arrays) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
    """(Lambda_tt (T, S, D, D), K_t (T-1, S, D, D), b (T, S, D), plates): the blocks of the chain's
    precision and its linear term, time-major over S chains."""
    h, j, k, g, l_next = (np.asarray(a, float) for a in natural)
    plates = np.broadcast_shapes(h.shape[:-1], j.shape[:-2], k.shape[:-2], g.shape[:-1], l_next.shape[:-2])
    steps, d = plates[-1], h.shape[-1]
    chains = plates[:-1]

    def lay(a, event):
        return np.moveaxis(np.broadcast_to(a, plates + event).reshape((-1, steps) + event), 1, 0)

    b = lay(h, (d,)).copy()
    b[1:] += lay(g, (d,))[:-1]
    prec = lay(j, (d, d)) + _t(lay(j, (d, d)))
    jn = lay(l_next, (d, d))
    prec[1:] += jn[:-1] + _t(jn[:-1])
    prec *= -1.0
    return prec, lay(k, (d, d))[:-1], b, chains


class _Solved:
    """One smoother pass over a chain's natural parameters (``_solve``)."""

    def __init__(self, natural: Arrays):
        prec, coupling, b, self.chains = canonical(natural)
        self.steps, self.d = b.shape[0], b.shape[-1]
        self.reduction = reduce(prec, coupling, b)
        self.smoothed = self.reduction.smoothed

    def lay(self, a: np.ndarray) -> np.ndarray:
        """(T, S, ...) -> chains + (T, ...)."""
        return np.moveaxis(a, 0, 1).reshape(self.chains + (self.steps,) + a.shape[2:])

    def per_step(self, a: np.ndarray) -> np.ndarray:
        """(T, S) -> chains + (T,)."""
        return a.T.reshape(self.chains + (self.steps,))

    def parameters(self) -> dict[str, np.ndarray]:
        cross = np.zeros((self.steps,) + self.smoothed.covariance.shape[1:])
        cross[:-1] = self.smoothed.cross
        return {"mean": self.lay(self.smoothed.mean), "covariance": self.lay(self.smoothed.covariance),
                "cross_covariance": self.lay(cross)}

    def moments(self) -> Arrays:
        """(E[x_t], E[x_t x_t^T], E[x_t x_{t+1}^T], E[x_{t+1}], E[x_{t+1} x_{t+1}^T]), C-contiguous."""
        sm = self.smoothed
        mu = sm.mean
        second = sm.covariance + mu[..., :, None] * mu[..., None, :]
        pair = np.zeros(second.shape)
        pair[:-1] = sm.cross + mu[:-1, :, :, None] * mu[1:, :, None, :]
        ahead, ahead2 = np.zeros(mu.shape), np.zeros(second.shape)
        ahead[:-1], ahead2[:-1] = mu[1:], second[1:]
        return tuple(np.ascontiguousarray(self.lay(a)) for a in (mu, second, pair, ahead, ahead2))


def _solve(natural: Arrays) -> _Solved:
    """The smoother pass of ``natural``, kept for the last SOLVED_KEPT tuples of arrays that own
    their data (made read-only while kept, so that they cannot change unseen)."""
    arrays = tuple(natural)
    for held, solved in _SOLVED:
        if len(held) == len(arrays) and all(a is b for a, b in zip(held, arrays)):
            return solved
    solved = _Solved(arrays)
    if all(isinstance(a, np.ndarray) and a.flags.owndata for a in arrays):
        for a in arrays:
            a.flags.writeable = False
        _SOLVED.insert(0, (arrays, solved))
        del _SOLVED[SOLVED_KEPT:]
    return solved


def directed(mean0: np.ndarray, precision0: np.ndarray, transition: np.ndarray, offset: np.ndarray,
             noise: np.ndarray) -> Arrays:
    """eta of the directed chain x_0 ~ N(m_0, P_0^-1), x_{t+1} | x_t ~ N(A_t x_t + c_t, Q_t^-1)
    (A_t, c_t, Q_t given for every t; those at T-1 are not read):

        h_0 += P_0 m_0,  J_0 += -P_0 / 2,  and for t < T-1:
        K_t = A_t^T Q_t,  J_t += -A_t^T Q_t A_t / 2,  h_t += -A_t^T Q_t c_t,  g_t = Q_t c_t,  L_t = -Q_t / 2.
    """
    m0, p0, a, c, q = (np.asarray(v, float) for v in (mean0, precision0, transition, offset, noise))
    plates = np.broadcast_shapes(m0.shape[:-1] + (1,), p0.shape[:-2] + (1,), a.shape[:-2], c.shape[:-1],
                                 q.shape[:-2])
    d = m0.shape[-1]
    a, c, q = (np.broadcast_to(v, plates + e) for v, e in ((a, (d, d)), (c, (d,)), (q, (d, d))))
    at_q = _t(a) @ q
    h, j = np.zeros(plates + (d,)), np.zeros(plates + (d, d))
    k, g, l_next = np.zeros(plates + (d, d)), np.zeros(plates + (d,)), np.zeros(plates + (d, d))
    h[..., 0, :] = np.einsum("...ij,...j->...i", p0, m0)
    j[..., 0, :, :] = -0.5 * p0
    k[..., :-1, :, :] = at_q[..., :-1, :, :]
    j[..., :-1, :, :] -= 0.5 * sym(at_q @ a)[..., :-1, :, :]
    qc = np.einsum("...ij,...j->...i", q, c)
    h[..., :-1, :] -= np.einsum("...ji,...j->...i", a, qc)[..., :-1, :]
    g[..., :-1, :] = qc[..., :-1, :]
    l_next[..., :-1, :, :] = -0.5 * q[..., :-1, :, :]
    return h, j, k, g, l_next


def conditionals(mean: np.ndarray, covariance: np.ndarray, cross: np.ndarray) -> tuple:
    """The chain with these marginals as a directed one: (m_0, Sigma_0, A_t, c_t, Sigma_{t+1|t})
    with A_t = Cov(x_{t+1}, x_t) Sigma_t^-1, c_t = mu_{t+1} - A_t mu_t and
    Sigma_{t+1|t} = Sigma_{t+1} - A_t Cov(x_t, x_{t+1}) (the last step's A, c, Sigma are padding)."""
    mean, covariance, cross = (np.asarray(v, float) for v in (mean, covariance, cross))
    a = np.zeros(covariance.shape)
    a[..., :-1, :, :] = np.swapaxes(np.linalg.solve(covariance[..., :-1, :, :], cross[..., :-1, :, :]), -1, -2)
    c = np.zeros(mean.shape)
    c[..., :-1, :] = mean[..., 1:, :] - np.einsum("...ij,...j->...i", a[..., :-1, :, :], mean[..., :-1, :])
    cond = np.broadcast_to(np.eye(mean.shape[-1]), covariance.shape).copy()
    cond[..., :-1, :, :] = sym(covariance[..., 1:, :, :] - a[..., :-1, :, :] @ cross[..., :-1, :, :])
    return mean[..., 0, :], covariance[..., 0, :, :], a, c, cond


class GaussianMarkovChain(Family):
    name = "GaussianMarkovChain"
    event_ndims = (1, 2, 2, 1, 2)
    support = constraints.real_vector
    #: the smoothed marginals: means, covariances and Cov(x_t, x_{t+1}) (zero at T-1)
    arg_constraints = {"mean": constraints.real_vector, "covariance": constraints.positive_definite,
                       "cross_covariance": constraints.real}
    joint_plates = 1
    step_family = Gaussian
    example_event = (2,)

    @staticmethod
    def natural_from(mean: np.ndarray, covariance: np.ndarray, cross_covariance: np.ndarray) -> Arrays:
        """The chain with these marginals and cross-covariances: q(x_0) prod_t q(x_{t+1} | x_t),
        each conditional read from the pair's marginal (``conditionals``, then ``directed``)."""
        m0, s0, a, c, cond = conditionals(mean, covariance, cross_covariance)
        return directed(m0, np.linalg.inv(s0), a, c, np.linalg.inv(cond))

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        return _solve(natural).parameters()

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        return _solve(natural).moments()

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """Per step t its pivot's 1/2 b_t^T P_t^-1 b_t - 1/2 log|P_t| + D/2 log 2 pi
        (``_cyclic.Reduction``); their sum over t is A(eta)."""
        solved = _solve(natural)
        return solved.per_step(solved.reduction.log_normalizer())

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """Per step D/2 (1 + log 2 pi) - 1/2 log|P_t| (its pivot): their sum is
        1/2 log|2 pi e Lambda^-1|."""
        solved = _solve(natural)
        return solved.per_step(solved.reduction.entropy())

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """Finite natural parameters and a positive-definite precision (every pivot of the
        reduction); a chain is valid or not as a whole (repeated at each step)."""
        arrays = [np.asarray(a, float) for a in natural]
        plates = np.broadcast_shapes(*(a.shape[:a.ndim - n] for a, n in zip(arrays, cls.event_ndims)))
        ok = np.ones(plates[:-1], bool)
        for a, n in zip(arrays, cls.event_ndims):
            ok &= np.broadcast_to(np.isfinite(a).reshape(a.shape[:a.ndim - n - 1] + (-1,)).all(-1), plates[:-1])
        if ok.any():
            d = arrays[0].shape[-1]
            stand_in = (0.0, -0.5 * np.eye(d), 0.0, 0.0, 0.0)  # a valid chain where one is not finite
            safe = tuple(a if ok.all() else np.where(ok.reshape(ok.shape + (1,) * (1 + n)), a, s)
                         for a, n, s in zip(arrays, cls.event_ndims, stand_in))
            with np.errstate(all="ignore"):
                ok &= _solve(safe).reduction.ok.reshape(plates[:-1])
        return np.broadcast_to(ok[..., None], plates).copy()

    @classmethod
    def filtered(cls, natural: Arrays, departure: Arrays) -> tuple[np.ndarray, np.ndarray]:
        """The filtered marginals q(x_t | potentials of the steps up to t): means (..., T, D) and
        covariances (..., T, D, D), from the forward pass of eta (``_kalman.forward``: D_t and
        b~_t) less each step's potentials of the transition out of it, ``departure`` (its
        contributions to h_t and J_t): precision D_t + 2 sym(J_dep,t), linear term b~_t - h_dep,t."""
        prec, coupling, b, chains = canonical(natural)
        schur, tilde = forward(prec, coupling, b)
        steps, d = b.shape[0], b.shape[-1]

        def lay(a, event):
            return np.moveaxis(np.broadcast_to(a, chains + (steps,) + event).reshape((-1, steps) + event), 1, 0)

        info = schur + 2.0 * sym(lay(departure[1], (d, d)))
        cov = sym(np.linalg.inv(info))
        mean = np.einsum("tsij,tsj->tsi", cov, tilde - lay(departure[0], (d,)))
        back = (lambda a: np.moveaxis(a, 0, 1).reshape(chains + (steps,) + a.shape[2:]))
        return back(mean), back(cov)

    @classmethod
    def symmetrize(cls, message: Arrays, exact: frozenset = frozenset()) -> Arrays:
        """The symmetric parts of the x_t x_t^T and x_{t+1} x_{t+1}^T components; the pair
        component x_t x_{t+1}^T is not symmetric and stays as it is."""
        return tuple(m if i in exact or i not in (1, 4) else symmetric_part(m) for i, m in enumerate(message))

    @classmethod
    def summed_symmetric(cls, total: Arrays) -> Arrays:
        return tuple(mark_symmetric(m) if i in (1, 4) else m for i, m in enumerate(total))

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...] = ()) -> Arrays:
        """u of paths x (..., T, D), the components that read x_{t+1} zero at T-1."""
        x = np.asarray(x, float)
        outer = x[..., :, None] * x[..., None, :]
        pair, ahead, ahead2 = np.zeros(outer.shape), np.zeros(x.shape), np.zeros(outer.shape)
        pair[..., :-1, :, :] = x[..., :-1, :, None] * x[..., 1:, None, :]
        ahead[..., :-1, :] = x[..., 1:, :]
        ahead2[..., :-1, :, :] = outer[..., 1:, :, :]
        return x, outer, pair, ahead, ahead2

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Paths size + plates + (D,) drawn forward from q(x_0) prod_t q(x_{t+1} | x_t)
        (``conditionals`` of the smoothed marginals). Leading axes along which every natural
        parameter is broadcast (stride 0: copies of one chain) are solved once."""
        natural, copies = _strip_copies(natural)
        p = cls.parameters(natural)
        m0, s0, a, c, cond = conditionals(p["mean"], p["covariance"], p["cross_covariance"])
        shape = tuple(size) + copies + p["mean"].shape
        z = rng.standard_normal(shape)
        root0, root = np.linalg.cholesky(s0), np.linalg.cholesky(cond)
        x = np.empty(shape)
        x[..., 0, :] = m0 + np.einsum("...ij,...j->...i", root0, z[..., 0, :])
        for t in range(1, shape[-2]):
            x[..., t, :] = (np.einsum("...ij,...j->...i", a[..., t - 1, :, :], x[..., t - 1, :]) + c[..., t - 1, :]
                            + np.einsum("...ij,...j->...i", root[..., t - 1, :, :], z[..., t, :]))
        return x

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """The chain as one multivariate normal over its T D values (``scipy.stats.multivariate_normal``
        for one chain, ``Flattened`` over plates of chains)."""
        from scipy import stats  # when asked for: scipy.stats is slow to import

        mean, cov = dense(natural)
        if mean.ndim == 2:
            return stats.multivariate_normal(mean.reshape(-1), cov)
        return Flattened(mean, cov)

    #: elementwise marginals x_td ~ N(mu_td, Sigma_t,dd), for credible intervals: the Gaussian's
    #: formula on the chain's smoothed ``parameters``
    marginal = vars(Gaussian)["marginal"]

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        """A directed chain with random A_t, offsets, initial mean and well-conditioned
        precisions; plate_shape ends with the time axis."""
        d = event_shape[0]
        plates = tuple(plate_shape)

        def pd(shape):
            w = rng.normal(size=shape + (d, d))
            return w @ _t(w) / d + np.eye(d)

        return directed(rng.normal(size=plates[:-1] + (d,)), pd(plates[:-1]),
                        0.7 * rng.normal(size=plates + (d, d)) / np.sqrt(d), rng.normal(size=plates + (d,)),
                        pd(plates))

    @classmethod
    def example(cls) -> Arrays:
        """Three chains of T = 4 steps (plates (3, 4))."""
        return cls.random_natural(np.random.default_rng(0), (3, 4), cls.example_event)

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """The same precision with E[x] = ``mean``: the linear term b = Lambda m, laid into h
        (g set to zero)."""
        prec, coupling, _, chains = canonical(natural)
        steps, d = prec.shape[0], prec.shape[-1]
        m = np.moveaxis(np.broadcast_to(mean, chains + (steps, d)).reshape((-1, steps, d)), 1, 0)
        b = np.einsum("tsij,tsj->tsi", prec, m)
        b[:-1] -= np.einsum("tsij,tsj->tsi", coupling, m[1:])
        b[1:] -= np.einsum("tsji,tsj->tsi", coupling, m[:-1])
        h = np.moveaxis(b, 0, 1).reshape(chains + (steps, d))
        return (h, natural[1], natural[2], np.zeros(np.shape(natural[3])), natural[4])

    @classmethod
    def start_at(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """Independent steps N(m_t, v I) held tight around the path m (v: 1e-3 of its variance
        over steps, 1e-6 for a constant path): the parameters' first updates read the path, not
        a prior's spread around it."""
        m = np.broadcast_to(np.asarray(mean, float), np.shape(natural[0]))
        var = 1e-3 * float(np.var(m)) or 1e-6
        d = m.shape[-1]
        zeros = np.zeros(np.shape(natural[1]))
        precision = np.broadcast_to(np.eye(d) / var, zeros.shape)
        return m / var, -0.5 * precision, zeros, np.zeros(m.shape), zeros.copy()

    @classmethod
    def perturb(cls, natural: Arrays, rng: np.random.Generator, concentration: float = 100.0) -> Arrays:
        """The mean moved to a draw from q itself."""
        return cls.with_mean(natural, cls.sample(natural, rng))


def _strip_copies(natural: Arrays) -> tuple[Arrays, tuple[int, ...]]:
    """The natural parameters without the leading axes along which all of them are broadcast
    (stride 0), and those axes' sizes."""
    arrays = [np.asarray(a) for a in natural]
    lead = 0
    while all(a.ndim > lead + 2 and a.strides[lead] == 0 for a in arrays) and arrays[0].ndim - lead > 3:
        lead += 1
    return tuple(a[(0,) * lead] for a in arrays), arrays[0].shape[:lead]


def dense(natural: Arrays) -> tuple[np.ndarray, np.ndarray]:
    """(mean (chains..., T, D), covariance (chains..., T D, T D)): the chain's precision formed
    whole and inverted (a reference for small T)."""
    prec, coupling, b, chains = canonical(natural)
    steps, n, d = b.shape
    full = np.zeros((n, steps * d, steps * d))
    for t in range(steps):
        full[:, t * d:(t + 1) * d, t * d:(t + 1) * d] = prec[t]
        if t < steps - 1:
            full[:, t * d:(t + 1) * d, (t + 1) * d:(t + 2) * d] = -coupling[t]
            full[:, (t + 1) * d:(t + 2) * d, t * d:(t + 1) * d] = -_t(coupling[t])
    cov = sym(np.linalg.inv(full))
    mean = np.einsum("sij,sj->si", cov, np.moveaxis(b, 0, 1).reshape(n, -1))
    return mean.reshape(chains + (steps, d)), cov.reshape(chains + cov.shape[1:])


class Flattened:
    """A plate of chains as multivariate normals over their T D values: ``entropy()``,
    ``logpdf(x)`` for paths x (..., T, D) and ``mean`` (..., T, D), per chain."""

    def __init__(self, mean: np.ndarray, cov: np.ndarray):
        self.mean, self.cov = mean, cov

    def entropy(self) -> np.ndarray:
        n = self.cov.shape[-1]
        return 0.5 * (n * (1.0 + np.log(2 * np.pi)) + np.linalg.slogdet(self.cov)[1])

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        r = (np.asarray(x, float) - self.mean).reshape(np.shape(x)[:-2] + (-1,))
        n = r.shape[-1]
        quad = np.einsum("...i,...i->...", r, np.linalg.solve(self.cov, r[..., None])[..., 0])
        return -0.5 * (quad + n * np.log(2 * np.pi) + np.linalg.slogdet(self.cov)[1])
