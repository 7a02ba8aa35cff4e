"""Inference loops over a compiled model."""
from .batch import ElboDecreaseWarning as ElboDecreaseWarning
from .batch import fit as fit
from .result import FitResult as FitResult
