"""A Gaussian Markov chain given its initial state and its linear dynamics.

    x_0 ~ N(mu, P^-1),   x_{t+1} | x_t ~ N(A_t x_t + B u_t, Q^-1)   (t < L-1, L the chain's length)

With m_t = A x_t + B u_t, the expected log-density is the Gaussian one (Winn & Bishop section
4.1) at the first step, and for each transition

    -1/2 tr(E[Q] E[x_{t+1} x_{t+1}^T]) + tr(E[Q] E[A] E[x_t x_{t+1}^T]) - 1/2 tr(E[A^T Q A] E[x_t x_t^T])
    + E[x_{t+1}]^T E[Q] E[B] u_t - E[x_t]^T E[A]^T E[Q] E[B] u_t - 1/2 u_t^T E[B^T Q B] u_t
    + 1/2 E[log|Q|] - D/2 log 2 pi

(Beal 2003 eq. (5.42); Ghahramani & Hinton 2000 for gated A and Q), where the rows a_i of a random
A are independent under q: E[A^T Q A]_jl = sum_i E[Q_ii] E[a_i a_i^T]_jl
+ sum_{i != k} E[Q_ik] E[a_i]_j E[a_k]_l (and so for B). With Q = diag(v) (Gamma v_i, ARD noise)
the second sum is zero and E[log|Q|] = sum_i E[log v_i]. Every term is over the step t, reading
the chain's moments at t (the "next" components repeat x_{t+1} there), so it stays multilinear.

Chains of different lengths L are padded to the plate's T: a padded step is a standard normal
state with no transition into it and no children, so its -1/2 E[x^T x] - D/2 log 2 pi here and
its entropy D/2 (1 + log 2 pi) cancel and the bound is that of the unpadded chains. The masks
(first step, transitions within the chain, padding) are constants over the chain's plates.
"""
from __future__ import annotations

import numpy as np

from ..families import Gamma, Gaussian, GaussianMarkovChain, Wishart, constraints
from .base import Conditional
from .gaussian import LOG2PI
from .markov_chain import chain_masks
from .terms import Const, Op, Term


