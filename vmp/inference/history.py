"""The history of a fit: one schema for batch and stochastic fits, one recorder, and its JSON form.

``result.history`` holds::

    iteration     (T,)  the step (sweep) numbers 1..T
    accesses      (T,)  cumulative observed-node element reads after each step
    step_seconds  (T,)  wall time of each step (evaluations excluded)
    rho           {node: (T,)}  step size of each stepped node (ones for batch VMP)
    change        {node: (T,)}  relative change ||lambda_t - lambda_(t-1)|| / ||lambda_(t-1)||
    evaluations   {"iteration": (E,), "accesses": (E,), "elbo": (E,), "stderr": (E,),
                   "heldout": (E,) or (0,)}    elbo is exact (stderr 0) or, for a minibatch fit
                   with evaluate="subsample", an estimate from a fixed subsample of the data plate
    bound_estimate (T,)  minibatch fits: each step's noisy bound (Hoffman et al.), free
    events        [{"iteration", "source", "node", "action", "message"}, ...]

Policies add per-step series under their own keys (``temperature``, ``effective_batch``);
``vmp.Adaptive(coupled=True)`` adds ``adaptive_factor`` {node: (T,)}, the factor f its nodes
share, as the step's rate read it (rho = max(min(1, f_0 x the rule's rate), min(f x the rule's
rate, c_* horizon / n)) times any back-off; ``Adaptive``'s docstring).
``vmp.diagnostics`` reads this; only the recorder writes it.
"""
from __future__ import annotations

import math

import numpy as np

#: history keys that hold one array per stepped node
PER_NODE = ("rho", "change")


class Recorder:
    """Appends one row per step and one per evaluation; its ``raw`` form is plain data that a
    checkpoint keeps, so that a resumed fit continues the same history."""

    def __init__(self, stepped: list[str], raw: dict | None = None):
        if raw is None:
            raw = {"iteration": [], "accesses": [], "step_seconds": [],
                   "rho": {n: [] for n in stepped}, "change": {n: [] for n in stepped},
                   "evaluations": {"iteration": [], "accesses": [], "elbo": [], "stderr": [], "heldout": []},
                   "events": []}
        self.raw = raw

    def step(self, t: int, accesses: int, seconds: float, rho: dict, change: dict, series: dict) -> None:
        h = self.raw
        for key, value in series.items():
            if isinstance(value, dict):  # one value per node
                for name, v in value.items():
                    h.setdefault(key, {}).setdefault(name, []).append(v)
            else:
                h.setdefault(key, []).append(value)
        h["step_seconds"].append(seconds)
        h["iteration"].append(t)
        h["accesses"].append(accesses)
        for name in h["rho"]:
            h["rho"][name].append(rho[name])
            h["change"][name].append(change[name])

    def evaluation(self, t: int, accesses: int, elbo: float, heldout: float | None = None,
                   stderr: float = 0.0) -> None:
        ev = self.raw["evaluations"]
        ev["iteration"].append(t)
        ev["accesses"].append(accesses)
        ev["elbo"].append(elbo)
        ev["stderr"].append(stderr)
        if heldout is not None:
            ev["heldout"].append(heldout)

    def event(self, t: int, source: str, node: str | None, action: str, message: str) -> None:
        self.raw["events"].append({"iteration": t, "source": source, "node": node, "action": action,
                                   "message": message})

    @property
    def elbo(self) -> list:
        return self.raw["evaluations"]["elbo"]

    def history(self) -> dict:
        """The history as arrays (see the module docstring)."""
        out = {}
        for key, value in self.raw.items():
            if key == "events":
                out[key] = [dict(e) for e in value]
            elif isinstance(value, dict):
                out[key] = {k: np.array(v) for k, v in value.items()}
            else:
                out[key] = np.array(value)
        return out


def plain(value):
    """JSON-ready: numpy scalars and arrays to Python, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def arrays(value):
    """The inverse of :func:`plain` for a history: lists of numbers to float arrays (null to
    nan); lists of records (events) stay lists of dicts."""
    if isinstance(value, dict):
        return {k: [dict(e) for e in v] if k == "events" else arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        if any(isinstance(v, dict) for v in value):
            return [dict(v) for v in value]
        return np.array([np.nan if v is None else v for v in value], dtype=float)
    return value


def to_dict(result) -> dict:
    """A fit's whole history and convergence state as a JSON-serializable dict.

    Keys: method, converged, diverged, interrupted, iterations, message, seconds, final_elbo,
    decrease (None or {node, amount}), elbo (the evaluated bounds), extra (``result.extra``), and
    history (the nested ``result.history``: arrays as lists, non-finite numbers as null).
    :func:`from_dict` reads it back into a FitResult.
    """
    extra = getattr(result, "extra", None) or {}
    return {
        "method": str(extra.get("method", "batch")),
        "converged": bool(result.converged),
        "diverged": bool(getattr(result, "diverged", False)),
        "interrupted": bool(getattr(result, "interrupted", False)),
        "iterations": int(result.iterations),
        "message": str(result.message),
        "seconds": plain(getattr(result, "seconds", None)),
        "final_elbo": plain(result.final_elbo),
        "decrease": plain(getattr(result, "decrease", None)),
        "elbo": plain(np.asarray(result.elbo, dtype=float)),
        "extra": plain(extra),
        "history": plain(getattr(result, "history", None) or {}),
    }
