"""Logit links through Polya-gamma augmentation (Polson, Scott & Windle 2013, Theorem 1):

    (e^psi)^a / (1 + e^psi)^b = 2^-b e^{kappa psi} E_{omega ~ PG(b, 0)}[exp(-omega psi^2 / 2)],
    kappa = a - b/2,

so with an auxiliary omega whose prior is PG(b, 0) (the base measure of its family),

    E[log p(y, omega | psi)] = kappa E[psi] - 1/2 E[omega] E[psi^2] - b log 2 + log h(y),

multilinear in E[psi], E[psi^2] and E[omega] (psi is any Normal-valued expression; h(y), the
binomial coefficient or the like, is the child's base measure, ``data_terms``). The node the
engine adds for omega is PG(1, c) per unit of b, with b as its multiplicity, so E[omega] = b
E[omega_1] and each term reading omega carries b, written here as the data it comes from:

- Bernoulli (a = y, b = 1); Binomial with n trials (a = y, b = n); NegativeBinomial with r
  failures (a = y, b = y + r);
- Categorical and Multinomial through the stick-breaking construction (Linderman, Johnson &
  Adams 2015, eq. (3)): x_k | x_{<k} ~ Bin(N - sum_{j<k} x_j, sigmoid(psi_k)) for k < K, so
  a_k = x_k, b_k = N - sum_{j<k} x_j over K - 1 logits (N = 1 for a Categorical).

At the optimal q(omega) = PG(b, sqrt(E[psi^2])) the bound is the Jaakkola-Jordan bound
kappa E[psi] - b log 2 - b log cosh(sqrt(E[psi^2]) / 2).
"""
from __future__ import annotations

import numpy as np

from ..families import Bernoulli, Binomial, Categorical, Multinomial, NegativeBinomial, Normal, PolyaGamma
from ..families import constraints
from .base import Conditional
from .terms import Const, Op, Term

LOG2 = float(np.log(2.0))


class _Bound(Conditional):
    """A factor whose child family is bound to per-element data (``_family()``), rebuilt when
    unpickled."""

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "child"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.child = self._family()

    def _family(self):
        return type(self).child


class LogitBernoulliFactor(Conditional):
    """y ~ Bernoulli(sigmoid(psi)): (y - 1/2) E[psi] - 1/2 E[omega] E[psi^2] - log 2."""

    child = Bernoulli
    roles = {"logit": Normal, "omega": PolyaGamma}

    def terms(self) -> list[Term]:
        return [Term(1.0, (Op("x", 0), Op("logit", 0))), Term(-0.5, (Op("logit", 0),)),
                Term(-0.5, (Op("omega", 0), Op("logit", 1))), Term(-LOG2)]

    @staticmethod
    def shape(x: np.ndarray) -> np.ndarray:
        """b = 1 (broadcast: no array of the data's size)."""
        return np.broadcast_to(1.0, np.shape(x))


class LogitBinomialFactor(_Bound):
    """y ~ Bin(n, sigmoid(psi)): (y - n/2) E[psi] - n/2 E[omega] E[psi^2] - n log 2 + log C(n, y)."""

    child = Binomial
    roles = {"logit": Normal, "omega": PolyaGamma}
    arg_constraints = {"trials": constraints.nonnegative_integer}

    def __init__(self, event_shape: tuple[int, ...], trials: np.ndarray):
        super().__init__(event_shape)
        self.trials = np.asarray(trials, float)
        self.child = self._family()

    def _family(self):
        return Binomial.of(self.trials)

    def terms(self) -> list[Term]:
        n = Const(self.trials)
        return [Term(1.0, (Op("x", 0), Op("logit", 0))), Term(-0.5, (Op("logit", 0),), (n,)),
                Term(-0.5, (Op("omega", 0), Op("logit", 1)), (n,)), Term(-LOG2, (), (n,))]

    def shape(self, x: np.ndarray) -> np.ndarray:
        """b = n."""
        return np.broadcast_to(self.trials, np.shape(x)).astype(float)


