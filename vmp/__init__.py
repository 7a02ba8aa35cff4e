"""vmp: variational message passing on conjugate-exponential Bayesian networks."""
from . import families as families
from .errors import (ConjugacyError as ConjugacyError, ConvergenceError as ConvergenceError,
                     DataError as DataError, GraphError as GraphError,
                     HyperparameterError as HyperparameterError, OptionError as OptionError,
                     ShapeError as ShapeError,
                     VMPError as VMPError)
from .factors import rules as rules
from .graph import (Categorical as Categorical, Dirichlet as Dirichlet, Gamma as Gamma,
                    Gaussian as Gaussian, Model as Model, Normal as Normal, Plate as Plate,
                    Wishart as Wishart, dot as dot)
from .inference import ElboDecreaseWarning as ElboDecreaseWarning
from .inference import FitResult as FitResult
from .inference import Constant as Constant, Minibatch as Minibatch, PerNode as PerNode
from .inference import RobbinsMonro as RobbinsMonro, Warmup as Warmup

from .monitors import DomainMonitor as DomainMonitor, ElboMonitor as ElboMonitor, Monitor as Monitor
from .monitors import NoiseMonitor as NoiseMonitor
from .policies import Annealing as Annealing, Policy as Policy, SVIPlus as SVIPlus, Tempering as Tempering
from .policies import LocalTempering as LocalTempering

from . import _checkout

_checkout.install()  # a source checkout: models/ importable as vmp.models (installs map it)

__version__ = "0.1.0"