class GaussianChainFactor(Conditional):
    """The chain with a full noise precision Q (a Wishart node or a constant matrix)."""

    child = GaussianMarkovChain
    roles = {"mean": Gaussian, "precision": Wishart, "transition": Gaussian, "noise": Wishart, "control": Gaussian}
    arg_constraints = {"mean": constraints.real_vector, "precision": constraints.positive_definite,
                       "transition": constraints.real, "noise": constraints.positive_definite,
                       "control": constraints.real}

    def __init__(self, event_shape: tuple[int, ...], lengths: np.ndarray, steps: int,
                 inputs: np.ndarray | None = None):
        super().__init__(event_shape)
        self.first, self.within, self.padding = chain_masks(lengths, steps)
        d = self.event_shape[0]
        plates = self.first.shape
        self.eye = np.broadcast_to(np.eye(d), plates + (d, d))
        self.off = np.broadcast_to(1.0 - np.eye(d), plates + (d, d))
        self.inputs = None if inputs is None else np.broadcast_to(inputs, plates + np.shape(inputs)[-1:])

    def terms(self) -> list[Term]:
        d = self.event_shape[0]
        first, pad = Const(self.first), Const(self.padding)
        out = [
            Term(-0.5, (Op("precision", 0, "ab"), Op("x", 1, "ab")), (first,)),
            Term(1.0, (Op("precision", 0, "ab"), Op("x", 0, "a"), Op("mean", 0, "b")), (first,)),
            Term(-0.5, (Op("precision", 0, "ab"), Op("mean", 1, "ab")), (first,)),
            Term(0.5, (Op("precision", 1),), (first,)),
            Term(-0.5 * d * LOG2PI, (), (first,)),
            Term(-0.5, (Op("x", 1, "ab"),), (pad, Const(self.eye, "ab"))),
            Term(-0.5 * d * LOG2PI, (), (pad,)),
        ]
        return out + self.transition_terms() + ([] if self.inputs is None else self.input_terms())

    def transition_terms(self) -> list[Term]:
        """-1/2 <Q, x'x'^T> + <Q A, x x'^T> - 1/2 <A^T Q A, x x^T> + 1/2 log|Q| - D/2 log 2 pi."""
        d, w = self.event_shape[0], Const(self.within)
        return [
            Term(-0.5, (Op("noise", 0, "ik"), Op("x", 4, "ik")), (w,)),
            Term(1.0, (Op("noise", 0, "ik"), Op("transition", 0, "kj"), Op("x", 2, "ji")), (w,)),
            Term(-0.5, (Op("noise", 0, "ik"), Op("transition", 1, "ijl"), Op("x", 1, "jl")), (w, Const(self.eye, "ik"))),
            Term(-0.5, (Op("noise", 0, "ik"), Op("transition", 0, "ij"), Op("transition", 0, "kl"), Op("x", 1, "jl")),
                 (w, Const(self.off, "ik"))),
            Term(0.5, (Op("noise", 1),), (w,)),
            Term(-0.5 * d * LOG2PI, (), (w,)),
        ]

    def input_terms(self) -> list[Term]:
        """<Q B u, x'> - <A^T Q B u, x> - 1/2 u^T B^T Q B u."""
        w, u = Const(self.within), self.inputs
        uj, ul = Const(u, "j"), Const(u, "l")
        return [
            Term(1.0, (Op("noise", 0, "ik"), Op("x", 3, "i"), Op("control", 0, "kl")), (w, ul)),
            Term(-1.0, (Op("noise", 0, "ik"), Op("transition", 0, "ij"), Op("x", 0, "j"), Op("control", 0, "kl")),
                 (w, ul)),
            Term(-0.5, (Op("noise", 0, "ik"), Op("control", 1, "ijl")), (w, Const(self.eye, "ik"), uj, ul)),
            Term(-0.5, (Op("noise", 0, "ik"), Op("control", 0, "ij"), Op("control", 0, "kl")),
                 (w, Const(self.off, "ik"), uj, ul)),
        ]

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """D x D for the precisions and the transition matrix; D x M for the control matrix is
        the node's (it knows M)."""
        return tuple(event_shape) * (2 if role in ("precision", "noise", "transition", "control") else 1)


class GaussianChainARDFactor(GaussianChainFactor):
    """The chain with a diagonal noise precision Q = diag(v), one Gamma v_i per state dimension."""

    roles = {**GaussianChainFactor.roles, "noise": Gamma}
    arg_constraints = {**GaussianChainFactor.arg_constraints, "noise": constraints.positive}

    def transition_terms(self) -> list[Term]:
        d, w = self.event_shape[0], Const(self.within)
        return [
            Term(-0.5, (Op("noise", 0, "i"), Op("x", 4, "ik")), (w, Const(self.eye, "ik"))),
            Term(1.0, (Op("noise", 0, "i"), Op("transition", 0, "ij"), Op("x", 2, "ji")), (w,)),
            Term(-0.5, (Op("noise", 0, "i"), Op("transition", 1, "ijl"), Op("x", 1, "jl")), (w,)),
            Term(0.5, (Op("noise", 1, "i"),), (w,)),
            Term(-0.5 * d * LOG2PI, (), (w,)),
        ]

    def input_terms(self) -> list[Term]:
        w, u = Const(self.within), self.inputs
        uj, ul = Const(u, "j"), Const(u, "l")
        return [
            Term(1.0, (Op("noise", 0, "i"), Op("x", 3, "i"), Op("control", 0, "il")), (w, ul)),
            Term(-1.0, (Op("noise", 0, "i"), Op("transition", 0, "ij"), Op("x", 0, "j"), Op("control", 0, "il")),
                 (w, ul)),
            Term(-0.5, (Op("noise", 0, "i"), Op("control", 1, "ijl")), (w, uj, ul)),
        ]

    @classmethod
    def role_event(cls, role: str, event_shape: tuple[int, ...]) -> tuple[int, ...]:
        """A D-vector of noise precisions (the Gamma nodes' plate read as the event axis)."""
        return tuple(event_shape) if role == "noise" else super().role_event(role, event_shape)
