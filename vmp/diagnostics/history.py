"""Reading the recorded history of a fit: normalized arrays, series, a DataFrame.

The schema, the recorder and the JSON form belong to ``vmp.inference.history``; this module
only reads. Batch and stochastic fits record one layout in ``result.history``::

    iteration     (T,)  the step (sweep) numbers 1..T
    accesses      (T,)  cumulative observed-node element reads after each step
    step_seconds  (T,)  wall time of each step (ELBO evaluations excluded)
    rho           {node: (T,)}  step size of each stepped node (all ones for batch VMP)
    change        {node: (T,)}  relative change ||lambda_t - lambda_(t-1)|| / ||lambda_(t-1)||
    evaluations   {"iteration": (E,), "accesses": (E,), "elbo": (E,), "heldout": (E,) or (0,)}

Future step policies may add per-iteration keys such as ``temperature`` or ``effective_batch``
(an array of length T, or a dict from node names to such arrays); they are carried along.
A result without a history (built by hand) is read as batch-like: its ``elbo`` array is the
evaluation series at iterations 0, 1, ...
"""
from __future__ import annotations


import numpy as np

from ..inference.history import PER_NODE, to_dict as history_dict
from ..inference.result import from_dict

__all__ = ["PER_NODE", "OPTIONAL", "normalized", "series", "history_dict", "from_dict",
           "to_dataframe"]
#: optional per-iteration keys of future step policies, plotted when present
OPTIONAL = ("temperature", "effective_batch")


def _float(a) -> np.ndarray:
    return np.asarray(a, dtype=float).ravel()


def _method(result) -> str:
    extra = getattr(result, "extra", None) or {}
    return str(extra.get("method", "batch"))


def normalized(result) -> dict:
    """``result.history`` with every leaf a 1-D float array and every standard key present.

    Missing pieces are filled in: without ``evaluations`` the ELBO series of ``result.elbo`` at
    iterations 0, 1, ...; without ``iteration`` the steps 1..len(elbo)-1; missing per-node dicts
    are empty. Unknown keys are kept (arrays as float arrays, dicts of arrays likewise).
    """
    raw = dict(getattr(result, "history", None) or {})
    elbo = _float(getattr(result, "elbo", []))
    out: dict = {}
    for key, value in raw.items():
        if key == "evaluations":
            continue
        if key == "events":
            out[key] = [dict(e) for e in value]
            continue
        if isinstance(value, dict):
            out[key] = {str(n): _float(v) for n, v in value.items()}
        else:
            try:
                out[key] = _float(value)
            except (TypeError, ValueError):
                out[key] = value
    ev = dict(raw.get("evaluations") or {})
    if "elbo" not in ev:
        ev = {"iteration": np.arange(elbo.size, dtype=float), "elbo": elbo}
    ev = {k: _float(v) for k, v in ev.items()}
    n_ev = ev["elbo"].size
    ev.setdefault("iteration", np.arange(n_ev, dtype=float))
    ev.setdefault("accesses", np.full(n_ev, np.nan))
    ev.setdefault("heldout", np.zeros(0))
    out["evaluations"] = ev
    if "iteration" not in out:
        last = int(np.nanmax(ev["iteration"])) if n_ev and np.isfinite(ev["iteration"]).any() else 0
        out["iteration"] = np.arange(1, last + 1, dtype=float)
    steps = out["iteration"].size
    for key in ("accesses", "step_seconds"):
        out.setdefault(key, np.full(steps, np.nan))
    for key in PER_NODE:
        out.setdefault(key, {})
    return out


def series(result) -> dict[str, np.ndarray]:
    """The evaluation series: ``{"iteration", "accesses", "elbo"}`` (and ``"heldout"`` when it
    was recorded), 1-D float arrays aligned with each other."""
    ev = normalized(result)["evaluations"]
    out = {k: ev[k] for k in ("iteration", "accesses", "elbo")}
    if ev["heldout"].size == ev["elbo"].size and ev["heldout"].size:
        out["heldout"] = ev["heldout"]
    return out


def to_dataframe(result):
    """The history as a pandas DataFrame: one row per iteration (step) with columns
    ``iteration``, ``accesses``, ``step_seconds``, ``rho_<node>``, ``change_<node>`` (and any
    per-iteration policy series such as ``temperature``), outer-merged on ``iteration`` with the
    evaluations (``elbo``, and ``heldout`` when recorded). Row 0 is the initial bound, before any
    step (its step columns are NaN). Raises ImportError when pandas is not installed."""
    try:
        import pandas as pd
    except ImportError as err:
        raise ImportError("to_dataframe needs pandas, which is not installed: pip install pandas "
                          "(or use history_dict(result) for plain lists)") from err
    h = normalized(result)
    steps = h["iteration"]
    columns = {"iteration": steps.astype(np.int64)}
    for key, value in h.items():
        if key in ("iteration", "evaluations"):
            continue
        if isinstance(value, dict):
            for node, arr in value.items():
                if isinstance(arr, np.ndarray) and arr.size == steps.size:
                    columns[f"{key}_{node}"] = arr
        elif isinstance(value, np.ndarray) and value.size == steps.size:
            columns[key] = value
    per_step = pd.DataFrame(columns)
    ev = h["evaluations"]
    evals = {"iteration": ev["iteration"].astype(np.int64), "eval_accesses": ev["accesses"],
             "elbo": ev["elbo"]}
    if ev["heldout"].size == ev["elbo"].size and ev["heldout"].size:
        evals["heldout"] = ev["heldout"]
    frame = per_step.merge(pd.DataFrame(evals), on="iteration", how="outer").sort_values("iteration")
    if "accesses" in frame:
        frame["accesses"] = frame["accesses"].fillna(frame["eval_accesses"])
    else:
        frame["accesses"] = frame["eval_accesses"]
    frame = frame.drop(columns="eval_accesses").reset_index(drop=True)
    first = ["iteration", "accesses"]
    return frame[first + [c for c in frame.columns if c not in first]]
