"""vmp: variational message passing on conjugate-exponential Bayesian networks."""
from . import families as families
from .errors import (ConjugacyError as ConjugacyError, ConvergenceError as ConvergenceError,
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
from .graph import NegativeBinomial as NegativeBinomial
from .inference import ConvergenceWarning as ConvergenceWarning, DivergenceWarning as DivergenceWarning
from .inference import ElboDecreaseWarning as ElboDecreaseWarning
from .inference import Executor as Executor, Fit as Fit, FitResult as FitResult, Serial as Serial
from .inference import Chunked as Chunked, DaskExecutor as DaskExecutor, State as State, load as load
from .inference import heap_for_arrays as heap_for_arrays
from .inference import Constant as Constant, Minibatch as Minibatch, PerNode as PerNode
from .inference import RobbinsMonro as RobbinsMonro, Warmup as Warmup
from .inference import Adaptive as Adaptive, Schedule as Schedule

from .monitors import DomainMonitor as DomainMonitor, ElboMonitor as ElboMonitor, Monitor as Monitor
from .monitors import NoiseMonitor as NoiseMonitor
from .policies import Annealing as Annealing, Policy as Policy, SVIPlus as SVIPlus, Tempering as Tempering
from .policies import LocalTempering as LocalTempering

from . import _checkout

_checkout.install()  # a source checkout: models/ importable as vmp.models (installs map it)


def _plot(self, filename=None):
    """A matplotlib dashboard of the convergence diagnostics (see vmp.diagnostics.plot)."""
    from .diagnostics import plot

    return plot(self, filename)


def _summary(self, model=None) -> str:
    """A text table of the convergence state and, given the model, the posterior."""
    from .diagnostics import summary

    return summary(self, model)


def _to_dataframe(self):
    """One row per step as a pandas DataFrame (needs pandas)."""
    from .diagnostics import to_dataframe

    return to_dataframe(self)


def _to_arviz(self, model, draws: int = 1000, seed: int | None = 0, predictive: bool = True):
    """Draws from the fitted q of ``model`` as ArviZ InferenceData (see vmp.export.to_arviz)."""
    from .export import to_arviz

    return to_arviz(model, draws, seed, predictive, result=self)


# the readers of vmp.diagnostics as methods: the reading layer sits above inference
FitResult.plot, FitResult.summary, FitResult.to_dataframe = _plot, _summary, _to_dataframe
FitResult.to_arviz = _to_arviz

__version__ = "0.1.0"


def __getattr__(name: str):
    """``vmp.models`` after a bare ``import vmp`` (PEP 562): the builders load on first use."""
    if name == "models":
        import importlib

        return importlib.import_module("vmp.models")
    raise AttributeError(f"module 'vmp' has no attribute {name!r}")
