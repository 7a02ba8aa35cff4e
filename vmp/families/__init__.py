"""Exponential-family math: one module per family, pure functions of natural parameters."""
from .base import Family as Family
from .categorical import Categorical as Categorical
from .dirichlet import Dirichlet as Dirichlet
from .gamma import Gamma as Gamma
from .gaussian import Gaussian as Gaussian
from .gaussian import Normal as Normal
from .markov_chain import CategoricalMarkovChain as CategoricalMarkovChain
from .wishart import Wishart as Wishart

FAMILIES = (Gaussian, Normal, Gamma, Wishart, Dirichlet, Categorical, CategoricalMarkovChain)
