"""Exponential-family math: one module per family, pure functions of natural parameters.

``ALL`` is the registry: a new family is one module here and one line below (the table-driven
tests in tests/families/ pick it up from ``ALL``).
"""
from . import constraints as constraints
from .base import Family as Family
from .bernoulli import Bernoulli as Bernoulli
from .beta import Beta as Beta
from .binomial import Binomial as Binomial
from .categorical import Categorical as Categorical
from .dirichlet import Dirichlet as Dirichlet
from .exponential import Exponential as Exponential
from .gamma import Gamma as Gamma
from .gaussian import Gaussian as Gaussian
from .gaussian_chain import GaussianMarkovChain as GaussianMarkovChain
from .gaussian_wishart import GaussianWishart as GaussianWishart
from .markov_chain import CategoricalMarkovChain as CategoricalMarkovChain
from .multinomial import Multinomial as Multinomial
from .negative_binomial import NegativeBinomial as NegativeBinomial
from .normal import Normal as Normal
from .normal_gamma import NormalGamma as NormalGamma
from .poisson import Poisson as Poisson
from .polya_gamma import PolyaGamma as PolyaGamma
from .stick_breaking import ClosedStickBreaking as ClosedStickBreaking
from .stick_breaking import StickBreaking as StickBreaking
from .wishart import Wishart as Wishart

ALL: tuple[type[Family], ...] = (Gaussian, Normal, Gamma, Wishart, Dirichlet, Categorical,
                                  CategoricalMarkovChain, GaussianMarkovChain, Poisson, Exponential, Multinomial, Beta,
                                  Bernoulli, Binomial, GaussianWishart, NormalGamma, StickBreaking, ClosedStickBreaking,
                                  PolyaGamma, NegativeBinomial)
