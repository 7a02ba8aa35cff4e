"""Declaring networks: models, plates, nodes, deterministic glue."""
from .expressions import dot as dot
from .model import Model as Model
from .node import Node as Node
from .nodes import Bernoulli as Bernoulli
from .nodes import Beta as Beta
from .nodes import Binomial as Binomial
from .nodes import Categorical as Categorical
from .nodes import Dirichlet as Dirichlet
from .nodes import Gamma as Gamma
from .nodes import Gaussian as Gaussian
from .nodes import Normal as Normal
from .nodes import Wishart as Wishart
from .plate import Plate as Plate
