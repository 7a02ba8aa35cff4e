"""The options of a fit, checked once for every caller: ``fit``, ``model.fit``, ``model.batch``,
``model.stochastic`` and the ``vmp fit`` command (which names them by its flags).

:func:`check` turns ``fit()``'s keywords into an :class:`Options`, grouped by what they choose:
the method's own options (:class:`BatchOptions` or :class:`StochasticOptions`), what the fit
starts from and runs on, and its files (:class:`Checkpoints`). A message names an option as the
caller spells it: ``subsample=`` in Python, ``--minibatch`` on the command line (``say``).
"""
from __future__ import annotations

import math
import operator
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .. import domains
from ..errors import OptionError
from ..monitors import DomainMonitor, ElboMonitor, Monitor
from .checkpoint import writable
from .executor import Executor
from .policy import Policy
from .state import Resumable, State
from .stopping import PATIENCE
from .subsample import Subsample

#: the default ``iterations``: batch VMP stops at ``tol`` (ARD factor analysis and matrix
#: factorization need 300 to 400 sweeps on small data, Poisson factorization 1,200); a stochastic
#: fit runs them all
BATCH_ITERATIONS, STOCHASTIC_ITERATIONS = 2000, 200
#: batch VMP's default ``tol`` (BatchOptions)
TOL = 1e-7


@dataclass(frozen=True)
class BatchOptions:
    """Batch VMP (Winn & Bishop 2005, section 3.2): stop when the relative change of the bound
    is below ``tol`` (tol <= 0: every sweep); a fall of more than ``decrease_tol`` relative is
    reported by ``on_decrease`` ('warn' or 'raise'); ``plate`` is the data plate the policies
    weight (default: the observed nodes' one outermost plate).

    ``tol`` = 1e-7 by default: a mixture with a spare component can cross a saddle, one cluster
    split between two components, on which the bound rises by 1e-8 to 1e-6 relative per sweep for
    hundreds of sweeps before the halves merge. Of 30 such fits (3 clusters of 300 points, K = 5,
    seeds 0-29) tol 1e-6 stopped 8 on the saddle, 1e-7 one (a saddle of 550 sweeps at 1.5e-8 per
    sweep), 1e-8 none; at 1e-8, though, ARD factor analysis still rises by 2e-7 to 7e-7 per sweep
    after 10^4 sweeps (tests/test_batch_stopping.py, tests/test_models_recovery.py)."""

    tol: float = TOL
    decrease_tol: float = 1e-9
    on_decrease: str = "warn"
    plate: str | None = None


@dataclass(frozen=True)
class StochasticOptions:
    """Stochastic VMP (Paquet Alg. 1-2; Hoffman et al. 2013): what a step reads (``subsample``),
    option (a) 'per-node' or (b) 'global' (``update``), the step sizes (``step``: a schedule or
    a dict of them by node), the bound every ``evaluate_every`` steps on a fixed 'subsample' or
    in 'full' (``evaluate``), the ``monitors``, and the stopping rule's ``tol`` (None: run every
    step) and ``patience`` (evaluations the rule's window holds at least, and that each of its two
    compared means averages;
    :mod:`vmp.inference.stopping`)."""

    subsample: Subsample
    update: str = "per-node"
    step: Any = None
    evaluate_every: int = 10
    evaluate: str = "subsample"
    monitors: tuple = ()
    tol: float | None = None
    patience: int = PATIENCE


@dataclass(frozen=True)
class Checkpoints:
    """Where the state is written (``path``: at the end, on an interrupt and every ``every``
    steps) and what a fit resumes from (a path, a FitResult or a Fit)."""

    path: Any = None
    every: int | None = None
    resume: Any = None


@dataclass(frozen=True)
class Options:
    """The choices of one fit: its method ('batch' or 'stochastic') with that method's own
    options, the steps it runs to in all (``iterations``; 0: initialize only), where it starts
    (``seed``, ``init``), the policies that weight the data, where the sums run (``executor``),
    its files, and what it shows while it runs (``progress``, ``callback(t, fit)``)."""

    method: str
    iterations: int
    seed: int | None = 0
    init: Any = None
    policies: tuple = ()
    executor: Executor | None = None
    batch: BatchOptions | None = None
    stochastic: StochasticOptions | None = None
    checkpoints: Checkpoints = field(default_factory=Checkpoints)
    progress: bool | None = None
    callback: Callable | None = None


#: fit()'s keywords by group (``n_init`` is fit()'s own: restarts from several seeds)
COMMON = ("method", "iterations", "seed", "init", "policies", "executor", "progress", "callback",
          "checkpoint", "checkpoint_every", "resume")
