"""Declaring networks: models, plates, nodes, deterministic glue."""
from .expressions import Data as Data
from .expressions import dot as dot
from .gaussian_chain import GaussianMarkovChain as GaussianMarkovChain
from .joint import GaussianWishart as GaussianWishart
from .joint import NormalGamma as NormalGamma
from . import linear as linear  # registers the linear maps of expressions (expressions.MAPS)
from .markov_chain import CategoricalMarkovChain as CategoricalMarkovChain
from .model import Model as Model
from .node import Node as Node
from .nodes import Bernoulli as Bernoulli
from .nodes import Beta as Beta
from .nodes import Binomial as Binomial
from .nodes import Categorical as Categorical
from .nodes import Dirichlet as Dirichlet
from .nodes import Exponential as Exponential
from .nodes import Gamma as Gamma
from .nodes import Gaussian as Gaussian
from .nodes import Multinomial as Multinomial
from .nodes import NegativeBinomial as NegativeBinomial
from .nodes import Normal as Normal
from .nodes import Poisson as Poisson
from .nodes import Wishart as Wishart
from .plate import Plate as Plate
from .polya_gamma import PolyaGamma as PolyaGamma
from .stick_breaking import StickBreaking as StickBreaking
