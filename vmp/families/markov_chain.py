"""A Markov chain of K-state categorical variables z_0 .. z_{T-1}, as one exponential family.

    log q(z) = sum_t <U_t, z_t> + sum_{t < T-1} z_t^T P_t z_{t+1} - A(U, P)

Sufficient statistics u = (z_t one-hot, z_t z_{t+1}^T), natural parameters eta = (U, P): unary
log-potentials (T, K) and pairwise log-potentials (T, K, K); P_{T-1} couples nothing, and its
statistic is zero. The moments are the marginals and pair marginals, E[u] = dA/d eta, computed by
the forward-backward recursions (Rabiner 1989 eqs. (19)-(27); Beal 2003 section 3.3), scaled in
probability space (Rabiner eqs. (91)-(93)), in log space for the chains where that underflows.
The time axis is the last plate axis, so arrays are shaped ``plates + (T, K)`` and
``plates + (T, K, K)``; every recursion step is one array operation over all leading plates (many
sequences) and all states.

The log-normalizer A = log Z of a whole chain is reported at t = 0 and 0 at the other steps, so
that sums over the plates (the bound, the entropy H = A - <eta, E[u]>) are per-chain sums.
"""
from __future__ import annotations

import numpy as np

from . import constraints
from ._chain_paths import Paths
from .base import Arrays, Family


#: the least unnormalized forward or backward value (2^-980, 2^42 times the smallest normal float)
#: trusted in probability space: a product or sum of K terms loses at most about K * 2^-1074 to
#: gradual underflow, K * 2^-94 of it; a chain with a smaller value is recomputed in log space
_FLOOR = 2.0 ** -980
#: a potential this far below its step's maximum is a log 0 (``IMPOSSIBLE`` = -1e100, -inf): its
#: exp is an exact 0, so a state or transition behind only such entries is exactly impossible
_LOG_ZERO = -1e99