BATCH = ("tol", "decrease_tol", "on_decrease", "plate")
STOCHASTIC = ("subsample", "update", "step", "evaluate_every", "evaluate", "monitors", "tol", "patience")
KEYWORDS = tuple(dict.fromkeys(COMMON + BATCH + STOCHASTIC))


#: phrases of the messages beyond an option's name, as Python spells them
PHRASES = {"subsample choices": "subsample=vmp.Minibatch(plate, size) (minibatches of a data plate, SVI) or "
                                "vmp.PerNode(children=C) (each node update draws C children)"}


def python_name(name: str) -> str:
    """How a message names an option (``subsample``: ``subsample=``), an option's value
    (``method=stochastic``: ``method='stochastic'``) or a phrase (:data:`PHRASES`) in Python."""
    if name in PHRASES:
        return PHRASES[name]
    key, _, value = name.partition("=")
    return f"{key}={value!r}" if value else f"{key}="


def check(keywords: Mapping[str, Any], say: Callable[[str], str] = python_name) -> Options:
    """The :class:`Options` of ``fit(**keywords)`` (None standing for "not given"), or an
    OptionError naming the option through ``say``."""
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise OptionError(f"fit() has no option {', '.join(map(repr, unknown))}; its options: n_init, "
                          + ", ".join(KEYWORDS))
    given = {k: v for k, v in keywords.items() if v is not None}
    method = default_method(given.get("method"), given.get("subsample"))
    if method not in ("batch", "stochastic"):
        raise OptionError(f"unknown method {method!r}; use 'batch' or 'stochastic'")
    own, other = (BATCH, STOCHASTIC) if method == "batch" else (STOCHASTIC, BATCH)
    wrong = [k for k in given if k in other and k not in own
             and not (k == "update" and given[k] == "per-node")]  # (a) is every batch sweep's order
    if wrong:
        raise OptionError(_misplaced(method, wrong, say))
    policies = _policies(given.get("policies", ()), say)
    rules = _batch(given, policies, say) if method == "batch" else None
    steps = _stochastic(given, say) if method == "stochastic" else None
    default = BATCH_ITERATIONS if method == "batch" else STOCHASTIC_ITERATIONS
    return Options(method, checked_count(given.get("iterations", default), say("iterations")),
                   checked_seed(keywords.get("seed", 0)), _init(given.get("init"), say), policies,
                   _executor(given.get("executor")), rules, steps, _checkpoints(given, say),
                   _progress(given.get("progress"), say), _callback(given.get("callback"), say))


def _misplaced(method: str, wrong: list, say) -> str:
    names = ", ".join(say(k) for k in wrong)
    verb = "apply" if len(wrong) > 1 else "applies"
    if method == "batch":
        return f"{names} {verb} to {say('method=stochastic')}, not batch VMP"
    return (f"{names} {verb} to batch VMP, not {say('method=stochastic')} (a stochastic fit runs its "
            f"iterations; monitors watch it)")


def _batch(given: dict, policies: tuple, say) -> BatchOptions:
    on_decrease = given.get("on_decrease", "warn")
    if on_decrease not in ("warn", "raise"):
        raise OptionError(f"on_decrease= takes 'warn' or 'raise', got {on_decrease!r}")
    for p in policies:
        if not p.batch:
            raise OptionError(f"policies=: {p.name} does not weight batch VMP: {p.batch_refusal}")
    plate = given.get("plate")
    if plate is not None and not isinstance(plate, str):
        raise OptionError(f"{say('plate')} takes the name of a data plate, got {plate!r}")
    return BatchOptions(domains.number(f"{say('tol')} (<= 0: every sweep)", given.get("tol", TOL)),
                        domains.number(say("decrease_tol"), given.get("decrease_tol", 1e-9), 0.0), on_decrease,
                        plate)


