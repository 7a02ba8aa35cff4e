"""What a fit returns, and its file: ``result.save(path)`` / ``vmp.load(path)``."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import VMPError
from .engine import Engine
from .history import arrays, to_dict
from .state import State


@dataclass
class FitResult:
    """ELBO history and convergence state of one call to ``model.fit``.

    ``state`` is the fit's final State (every node's q); ``resume_point`` is what a resumed fit
    continues from (the state and raw history before the closing evaluation, which is done for
    the report only, so that fitting n + n steps gives the bits of fitting 2n).
    """

    elbo: np.ndarray
    converged: bool
    iterations: int
    message: str
    decrease: dict | None = None
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)
    diverged: bool = False
    interrupted: bool = False
    state: State | None = field(default=None, repr=False)
    resume_point: tuple | None = field(default=None, repr=False)  # (State, raw history)

    @property
    def final_elbo(self) -> float:
        return float(self.elbo[-1]) if len(self.elbo) else float("nan")

    # ----- readers: facades on the reading layer (vmp.diagnostics, vmp.export), imported when called
    def plot(self, filename=None):
        """A matplotlib dashboard of the convergence diagnostics (see vmp.diagnostics.plot)."""
        from ..diagnostics import plot

        return plot(self, filename)

    def summary(self, model=None) -> str:
        """A text table of the convergence state and, given the model, the posterior."""
        from ..diagnostics import summary

        return summary(self, model)

    def to_dataframe(self):
        """One row per step as a pandas DataFrame (needs pandas)."""
        from ..diagnostics import to_dataframe

        return to_dataframe(self)

    def to_arviz(self, model, draws: int = 1000, seed: int | None = 0, predictive: bool = True):
        """Draws from the fitted q of ``model`` as ArviZ InferenceData (see vmp.export.to_arviz)."""
        from ..export import to_arviz

        return to_arviz(model, draws, seed, predictive, result=self)

    def to_dict(self) -> dict:
        """History and convergence state as JSON-ready data (see vmp.inference.history.to_dict)."""
        return to_dict(self)

    @staticmethod
    def from_dict(data: dict) -> "FitResult":
        return from_dict(data)

    def save(self, path) -> None:
        """Write the final state, the resume point and the history to one ``.npz`` file
        (arrays and JSON; no pickle). Read it back with :func:`vmp.load`."""
        if self.state is None:
            raise VMPError("this result has no state to save (it was built from a history alone)")
        resume_state, raw = self.resume_point if self.resume_point is not None else (self.state, None)
        final = {k: list(v) for k, v in self.state.natural.items()}
        resume_state.save(path, result=self.to_dict(), raw_history=raw, final_natural=final,
                          final_step=self.state.step)

    def __repr__(self) -> str:
        flags = ", interrupted=True" if self.interrupted else ""
        bound = self.extra.get("bound")
        elbo = (f"elbo={self.final_elbo:.6g}" if bound in (None, "exact") else
                f"elbo={self.final_elbo:.6g} ({bound})")
        return (f"FitResult(converged={self.converged}, iterations={self.iterations}, "
                f"{elbo}, message={self.message!r}{flags})")


def from_dict(data: dict) -> FitResult:
    """A :class:`FitResult` from :func:`~vmp.inference.history.to_dict`'s output (e.g. a report's
    history.json loaded with ``json.load``), for plotting or tabulating a saved fit."""
    elbo = arrays(list(data.get("elbo") or []))
    extra = dict(data.get("extra") or {})
    extra.setdefault("method", data.get("method", "batch"))
    return FitResult(np.asarray(elbo, dtype=float), bool(data.get("converged", False)),
                     int(data.get("iterations", 0)), str(data.get("message", "")),
                     data.get("decrease"), float(data.get("seconds") or 0.0), extra=extra,
                     history=arrays(dict(data.get("history") or {})),
                     diverged=bool(data.get("diverged", False)),
                     interrupted=bool(data.get("interrupted", False)))


def load(path, model=None) -> FitResult:
    """A FitResult from :meth:`FitResult.save`'s file. Given the ``model`` it was fitted on, the
    moments are filled in and ``model.state`` is set to the saved final state."""
    if model is not None:
        model.compile()  # (a partially observed node is hidden once compiled: ``missing.resolve``)
    families = None if model is None else {n.name: n.family for n in model.nodes.values() if not n.observed}
    state, docs = State.load(path, families)
    result = from_dict(docs["result"])
    final = state.updated({}, step=int(docs["final_step"]))
    final.natural = {k: tuple(v) for k, v in docs["final_natural"].items()}
    final.moments = {} if model is None else {k: Engine.moments(model[k], v) for k, v in final.natural.items()}
    result.state = final
    result.resume_point = (state, docs["raw_history"])
    if model is not None:
        model.state = final
    return result


def resume_state(resume, model) -> tuple[State, dict]:
    """(State, raw history) to continue a fit of ``model`` from: a FitResult or a checkpoint
    file; checked against the model's hidden nodes, with their moments filled in."""
    if not isinstance(resume, FitResult):
        resume = load(resume, model)
    if resume.resume_point is None:
        raise VMPError("resume=: this result carries no state (it was read from a history alone)")
    state, raw = resume.resume_point
    families = {n.name: n.family for n in model.nodes.values() if not n.observed}
    if not set(state.natural) <= set(families):
        raise VMPError(f"resume=: the saved state has nodes {sorted(state.natural)}, "
                       f"the model's hidden nodes are {sorted(families)}")
    moments = dict(state.moments) or {k: tuple(families[k].moments(v)) for k, v in state.natural.items()}
    for name, natural in state.natural.items():
        if model[name].clamp is not None:  # as a sweep forms them (the same bits as the fit saved had)
            moments[name] = Engine.moments(model[name], natural)
    state = replace(state, moments=moments)
    for name, moments in state.moments.items():
        want = [tuple(s) for s in model[name].component_shapes()]
        if [m.shape for m in moments] != want:
            raise VMPError(f"resume=: node '{name}' has moments of shapes {[m.shape for m in moments]} in the "
                           f"saved state, {want} in the model")
    return state, raw
