"""Inference over a compiled model: the State of a fit, pure steps, executors, one loop."""
from .executor import Executor as Executor
from .executor import Serial as Serial
from .executor_dask import DaskExecutor as DaskExecutor
from .loop import DivergenceWarning as DivergenceWarning
from .loop import ElboDecreaseWarning as ElboDecreaseWarning
from .loop import Fit as Fit
from .loop import fit as fit
from .result import FitResult as FitResult
from .result import load as load
from .schedules import Adaptive as Adaptive
from .schedules import Constant as Constant
from .schedules import Schedule as Schedule
from .schedules import RobbinsMonro as RobbinsMonro
from .schedules import Warmup as Warmup
from .state import State as State
from .subsample import Minibatch as Minibatch
from .subsample import PerNode as PerNode
