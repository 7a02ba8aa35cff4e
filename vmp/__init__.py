"""vmp: variational message passing on conjugate-exponential Bayesian networks."""
from . import families as families
from .errors import (CheckpointError as CheckpointError, ConjugacyError as ConjugacyError, ConvergenceError as ConvergenceError,
                     DataError as DataError, GraphError as GraphError,
                     HyperparameterError as HyperparameterError, OptionError as OptionError,
                     ShapeError as ShapeError,
                     VMPError as VMPError)
from .factors import rules as rules
from .graph import (Bernoulli as Bernoulli, Beta as Beta, Binomial as Binomial,
                    Categorical as Categorical, CategoricalMarkovChain as CategoricalMarkovChain, Data as Data,
                    Dirichlet as Dirichlet, Gamma as Gamma,
                    Gaussian as Gaussian, Model as Model, Normal as Normal, Plate as Plate,
                    Wishart as Wishart, dot as dot)
from .graph import Exponential as Exponential, Multinomial as Multinomial, Poisson as Poisson
from .graph import GaussianMarkovChain as GaussianMarkovChain
from .graph import GaussianWishart as GaussianWishart, NormalGamma as NormalGamma, StickBreaking as StickBreaking
from .graph import NegativeBinomial as NegativeBinomial
from .inference import ConvergenceWarning as ConvergenceWarning, DivergenceWarning as DivergenceWarning
from .inference import CheckpointWarning as CheckpointWarning
from .inference import ElboDecreaseWarning as ElboDecreaseWarning
from .inference import Executor as Executor, Fit as Fit, FitResult as FitResult, Serial as Serial
from .inference import Chunked as Chunked, DaskExecutor as DaskExecutor, State as State, load as load
from .inference import Constant as Constant, Minibatch as Minibatch, PerNode as PerNode
from .inference import RobbinsMonro as RobbinsMonro, Warmup as Warmup
from .inference import Adaptive as Adaptive, Schedule as Schedule
from .inference import DriftWarning as DriftWarning, Population as Population, Stream as Stream
from .inference.executor_processes import Processes as Processes

from .monitors import DomainMonitor as DomainMonitor, ElboMonitor as ElboMonitor, Monitor as Monitor
from .monitors import NoiseMonitor as NoiseMonitor
from .policies import Annealing as Annealing, Policy as Policy, SVIPlus as SVIPlus, Tempering as Tempering
from .policies import LocalTempering as LocalTempering
from . import readers as readers  # FitResult's readers (plot, summary, to_dataframe, to_arviz)
from . import facades as facades  # Model's facades (fit, predict, render, ...: graph/facades.py)

__version__ = "0.1.0"


def __getattr__(name: str):
    """``vmp.models`` after a bare ``import vmp`` (PEP 562): the builders load on first use; so
    does ``vmp.heap_for_arrays``, the opt-in allocator setting (``vmp.inference.heap``)."""
    import importlib

    if name == "models":
        return importlib.import_module("vmp.models")
    if name == "heap_for_arrays":
        return importlib.import_module("vmp.inference.heap").heap_for_arrays
    raise AttributeError(f"module 'vmp' has no attribute {name!r}")
