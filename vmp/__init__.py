"""vmp: variational message passing on conjugate-exponential Bayesian networks."""
from . import families as families
from .errors import (ConjugacyError as ConjugacyError, ConvergenceError as ConvergenceError,
                     DataError as DataError, GraphError as GraphError,
                     HyperparameterError as HyperparameterError, ShapeError as ShapeError,
                     VMPError as VMPError)
from .factors import rules as rules
from .graph import (Categorical as Categorical, Dirichlet as Dirichlet, Gamma as Gamma,
                    Gaussian as Gaussian, Model as Model, Normal as Normal, Plate as Plate,
                    Wishart as Wishart, dot as dot)
from .inference import DivergenceWarning as DivergenceWarning, ElboDecreaseWarning as ElboDecreaseWarning
from .inference import Executor as Executor, Fit as Fit, FitResult as FitResult, Serial as Serial
from .inference import State as State, load as load
from .inference import Constant as Constant, Minibatch as Minibatch, PerNode as PerNode
from .inference import RobbinsMonro as RobbinsMonro, Warmup as Warmup

from .monitors import DomainMonitor as DomainMonitor, ElboMonitor as ElboMonitor, Monitor as Monitor
from .monitors import NoiseMonitor as NoiseMonitor
from .policies import Annealing as Annealing, Policy as Policy, SVIPlus as SVIPlus, Tempering as Tempering
from .policies import LocalTempering as LocalTempering

__version__ = "0.1.0"