def _stochastic(given: dict, say) -> StochasticOptions:
    subsample = given.get("subsample")
    if not isinstance(subsample, Subsample):
        raise OptionError(f"{say('method=stochastic')} needs {say('subsample choices')}"
                          + ("" if subsample is None else f"; got {subsample!r}"))
    update = given.get("update", "per-node")
    if update not in ("per-node", "global"):
        raise OptionError(f"{say('update')} takes 'per-node' (option (a)) or 'global' (option (b)), got {update!r}")
    every = checked_count(given.get("evaluate_every", 10), say("evaluate_every"))
    evaluate = given.get("evaluate", "subsample")
    if evaluate not in ("subsample", "full"):
        raise OptionError(f"{say('evaluate')} takes 'subsample' (an estimate from a fixed subsample of the data "
                          f"plate, O(evaluation_size)) or 'full' (the exact bound, O(N)); got {evaluate!r}")
    tol = given.get("tol")
    if tol is not None and (not domains.real(tol) or not math.isfinite(tol) or not tol >= 0 or not every):
        raise OptionError(f"{say('tol')} stops a stochastic fit from its evaluated bounds: it takes a number >= 0, "
                          f"with {say('evaluate_every')} above 0; got tol={tol!r}, evaluate_every={every}")
    patience = given.get("patience", PATIENCE)
    if _count(patience) is None or patience < 1:
        raise OptionError(f"{say('patience')} takes a positive integer (evaluations without improvement before "
                          f"{say('tol')} stops the fit), got {patience!r}")
    monitors = given.get("monitors")
    if monitors is None:
        monitors = [DomainMonitor(action="stop"), ElboMonitor(patience=3, action="warn")]
    monitors = domains.instances(say("monitors"), monitors, Monitor,
                                 "monitors (vmp.DomainMonitor(), vmp.ElboMonitor(), vmp.NoiseMonitor())")
    return StochasticOptions(subsample, update, given.get("step"), every, evaluate, tuple(monitors), tol,
                             int(patience))


def _policies(policies, say) -> tuple:
    return domains.instances(say("policies"), policies, Policy,
                             "policies (vmp.SVIPlus(M), vmp.Annealing(...), vmp.Tempering(...), vmp.LocalTempering(...))")


def _init(init, say):
    if init is None or isinstance(init, (State, Mapping)) or init == "prior":
        return init  # a State: a warm start (init.py)
    raise domains.refuse(say("init"), "'prior', a dict from node names to initial means, or a State", init)


def _progress(progress, say):
    if progress is None or isinstance(progress, (bool, np.bool_)):
        return progress
    raise domains.refuse(say("progress"), "True, False or None (a bar when stderr is a terminal)", progress)


def _callback(callback, say):
    if callback is None or callable(callback):
        return callback
    raise domains.refuse(say("callback"), "a function callback(t, fit) (returning False stops the fit)", callback)


def _executor(executor):
    if executor is not None and not isinstance(executor, Executor):
        raise OptionError(f"executor= takes vmp.Serial(), vmp.Chunked(size=...) or vmp.DaskExecutor(client), "
                          f"got {executor!r}")
    return executor


def _checkpoints(given: dict, say) -> Checkpoints:
    every = given.get("checkpoint_every")
    if every is not None and (_count(every) is None or every < 1 or given.get("checkpoint") is None):
        raise OptionError(f"{say('checkpoint_every')} takes a positive integer, with {say('checkpoint')} a path")
    path, resume = given.get("checkpoint"), given.get("resume")
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise domains.refuse(say("checkpoint"), "a path (a str or a pathlib.Path)", path)
        writable(path, say("checkpoint"))
    if resume is not None and not isinstance(resume, (str, os.PathLike, Resumable)):
        raise domains.refuse(say("resume"), "a checkpoint's path, a FitResult or a Fit", resume)
    return Checkpoints(path, every, resume)


def check_restarts(n_init, keywords: Mapping[str, Any], say: Callable[[str], str] = python_name) -> int:
    """``n_init`` of ``fit``: a positive integer, without a checkpoint or a resume (its fits
    start from new seeds)."""
    if _count(n_init) is None or n_init < 1:
        raise OptionError(f"{say('n_init')} takes a positive integer, got {n_init!r}")
    if n_init > 1 and (keywords.get("resume") is not None or keywords.get("checkpoint") is not None):
        raise OptionError(f"{say('n_init')} restarts the fit from new seeds: it does not combine with "
                          f"{say('checkpoint')} or {say('resume')}")
    return int(n_init)


def _count(value) -> int | None:
    """``value`` as an int when it is an integer (not a bool), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def checked_count(value, name: str) -> int:
    """A non-negative integer option (``iterations``: 0 initializes only), or an OptionError."""
    count = _count(value)
    if count is None or count < 0:
        raise OptionError(f"{name} takes a non-negative integer, got {value!r}")
    return count


def checked_seed(seed) -> int | None:
    """``seed`` as a Python int (a numpy integer or 0-d integer array too), or None; anything
    else, a bool or a negative number (``np.random.default_rng`` refuses it) is an OptionError."""
    if seed is None:
        return None
    value = _count(seed)
    if value is None or value < 0:
        raise OptionError(f"seed= takes a non-negative integer or None, got {seed!r}")
    return value


def default_method(method: str | None, subsample) -> str:
    """``method`` as given; when not given, 'stochastic' with a ``subsample=`` and 'batch' without."""
    if method is not None:
        return method
    return "batch" if subsample is None else "stochastic"
