"""Batch VMP: coordinate ascent over the hidden nodes; the ELBO never decreases."""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..errors import ConvergenceError
from .engine import Engine
from .init import initialize
from .progress import Progress
from .result import FitResult


class ElboDecreaseWarning(UserWarning):
    """The bound fell during batch VMP: a bug or a numerical breakdown, never convergence."""


def fit(model, *, method: str = "batch", iterations: int = 200, tol: float = 1e-6, seed: int | None = 0,
        init=None, decrease_tol: float = 1e-9, on_decrease: str = "warn", progress: bool | None = None,
        **options) -> FitResult:
    """Run batch variational message passing (Winn & Bishop 2005, section 3.2), or with
    ``method="stochastic"`` stochastic VMP (see :func:`vmp.inference.stochastic.fit_stochastic`,
    which takes ``subsample``, ``update``, ``step``, ``iterations``, ``evaluate_every``).

    iterations: sweeps at most; tol: stop when the relative ELBO change is below it; seed: for
    initialization; init: 'prior' or {name: initial mean}; on_decrease: 'warn' or 'raise' when an
    update lowers the ELBO by more than ``decrease_tol`` relative (reported, never "converged").
    """
    if method == "stochastic":
        from .stochastic import fit_stochastic

        return fit_stochastic(model, init=init, seed=seed, iterations=iterations, progress=progress, **options)
    if method != "batch":
        raise ValueError(f"unknown method {method!r}; use 'batch' or 'stochastic'")
    if options:
        raise TypeError(f"batch VMP does not take {sorted(options)}")
    if on_decrease not in ("warn", "raise"):
        raise ValueError("on_decrease must be 'warn' or 'raise'")
    engine = Engine(model)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    initialize(engine, rng, init)
    history = [engine.elbo()]
    schedule = engine.schedule()
    record = _Record(engine, schedule)
    bar = Progress(iterations, progress, "batch VMP")
    converged, message, decrease = False, "reached the iteration limit", None
    it = 0
    for it in range(1, iterations + 1):
        tick = time.perf_counter()
        for node in schedule:
            old = node.natural
            engine.update(node)
            record.change(node, old)
        record.step(it, time.perf_counter() - tick)
        value = engine.elbo()
        prev = history[-1]
        history.append(value)
        bar.update(value)
        if not np.isfinite(value):
            message = "the ELBO is not finite"
            break
        change = value - prev
        if change < -decrease_tol * max(abs(prev), 1.0):
            decrease = _locate_decrease(engine, schedule, value)
            message = (f"the ELBO decreased by {-change:.3g} at iteration {it}; "
                       f"in a diagnostic sweep the update of node '{decrease['node']}' lowered it by "
                       f"{decrease['amount']:.3g}")
            if on_decrease == "raise":
                raise ConvergenceError(message)
            warnings.warn(message, ElboDecreaseWarning, stacklevel=2)
            break
        if change <= tol * abs(value):
            converged, message = True, f"relative ELBO change below {tol:g}"
            break
    bar.close()
    elbo = np.array(history)
    return FitResult(elbo, converged, it, message, decrease, time.perf_counter() - start,
                     extra={"method": "batch"}, history=record.history(elbo),
                     diverged=not np.all(np.isfinite(elbo)))


class _Record:
    """Per-sweep history in the same layout as stochastic VMP's (rho = 1 for every node)."""

    def __init__(self, engine, schedule):
        self.engine, self.schedule = engine, schedule
        self.per_sweep = sum(int(np.prod(f.child.plate_shape)) * len(f.nodes())
                             for f in engine.factors.values() if f.child.observed)
        self.rows = {"iteration": [], "accesses": [], "step_seconds": []}
        self._change = {n.name: [] for n in schedule}

    def change(self, node, old) -> None:
        from .stochastic import _relative_change

        self._change[node.name].append(_relative_change(old, node.natural))

    def step(self, it, seconds) -> None:
        self.rows["iteration"].append(it)
        self.rows["accesses"].append(it * self.per_sweep)
        self.rows["step_seconds"].append(seconds)

    def history(self, elbo) -> dict:
        out = {k: np.array(v) for k, v in self.rows.items()}
        n = len(out["iteration"])
        out["rho"] = {name: np.ones(n) for name in self._change}
        out["change"] = {name: np.array(v) for name, v in self._change.items()}
        its = np.arange(len(elbo))
        out["evaluations"] = {"iteration": its, "accesses": its * self.per_sweep, "elbo": elbo,
                              "heldout": np.array([])}
        return out


def _locate_decrease(engine, schedule, start_value) -> dict:
    """One more sweep from the current state, evaluating the bound after each node's update,
    then back to the state the fit stopped in. Names the node whose update lowers the bound."""
    after = engine.snapshot()
    worst = {"node": None, "amount": 0.0}
    value = start_value
    for node in schedule:
        engine.update(node)
        new = engine.elbo()
        if value - new > worst["amount"]:
            worst = {"node": node.name, "amount": value - new}
        value = new
    engine.restore(after)
    if worst["node"] is None:
        worst["node"] = schedule[-1].name if schedule else "?"
    return worst