def forward_backward(unary: np.ndarray, pairwise: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(marginals (..., T, K), pair marginals (..., T, K, K), log Z (...)).

    The scaled recursions in probability space (Rabiner 1989 eqs. (91)-(93); Bishop 2006
    section 13.2.4), on e_t = exp(U_t - mu_t) and E_t = exp(P_t - s_t) with mu_t, s_t the
    maxima of the step (all steps at once, before the loops):

        a_0 = e_0 / c_0,   a_t = (a_{t-1} E_{t-1}) o e_t / c_t,   c_t the sum that normalizes a_t,
        b_{T-1} = 1,       b_t = E_t (e_{t+1} o b_{t+1}) / d_t,   d_t the sum that normalizes b_t,
        log Z = sum_t (log c_t + mu_t) + sum_{t < T-1} s_t,
        q(z_t) = a_t o b_t / n_t,   n_t = <a_t, b_t>,
        q(z_t = j, z_{t+1} = k) = a_t(j) E_t(j, k) e_{t+1}(k) b_{t+1}(k) / (d_t n_t),

    each step one matrix product over all chains (a plain 2-D product when every chain has the
    same pairwise potentials), a product and a normalization. A chain is recomputed by the
    log-space recursions (``_log_forward_backward``, Rabiner eqs. (19)-(27) by log-sum-exp) where
    probability space could lose accuracy: an unnormalized value below ``_FLOOR`` (an underflow,
    or potentials that differ by more than ~680 nats), a zero where a possible state or path
    leads, or n_t below ``_FLOOR``. In the other chains every forward and backward value keeps
    its relative accuracy (sums of products of positive numbers, nothing lost to underflow).
    """
    u, p, plates = _chains(unary, pairwise)
    marginals, pairs, log_z, bad = _scaled(u, p)
    if bad.any():
        marginals[bad], pairs[bad], log_z[bad] = _log_forward_backward(u[bad], p[bad])
    t_len, k = u.shape[1:]
    return (marginals.reshape(plates + (t_len, k)), pairs.reshape(plates + (t_len, k, k)),
            log_z.reshape(plates))


def chain_log_normalizer(unary: np.ndarray, pairwise: np.ndarray) -> np.ndarray:
    """log Z (...) by the forward recursion of ``forward_backward`` alone (Rabiner 1989 eq. (93):
    log Z = sum_t log c_t, plus the shifts), with its checks and log-space fallback."""
    u, p, plates = _chains(unary, pairwise)
    steps = _Steps(u, p)
    a, c = steps.forward()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_z = steps.log_z(c)
        bad = _unsure(a, c)
    if not bad.all():
        bad |= steps.lost_forward(a)
    if bad.any():
        log_z[bad] = _log_forward_backward(u[bad], p[bad])[2]
    return log_z.reshape(plates)


def _scaled(u: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``forward_backward`` in probability space on chains (S, T, K), (S, T, K, K), and the
    chains (S,) to recompute in log space."""
    steps = _Steps(u, p)
    a, c = steps.forward()
    b, d = steps.backward()
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        marginals, pairs, n = steps.moments(a, b, d)
        log_z = steps.log_z(c)
        bad = _unsure(a, c) | _unsure(b, d) | ~(n >= _FLOOR).all(0)
    if not bad.all():
        bad |= steps.lost_forward(a) | steps.lost_backward(b)
    return marginals, pairs, log_z, bad


def _chains(unary: np.ndarray, pairwise: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The potentials as chains (S, T, K) and (S, T, K, K), and the plates they came in."""
    plates = np.broadcast_shapes(unary.shape[:-2], pairwise.shape[:-3])
    t_len, k = unary.shape[-2:]
    u = np.broadcast_to(unary, plates + (t_len, k)).reshape(-1, t_len, k)
    return u, np.broadcast_to(pairwise, plates + (t_len, k, k)).reshape(-1, t_len, k, k), plates


class _Steps:
    """The exponentiated potentials of S chains, time-major: e (T, S, K) = exp(U_t - mu_t) and
    E (T-1, K, K) = exp(P_t - s_t) when every chain has the same pairwise potentials (the
    products are then plain 2-D ones), else E (T-1, S, K, K)."""

    def __init__(self, u: np.ndarray, p: np.ndarray):
        n_chains, t_len, k = u.shape
        self.u, self.mu = u, _finite(u.max(-1))  # (S, T)
        self.e = np.exp(np.subtract(u.transpose(1, 0, 2), self.mu.T[..., None], out=np.empty((t_len, n_chains, k))))
        shared = _shared(p)
        self.shared = shared is not None
        self.p = p[:, :-1].transpose(1, 0, 2, 3) if shared is None else shared  # (T-1, [S,] K, K)
        self.s = _finite(self.p.max((-2, -1)))
        big = np.subtract(self.p, self.s[..., None, None], out=np.empty(self.p.shape))
        self.big_e = np.exp(big, out=big)
        self.product = np.dot if self.shared else _batched
        self.ones = np.ones(k)

    def forward(self) -> tuple[np.ndarray, np.ndarray]:
        """a (T, S, K) and c (T, S): a_t = (a_{t-1} E_{t-1}) o e_t / c_t."""
        e, big_e, ones = self.e, self.big_e, self.ones
        a, c = np.empty(e.shape), np.empty(e.shape[:2])
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            a[0] = e[0]
            np.dot(a[0], ones, out=c[0])
            a[0] /= c[0][:, None]
            for t in range(1, len(e)):
                self.product(a[t - 1], big_e[t - 1], a[t])
                a[t] *= e[t]
                np.dot(a[t], ones, out=c[t])
                a[t] /= c[t][:, None]
        return a, c

    def backward(self) -> tuple[np.ndarray, np.ndarray]:
        """b (T, S, K) and d (T, S): b_t = E_t (e_{t+1} o b_{t+1}) / d_t, b_{T-1} = 1, d_{T-1} = 1."""
        e, big_e, ones = self.e, self.big_e, self.ones
        b, d = np.empty(e.shape), np.ones(e.shape[:2])
        b[-1] = 1.0
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            for t in range(len(e) - 2, -1, -1):
                self.product(e[t + 1] * b[t + 1], _transposed(big_e[t]), b[t])
                np.dot(b[t], ones, out=d[t])
                b[t] /= d[t][:, None]
        return b, d

    def moments(self, a: np.ndarray, b: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q(z_t) (S, T, K), q(z_t, z_{t+1}) (S, T, K, K) (zero at T-1) and n_t (T, S)."""
        n = np.einsum("tsk,tsk->ts", a, b)
        a_n = np.divide(a, n[..., None]).transpose(1, 0, 2)
        marginals = a_n * b.transpose(1, 0, 2)
        pairs = np.empty(a_n.shape + a_n.shape[-1:])
        pairs[:, -1] = 0.0
        if len(a) > 1:
            g = (self.e[1:] * b[1:] / d[:-1, :, None]).transpose(1, 0, 2)
            np.multiply(a_n[:, :-1, :, None], self.big_e if self.shared else self.big_e.transpose(1, 0, 2, 3),
                        out=pairs[:, :-1])
            pairs[:, :-1] *= g[:, :, None, :]
        return marginals, pairs, n

    def log_z(self, c: np.ndarray) -> np.ndarray:
        """log Z = sum_t (log c_t + mu_t) + sum_{t < T-1} s_t, per chain."""
        return self.mu.sum(-1) + np.log(c).sum(0) + (self.s.sum() if self.shared else self.s.sum(0))

    def _possible(self) -> tuple[np.ndarray, np.ndarray]:
        """Whether each state (T, S, K) and transition (T-1, S or 1, K, K) is not a log 0."""
        state = (self.u - self.mu[..., None] > _LOG_ZERO).transpose(1, 0, 2)
        step = (self.p - self.s[..., None, None] > _LOG_ZERO).astype(float)
        return state, step if step.ndim == 4 else step[:, None]

    def lost_forward(self, a: np.ndarray) -> np.ndarray:
        """The chains (S,) with a_t(k) = 0 where state k is possible and a state with a_{t-1} > 0
        leads to it: the zero came from underflow."""
        zero = a == 0
        if not zero.any():
            return np.zeros(a.shape[1], bool)
        state, step = self._possible()
        reach = state.copy()
        reach[1:] &= np.matmul((a[:-1] > 0)[..., None, :].astype(float), step)[..., 0, :] > 0
        return (zero & reach).any((0, 2))

    def lost_backward(self, b: np.ndarray) -> np.ndarray:
        """The chains (S,) with b_t(j) = 0 where j leads to a possible state with b_{t+1} > 0."""
        zero = b == 0
        if not zero.any():
            return np.zeros(b.shape[1], bool)
        state, step = self._possible()
        ahead = ((b[1:] > 0) & state[1:]).astype(float)
        return (zero[:-1] & (np.matmul(step, ahead[..., None])[..., 0] > 0)).any((0, 2))


def _batched(x: np.ndarray, m: np.ndarray, out: np.ndarray) -> None:
    """out = x m chain by chain: (S, K) times (S, K, K)."""
    np.matmul(x[:, None, :], m, out=out[:, None, :])


def _transposed(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def _shared(p: np.ndarray) -> np.ndarray | None:
    """The pairwise potentials P_t (T-1, K, K) when every chain has the same, else None."""
    head = p[0, :-1]
    if p.shape[0] > 1 and not ((p[-1, :-1] == head).all() and (p[:, :-1] == head).all()):
        return None
    return head


def _unsure(x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The chains (S,) with an unnormalized value x * scale in (0, _FLOOR), or a normalizer that
    is not positive and finite (x (T, S, K) normalized by scale (T, S)): NaN and inf come from
    the normalizers."""
    bad = ~((scale > 0) & (scale < np.inf))
    low = x < (_FLOOR / scale)[..., None]
    if low.any():
        bad |= (low & (x != 0)).any(-1)
    return bad.any(0)


def _logsumexp(v: np.ndarray, axis: int) -> np.ndarray:
    """log sum exp over ``axis`` (removed), shifted by the maximum; all -inf gives -inf."""
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(v - m), axis=axis)) + np.squeeze(m, axis)


def _finite(m: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(m), m, 0.0)


def _log_matvec(log_v: np.ndarray, exp_p: np.ndarray, shift: np.ndarray, subscripts: str, exact) -> np.ndarray:
    """log sum_j exp(log_v_j + P_jk) as exp(log_v - max) contracted with exp(P - shift), plus
    the shifts: K^2 multiply-adds instead of K^2 exps per chain. Entries whose sum is below the
    smallest normal float (an underflow, or an impossible state) are recomputed by ``exact()``,
    the log-sum-exp of every term."""
    m = _finite(np.max(log_v, axis=-1, keepdims=True))
    total = np.einsum(subscripts, np.exp(log_v - m), exp_p)
    low = total < np.finfo(float).tiny
    with np.errstate(divide="ignore"):
        out = np.log(total) + m + shift
    return np.where(low, exact(), out) if low.any() else out


def _log_forward_backward(unary: np.ndarray, pairwise: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``forward_backward`` in log space, for the chains where probability space underflows,
    normalized at every step (the log form of Rabiner 1989 eqs. (91)-(93)):

    log c_t = logsumexp_k r_t(k),  r_t(k) = U_t(k) + logsumexp_j [log a_{t-1}(j) + P_{t-1}(j, k)],
    log a_t = r_t - log c_t  (r_0 = U_0),
    log b_t(j) = logsumexp_k [P_t(j, k) + U_{t+1}(k) + log b_{t+1}(k)] - log d_t,  log b_{T-1} = 0,
    log Z = sum_t log c_t,
    q(z_t) proportional to a_t b_t, q(z_t, z_{t+1}) proportional to
    a_t(j) exp(P_t(j, k) + U_{t+1}(k)) b_{t+1}(k), each normalized over its own states.

    Every stored value is a log probability of order one, so no digits are lost to the
    magnitude of log alpha over a long chain. Each log-sum-exp is a shifted matrix-vector
    product (``_log_matvec``), exact where it would underflow.
    """
    t_len = unary.shape[-2]
    col = _finite(pairwise.max(axis=-2, keepdims=True))  # max_j P_t(j, k)
    row = _finite(pairwise.max(axis=-1, keepdims=True))  # max_k P_t(j, k)
    exp_col, exp_row = np.exp(pairwise - col), np.exp(pairwise - row)
    log_a = np.empty_like(unary)
    log_b = np.zeros_like(unary)
    log_c = np.empty(unary.shape[:-1])
    log_c[..., 0] = _logsumexp(unary[..., 0, :], -1)
    log_a[..., 0, :] = unary[..., 0, :] - log_c[..., 0, None]
    for t in range(1, t_len):
        prev, p = log_a[..., t - 1, :], pairwise[..., t - 1, :, :]
        r = unary[..., t, :] + _log_matvec(prev, exp_col[..., t - 1, :, :], col[..., t - 1, 0, :],
                                           "...j,...jk->...k", lambda: _logsumexp(prev[..., :, None] + p, -2))
        log_c[..., t] = _logsumexp(r, -1)
        log_a[..., t, :] = r - log_c[..., t, None]
    for t in range(t_len - 2, -1, -1):
        ahead, p = unary[..., t + 1, :] + log_b[..., t + 1, :], pairwise[..., t, :, :]
        r = _log_matvec(ahead, exp_row[..., t, :, :], row[..., t, :, 0], "...k,...jk->...j",
                        lambda: _logsumexp(p + ahead[..., None, :], -1))
        log_b[..., t, :] = r - _finite(_logsumexp(r, -1))[..., None]
    with np.errstate(invalid="ignore"):
        marginals = _normalized(log_a + log_b, (-1,))
        pairs = np.zeros(pairwise.shape)
        pairs[..., :-1, :, :] = _normalized(log_a[..., :-1, :, None] + pairwise[..., :-1, :, :]
                                            + (unary[..., 1:, :] + log_b[..., 1:, :])[..., None, :], (-2, -1))
    return marginals, pairs, log_c.sum(-1)


def _normalized(log_p: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """exp(log_p) normalized to sum 1 over ``axes``, shifted by the maximum first."""
    m = _finite(np.max(log_p, axis=axes, keepdims=True))
    p = np.exp(log_p - m)
    return p / np.sum(p, axis=axes, keepdims=True)


class CategoricalMarkovChain(Family):
    name = "CategoricalMarkovChain"
    event_ndims = (1, 2)
    support = constraints.nonnegative_integer  # state indices, below K (the event size)
    #: the marginals q(z_t) and the transitions q(z_{t+1} = k | z_t = j), rows in the simplex
    arg_constraints = {"marginals": constraints.simplex, "transitions": constraints.simplex}
    selects = True
    joint_plates = 1
    example_event = (3,)

    @staticmethod
    def natural_from(marginals: np.ndarray, transitions: np.ndarray) -> Arrays:
        """The chain q(z) = m_0(z_0) prod_{t < T-1} R_t(z_t, z_{t+1}): U_0 = log m_0, U_t = 0 for
        t > 0, P_t = log R_t (P_{T-1} = 0). Only m_0 is read: the later marginals follow from the
        transitions (they are the given ones when the two agree, as ``parameters`` returns them)."""
        m, r = np.asarray(marginals, float), np.asarray(transitions, float)
        unary, pairwise = np.zeros(m.shape), np.zeros(r.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            unary[..., 0, :] = np.log(m[..., 0, :])
            pairwise[..., :-1, :, :] = np.log(r[..., :-1, :, :])
        return unary, pairwise

    @classmethod
    def parameters(cls, natural: Arrays) -> dict[str, np.ndarray]:
        """Marginals m_t = q(z_t), pair marginals q(z_t, z_{t+1}) and transitions
        R_t(j, k) = q(z_t = j, z_{t+1} = k) / m_t(j) (uniform rows where m_t(j) = 0 and at t = T-1)."""
        marginals, pairs = cls.moments(natural)
        k = marginals.shape[-1]
        reached = marginals[..., :, None] > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            transitions = np.where(reached, pairs / np.where(reached, marginals[..., :, None], 1.0), 1.0 / k)
        transitions[..., -1, :, :] = 1.0 / k
        return {"marginals": marginals, "transitions": transitions, "pair_marginals": pairs}

    @classmethod
    def moments(cls, natural: Arrays) -> Arrays:
        marginals, pairs, _ = forward_backward(natural[0], natural[1])
        return marginals, pairs

    @classmethod
    def log_normalizer(cls, natural: Arrays) -> np.ndarray:
        """log Z of each chain at t = 0, zero at t > 0 (shape plates + (T,))."""
        log_z = chain_log_normalizer(natural[0], natural[1])
        out = np.zeros(natural[0].shape[:-1])
        out[..., 0] = log_z
        return out

    @classmethod
    def entropy(cls, natural: Arrays, moments: Arrays | None = None) -> np.ndarray:
        """H[q] = A - <eta, E[u]>, which for a chain is sum_t H[q(z_t, z_{t+1})] - sum_{0<t<T-1} H[q(z_t)]
        (Cowell et al. 1999, the entropy of a decomposable model): read from the marginals, with
        no second forward-backward pass. Reported per step (pair t minus marginal t)."""
        marginals, pairs = cls.moments(natural) if moments is None else moments
        h = -_plogp(pairs).sum((-2, -1))
        if marginals.shape[-2] == 1:
            return h - _plogp(marginals).sum(-1)
        h[..., 1:-1] += _plogp(marginals[..., 1:-1, :]).sum(-1)
        return h

    @classmethod
    def inner(cls, natural: Arrays, moments: Arrays) -> np.ndarray:
        """<eta, E[u]> per step, with 0 * (-inf) = 0 (impossible states and transitions)."""
        u, p = (np.multiply(e, m, out=np.zeros(m.shape), where=m > 0) for e, m in zip(natural, moments))
        return u.sum(-1) + p.sum((-2, -1))

    @classmethod
    def symmetrize(cls, message: Arrays, exact: frozenset = frozenset()) -> Arrays:
        """The message as it is: E[z_t z_{t+1}^T] is not symmetric (j -> k is not k -> j)."""
        return tuple(message)

    @classmethod
    def summed_symmetric(cls, total: Arrays) -> Arrays:
        """Nothing to mark (see :meth:`symmetrize`)."""
        return tuple(total)

    @classmethod
    def valid(cls, natural: Arrays) -> np.ndarray:
        """No NaN or +inf, and at least one possible state at every step; a chain is one
        variable, so it is valid or not as a whole (the answer repeated at each of its steps).
        Without a forward-backward pass: the step is cheap, and the engine's finite potentials
        always leave a possible path."""
        u, p = natural
        ok_u = np.all(~np.isnan(u) & (u < np.inf), axis=-1) & np.any(np.isfinite(u), axis=-1)
        ok_p = np.all(~np.isnan(p) & (p < np.inf), axis=(-2, -1))
        ok = ok_u & ok_p
        return np.broadcast_to(ok.all(-1, keepdims=True), ok.shape).copy()

    @classmethod
    def statistics(cls, x: np.ndarray, event_shape: tuple[int, ...]) -> Arrays:
        """(one-hot z_t, z_t z_{t+1}^T with a zero last step) of state paths x (..., T) over
        K = event_shape[0] states."""
        size = event_shape[0]
        onehot = np.eye(size)[np.asarray(x)]
        pairs = np.zeros(onehot.shape + (size,))
        pairs[..., :-1, :, :] = onehot[..., :-1, :, None] * onehot[..., 1:, None, :]
        return onehot, pairs

    @classmethod
    def sample(cls, natural: Arrays, rng: np.random.Generator, size: tuple[int, ...] = ()) -> np.ndarray:
        """Paths size + (..., T) by forward filtering, backward sampling (Chib 1996)."""
        unary, pairwise = natural
        marginals, pairs, _ = forward_backward(unary, pairwise)
        marginals = np.broadcast_to(marginals, tuple(size) + marginals.shape)
        pairs = np.broadcast_to(pairs, tuple(size) + pairs.shape)
        out = np.empty(marginals.shape[:-1], dtype=np.int64)
        out[..., 0] = _draw(marginals[..., 0, :], rng)
        for t in range(1, unary.shape[-2]):
            row = np.take_along_axis(pairs[..., t - 1, :, :], out[..., t - 1, None, None], axis=-2)[..., 0, :]
            out[..., t] = _draw(row / row.sum(-1, keepdims=True), rng)
        return out

    @classmethod
    def to_scipy(cls, natural: Arrays):
        """scipy.stats has no distribution over paths: the chain enumerated, path by path (an
        exact reference for small K^T; ``Paths``)."""
        return Paths(natural[0], natural[1])

    @classmethod
    def random_natural(cls, rng, plate_shape, event_shape):
        """Normal unary and pairwise log-potentials; plate_shape ends with the time axis."""
        return (rng.normal(size=tuple(plate_shape) + tuple(event_shape)),
                rng.normal(size=tuple(plate_shape) + tuple(event_shape) * 2))

    @classmethod
    def example(cls) -> Arrays:
        """Three chains of T = 4 steps (plates (3, 4)): the time axis is one variable, so the
        plate of independent elements is the chains'."""
        return cls.random_natural(np.random.default_rng(0), (3, 4), cls.example_event)

    @classmethod
    def with_mean(cls, natural: Arrays, mean: np.ndarray) -> Arrays:
        """Independent steps with these marginals: U = log p, P = 0."""
        with np.errstate(divide="ignore"):
            unary = np.log(np.broadcast_to(mean, natural[0].shape))
        return unary, np.zeros(natural[1].shape)

    @classmethod
    def describe_transitions(cls, mean: np.ndarray, counts: np.ndarray, fmt=str) -> str:
        """The marginals' shape and the expected transition rates counts_jk / sum_k counts_jk
        summed over all chains (``counts``: expected transition counts, (..., K, K))."""
        total = counts.reshape((-1,) + counts.shape[-2:]).sum(0)
        rates = total / np.maximum(total.sum(-1, keepdims=True), 1e-300)
        return f"marginals shape {mean.shape}; expected transitions per step {fmt(rates)}"


def _plogp(p: np.ndarray) -> np.ndarray:
    """p log p, with 0 log 0 = 0."""
    out = np.where(p > 0, p, 1.0)
    np.log(out, out=out)
    out *= p
    return out


def _draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    c = np.cumsum(p, axis=-1)
    u = rng.random(p.shape[:-1] + (1,))
    return np.minimum(np.sum(c < u, axis=-1), p.shape[-1] - 1)
