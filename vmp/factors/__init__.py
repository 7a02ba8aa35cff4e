"""Conditional distributions (factors), each defined by its multilinear expected log-density."""
from .base import Conditional as Conditional
from .bernoulli import BernoulliFactor as BernoulliFactor
from .beta import BetaFactor as BetaFactor
from .binomial import BinomialFactor as BinomialFactor
from .categorical import CategoricalFactor as CategoricalFactor
from .dirichlet import DirichletFactor as DirichletFactor
from .exponential import ExponentialFactor as ExponentialFactor
from .gamma import GammaFactor as GammaFactor
from .gaussian import GaussianARDFactor as GaussianARDFactor
from .gaussian import GaussianFactor as GaussianFactor
from .gaussian import GaussianIsotropicFactor as GaussianIsotropicFactor
from .gaussian import NormalFactor as NormalFactor
from .markov_chain import MarkovChainFactor as MarkovChainFactor
from .multinomial import MultinomialFactor as MultinomialFactor
from .poisson import PoissonFactor as PoissonFactor
from .wishart import WishartFactor as WishartFactor

FACTORS = (GaussianFactor, GaussianARDFactor, GaussianIsotropicFactor, NormalFactor, GammaFactor, WishartFactor, DirichletFactor, CategoricalFactor,
           MarkovChainFactor, PoissonFactor, ExponentialFactor, MultinomialFactor, BetaFactor, BernoulliFactor,
           BinomialFactor)


def rules() -> list[tuple[str, str, str]]:
    """Every conjugacy rule as (child family, parent role, parent family)."""
    return list(dict.fromkeys((f.child.name, role, fam.name) for f in FACTORS for role, fam in f.roles.items()))
