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
from .gaussian_chain import GaussianChainARDFactor as GaussianChainARDFactor
from .gaussian_chain import GaussianChainFactor as GaussianChainFactor
from .gaussian import GaussianFactor as GaussianFactor
from .gaussian import GaussianIsotropicFactor as GaussianIsotropicFactor
from .gaussian import NormalFactor as NormalFactor
from .gaussian_wishart import GaussianJointFactor as GaussianJointFactor
from .gaussian_wishart import GaussianWishartFactor as GaussianWishartFactor
from .logit import LogitBernoulliFactor as LogitBernoulliFactor
from .logit import LogitBinomialFactor as LogitBinomialFactor
from .logit import LogitNegativeBinomialFactor as LogitNegativeBinomialFactor
from .logit import LogitStickBreakingFactor as LogitStickBreakingFactor
from .markov_chain import MarkovChainFactor as MarkovChainFactor
from .multinomial import MultinomialFactor as MultinomialFactor
from .negative_binomial import NegativeBinomialFactor as NegativeBinomialFactor
from .normal_gamma import GaussianDiagonalJointFactor as GaussianDiagonalJointFactor
from .normal_gamma import NormalGammaFactor as NormalGammaFactor
from .normal_gamma import NormalJointFactor as NormalJointFactor
from .poisson import PoissonFactor as PoissonFactor
from .polya_gamma import PolyaGammaFactor as PolyaGammaFactor
from .stick_breaking import ClosedStickBreakingFactor as ClosedStickBreakingFactor
from .stick_breaking import StickBreakingFactor as StickBreakingFactor
from .wishart import WishartFactor as WishartFactor

FACTORS = (GaussianFactor, GaussianARDFactor, GaussianIsotropicFactor, NormalFactor, GammaFactor, WishartFactor, DirichletFactor, CategoricalFactor,
           MarkovChainFactor, GaussianChainFactor, GaussianChainARDFactor, PoissonFactor, ExponentialFactor,
           MultinomialFactor, BetaFactor, BernoulliFactor, BinomialFactor, GaussianWishartFactor, GaussianJointFactor,
           NormalGammaFactor, NormalJointFactor, GaussianDiagonalJointFactor, StickBreakingFactor,
           ClosedStickBreakingFactor, NegativeBinomialFactor, PolyaGammaFactor, LogitBernoulliFactor,
           LogitBinomialFactor, LogitNegativeBinomialFactor, LogitStickBreakingFactor)


def rules() -> list[tuple[str, str, str]]:
    """Every conjugacy rule as (child family, parent role, parent family), with the families that
    fill a role for another (``Family.reads_as``: stick-breaking weights where a Dirichlet is read)."""
    from ..families import ALL

    return list(dict.fromkeys((f.child.name, role, other.name) for f in FACTORS for role, fam in f.roles.items()
                              for other in (fam,) + tuple(g for g in ALL if g is not fam and g.fills(fam))))
