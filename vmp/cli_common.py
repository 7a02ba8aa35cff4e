"""What the command line's modules share: its errors and exit codes, turning a library call's
errors into them, the fit options its flags give, and the Dask cluster a fit runs on."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CLIError(Exception):
    """A problem to report in one line (no traceback), with its exit status."""

    def __init__(self, message: str, code: int = EXIT_ERROR):
        super().__init__(message)
        self.code = code


class UsageError(CLIError):
    def __init__(self, message: str):
        super().__init__(message, EXIT_USAGE)


#: how a message names fit()'s options and values on this command line
FLAGS = {"method=stochastic": "--method stochastic", "method=batch": "--method batch",
         "subsample choices": "--minibatch PLATE:SIZE (minibatches of a data plate, SVI) or --per-node C "
                              "(each node update draws C children)",
         "subsample": "--minibatch/--per-node", "step": "--tau/--kappa/--rho1/--adaptive", "n_init": "--n-init"}

#: the flags (argparse dests) that set a fit() option: a message names those given
SETTERS = {"subsample": ("minibatch", "per_node"), "step": ("tau", "kappa", "rho1", "adaptive", "adaptive_rule")}


def is_given(args, dest: str) -> bool:
    value = getattr(args, dest, None)
    return value is not None and value is not False  # (0 is given: --rho1 0)


def flag_of(args, name: str) -> str:
    """How a message names fit()'s option ``name``: the flags given that set it, or its flag."""
    named = [f"--{dest.replace('_', '-')}" for dest in SETTERS.get(name, ()) if is_given(args, dest)]
    return ", ".join(named) or FLAGS.get(name, f"--{name.replace('_', '-')}")


def fit_keywords(args) -> dict:
    """fit()'s keywords from the flags (None where a flag was not given: fit()'s default)."""
    if is_given(args, "minibatch") and is_given(args, "per_node"):
        raise UsageError("give one of --minibatch and --per-node, not both")
    return dict(method=args.method, iterations=args.iterations, tol=args.tol, seed=args.seed,
                subsample=subsample_of(args), update=args.update, step=step_schedule(args),
                evaluate_every=args.evaluate_every, **state_options(args))


def step_schedule(args):
    """The step-size schedule the flags set (None: fit()'s default, RobbinsMonro())."""
    from .inference import Adaptive, RobbinsMonro

    if getattr(args, "adaptive", False) or getattr(args, "adaptive_rule", False):
        flag = "--adaptive-rule" if getattr(args, "adaptive_rule", False) else "--adaptive"
        named = [f for dest, f in (("tau", "--tau"), ("kappa", "--kappa"), ("rho1", "--rho1"),
                                   ("adaptive", "--adaptive")) if f != flag and is_given(args, dest)]
        if named:
            raise UsageError(f"{flag} sets every step size from the gradients: {', '.join(named)} "
                             f"set{'s' if len(named) == 1 else ''} another schedule")
        return Adaptive(coupled=flag == "--adaptive")
    if not any(is_given(args, dest) for dest in ("tau", "kappa", "rho1")):
        return None
    tau = 1.0 if args.tau is None else args.tau
    kappa = 0.6 if args.kappa is None else args.kappa
    rho1 = 1.0 if args.rho1 is None else args.rho1
    try:
        return RobbinsMonro(tau=tau, kappa=kappa, rho1=rho1)
    except ValueError:
        raise UsageError(f"the step size rho_t = rho1 ((t + tau) / (1 + tau))^-kappa needs "
                         f"--tau >= 0, 0 <= --kappa <= 1 and 0 < --rho1 <= 1; got tau={tau:g}, "
                         f"kappa={kappa:g}, rho1={rho1:g}") from None


def subsample_of(args):
    from .inference import Minibatch, PerNode

    if args.minibatch is not None:
        plate, size = args.minibatch
        return Minibatch(plate, size)
    return None if args.per_node is None else PerNode(children=args.per_node)


def state_options(args) -> dict:
    """--checkpoint, --checkpoint-every and --resume, as fit() options."""
    out = {}
    if getattr(args, "checkpoint", None):
        out["checkpoint"] = args.checkpoint
        if args.checkpoint_every:
            out["checkpoint_every"] = args.checkpoint_every
    if getattr(args, "resume", None):
        if not Path(args.resume).is_file():
            raise UsageError(f"--resume: no checkpoint file '{args.resume}'")
        out["resume"] = args.resume
    if getattr(args, "executor", None) is not None:
        out["executor"] = args.executor
    return out


def call(func, what: str, *args, **kwargs):
    """Call a builder, turning errors into CLIError (bad keyword: usage; others: model error)."""
    from .errors import VMPError

    try:
        return func(*args, **kwargs)
    except VMPError as err:
        raise CLIError(f"{what}: {err}") from None
    except TypeError as err:
        if "keyword argument" in str(err) or "positional argument" in str(err):
            raise UsageError(f"{what}: {err}") from None
        raise CLIError(f"{what} failed: {type(err).__name__}: {err}") from None
    except (ValueError, np.linalg.LinAlgError) as err:
        raise CLIError(f"{what} failed: {err}") from None


class Cluster:
    """--scheduler ADDRESS or --workers N: ``args.executor`` a DaskExecutor on that cluster
    (N local worker processes on 127.0.0.1), closed when the fit ends."""

    def __init__(self, args):
        self.args, self.open = args, []

    @staticmethod
    def options(group) -> None:
        group.add_argument("--scheduler", metavar="ADDRESS", help="run the sums over the data plate on the "
                           "Dask cluster at ADDRESS (e.g. tcp://127.0.0.1:8786)")
        group.add_argument("--workers", type=positive_int, metavar="N", help="run them on N local Dask "
                           "worker processes (a LocalCluster on 127.0.0.1)")

    def __enter__(self):
        address, workers = getattr(self.args, "scheduler", None), getattr(self.args, "workers", None)
        if address is None and workers is None:
            return self
        if address is not None and workers is not None:
            raise UsageError("--scheduler and --workers: give one (a running cluster, or N local workers)")
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("--scheduler/--workers need Dask: pip install 'vmp[dask]'") from None
        from . import DaskExecutor

        try:
            if workers is not None:
                self.open.append(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                              host="127.0.0.1", dashboard_address="127.0.0.1:0"))
            self.open.append(Client(address if address is not None else self.open[0], timeout=30))
        except (OSError, TimeoutError) as err:
            self.__exit__(None, None, None)
            raise CLIError(f"cannot reach the Dask scheduler {address or ''}: {err}") from None
        self.args.executor = DaskExecutor(self.open[-1])
        print(f"on {len(self.open[-1].nthreads())} Dask worker(s) at "
              f"{self.open[-1].scheduler.address}")
        return self

    def __exit__(self, *exc):
        for thing in reversed(self.open):
            thing.close()
        self.open = []
        return False


def integer(text: str, least: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'")
    return value


def positive_int(text: str) -> int:
    return integer(text, 1, "a positive integer")
