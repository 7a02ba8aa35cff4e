"""Errors raised by vmp. Every one is a ValueError and names the node at fault."""


class VMPError(ValueError):
    """Base class of all vmp errors."""


class ShapeError(VMPError):
    """An array does not fit a node's plates or event shape."""


class HyperparameterError(VMPError):
    """A hyperparameter is outside its domain (non-positive shape, indefinite scale...)."""


class DataError(VMPError):
    """Observed data are invalid (NaN or inf without a mask, wrong values)."""


class GraphError(VMPError):
    """The graph is malformed: cycle, duplicate or unknown name, bad plates."""


class ConjugacyError(VMPError):
    """A parent is not conjugate to the child's role it was given for."""


class OptionError(VMPError):
    """An option of a fit, a step-size schedule or a subsampler is outside its domain
    (iterations, minibatch size, step size)."""


class ConvergenceError(VMPError):
    """Inference left the valid domain or the bound decreased."""


class CheckpointError(VMPError):
    """A checkpoint cannot be written where asked, or a file is not a checkpoint of this model:
    foreign (another model's nodes, plates or shapes; another method or plan), damaged, or not a
    vmp checkpoint at all. The message says what differs."""