class LogitNegativeBinomialFactor(_Bound):
    """y ~ NB(r, sigmoid(psi)): (y - r)/2 E[psi] - (y + r)/2 E[omega] E[psi^2] - (y + r) log 2
    + log h(y)."""

    child = NegativeBinomial
    roles = {"logit": Normal, "omega": PolyaGamma}
    arg_constraints = {"r": constraints.positive}

    def __init__(self, event_shape: tuple[int, ...], r: np.ndarray):
        super().__init__(event_shape)
        self.r = np.asarray(r, float)
        self.child = self._family()

    def _family(self):
        return NegativeBinomial.of(self.r)

    def terms(self) -> list[Term]:
        r = Const(self.r)
        return [Term(0.5, (Op("x", 0), Op("logit", 0))), Term(-0.5, (Op("logit", 0),), (r,)),
                Term(-0.5, (Op("x", 0), Op("omega", 0), Op("logit", 1))),
                Term(-0.5, (Op("omega", 0), Op("logit", 1)), (r,)),
                Term(-LOG2, (Op("x", 0),)), Term(-LOG2, (), (r,))]

    def shape(self, x: np.ndarray) -> np.ndarray:
        """b = y + r."""
        return np.asarray(x, float) + self.r


def stick_probabilities(psi: np.ndarray) -> np.ndarray:
    """pi_k = sigmoid(psi_k) prod_{j<k} sigmoid(-psi_j) for k < K, pi_K = prod_j sigmoid(-psi_j),
    from the K - 1 logits on the last axis (Linderman et al. 2015, eq. (2))."""
    psi = np.asarray(psi, float)
    log_stay = -np.logaddexp(0.0, psi)  # log(1 - sigmoid(psi))
    before = np.concatenate([np.zeros(psi.shape[:-1] + (1,)), np.cumsum(log_stay, axis=-1)], axis=-1)
    log_take = np.concatenate([-np.logaddexp(0.0, -psi), np.zeros(psi.shape[:-1] + (1,))], axis=-1)
    return np.exp(before + log_take)


def stick_matrices(k: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, U), K x (K - 1): S_jk = [j = k] picks a_k = x_k; U_jk = [j >= k] sums
    b_k = N - sum_{j<k} x_j = sum_{j>=k} x_j."""
    j, s = np.arange(k)[:, None], np.arange(k - 1)[None, :]
    return (j == s).astype(float), (j >= s).astype(float)


class LogitStickBreakingFactor(_Bound):
    """x (one-hot, or counts summing to N) over K categories given K - 1 logits psi_k:
    sum_k [(x_k - b_k/2) E[psi_k] - b_k/2 E[omega_k] E[psi_k^2] - b_k log 2] + log h(x),
    b_k = N - sum_{j<k} x_j = sum_{j>=k} x_j (Linderman et al. 2015): every coefficient of
    E[omega_k] is a sum of non-negative terms, so its message -b_k/2 E[psi_k^2] is never above 0."""

    child = Categorical
    roles = {"logits": Normal, "omega": PolyaGamma}

    def __init__(self, event_shape: tuple[int, ...], plate_shape: tuple[int, ...], trials=None):
        super().__init__(event_shape)
        self.trials = None if trials is None else np.asarray(trials, float)
        self.child = self._family()
        s, upper = stick_matrices(self.event_shape[0])
        self.kappa = np.broadcast_to(s - 0.5 * upper, tuple(plate_shape) + s.shape)
        self.upper = np.broadcast_to(upper, tuple(plate_shape) + s.shape)
        self.sticks = np.broadcast_to(upper.sum(1), tuple(plate_shape) + upper.shape[:1])

    def _family(self):
        return Categorical if self.trials is None else Multinomial.of(self.trials)

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """K - 1 logits and auxiliaries for K categories."""
        return tuple(event_shape) if role == "x" else (event_shape[0] - 1,)

    def terms(self) -> list[Term]:
        x, psi, psi2, omega = Op("x", 0, "a"), Op("logits", 0, "b"), Op("logits", 1, "b"), Op("omega", 0, "b")
        return [Term(1.0, (x, psi), (Const(self.kappa, "ab"),)),
                Term(-0.5, (x, omega, psi2), (Const(self.upper, "ab"),)),
                Term(-LOG2, (x,), (Const(self.sticks, "a"),))]

    def shape(self, x: np.ndarray) -> np.ndarray:
        """b_k = sum_{j>=k} x_j over the K - 1 sticks (x: one-hot or counts)."""
        x = np.asarray(x, float)
        return np.cumsum(x[..., ::-1], axis=-1)[..., ::-1][..., :-1]
