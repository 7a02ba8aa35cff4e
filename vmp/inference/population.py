"""Population variational Bayes (McInerney, Ranganath & Blei 2015): SVI against a population
of size alpha drawn from a stream, whatever the number of points seen so far.

The objective is the bound of alpha data points drawn from the population F,

    L_alpha(lambda) = E_F[ ELBO(lambda; X_1..X_alpha) ],

whose stochastic natural gradient from a minibatch S of the stream is Hoffman et al.'s SVI step
with N = alpha (their Algorithm 1):

    lambda_hat = eta_0 + (alpha / |S|) sum_{n in S} E_phi[t(x_n, z_n)],
    lambda    <- (1 - rho_t) lambda + rho_t lambda_hat,

the prior eta_0 kept as declared. ``Population(plate, size, alpha)`` is a ``Minibatch`` whose
scale is alpha / |S| instead of N / |S|; everything else (the local step, the schedules,
options (a) and (b)) is the minibatch fit's.
"""
from __future__ import annotations

from ..errors import OptionError
from .subsample import Minibatch, MinibatchPlan


class Population(Minibatch):
    """Draw ``size`` elements of ``plate`` per step; scale the globals' targets by alpha / size."""

    def __init__(self, plate: str, size: int, alpha: float, **options):
        super().__init__(plate, size, **options)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0 \
                or alpha == float("inf"):
            raise OptionError(f"population= (alpha, the population size) must be a positive finite number, "
                              f"got {alpha!r}")
        self.alpha = float(alpha)

    def prepare(self, engine, rng, saved=None, evaluate_every: int = 10) -> "PopulationPlan":
        size = self.evaluation_size or max(200, max(evaluate_every, 1) * self.size)
        plan = PopulationPlan(self, engine, rng, saved, size)
        plan.alpha = self.alpha
        return plan

    def __repr__(self) -> str:
        return f"Population({self.plate_name!r}, {self.size}, alpha={self.alpha:g})"


class PopulationPlan(MinibatchPlan):
    alpha: float = 1.0

    @property
    def scale(self) -> float:
        return self.alpha / self.size
