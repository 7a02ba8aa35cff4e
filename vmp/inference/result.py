"""What a fit returns, and its file: ``result.save(path)`` / ``vmp.load(path)``."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import CheckpointError, ConvergenceError, VMPError
from ..registry import Registry
from .checkpoint import check, fingerprint, reading
from .engine import Engine
from .history import arrays, to_dict
from .state import Resumable, State


#: FitResult's readers by name (plot, summary, to_dataframe, to_arviz): functions of the reading
#: layer, which imports inference, registered by ``vmp/readers.py`` when vmp is imported
READERS = Registry("vmp/readers.py", prefix="FitResult.")
#: the reading layer's function behind ``FitResult.<name>``
reader = READERS.lookup


@dataclass
class FitResult(Resumable):
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
    fingerprint: dict | None = field(default=None, repr=False)  # (checkpoint.fingerprint: what it is a fit of)

    @property
    def final_elbo(self) -> float:
        return float(self.elbo[-1]) if len(self.elbo) else float("nan")

    # ----- readers: the reading layer's functions (vmp.diagnostics, vmp.export), held in READERS
    def plot(self, filename=None):
        """A matplotlib dashboard of the convergence diagnostics (see vmp.diagnostics.plot)."""
        return reader("plot")(self, filename)

    def summary(self, model=None) -> str:
        """A text table of the convergence state and, given the model, the posterior."""
        return reader("summary")(self, model)

    def to_dataframe(self):
        """One row per step as a pandas DataFrame (needs pandas)."""
        return reader("to_dataframe")(self)

    def to_arviz(self, model, draws: int = 1000, seed: int | None = 0, predictive: bool = True):
        """Draws from the fitted q of ``model`` as ArviZ InferenceData (see vmp.export.to_arviz)."""
        return reader("to_arviz")(self, model, draws, seed, predictive)

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
                          final_step=self.state.step, fingerprint=self.fingerprint)

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
    moments are filled in and ``model.state`` is set to the saved final state; a file of another
    model (its nodes, families, plates or shapes differ) or a damaged file is a CheckpointError
    saying what differs."""
    result = read(path)
    if model is not None:
        match(result, model, path)
        model.state = result.state
    return result


def read(path) -> FitResult:
    """:meth:`FitResult.save`'s file as a FitResult without moments (no model to form them)."""
    state, docs = State.load(path)
    with reading(path):
        result = from_dict(docs["result"])
        final = state.updated({}, step=int(docs["final_step"]))
        final.natural = {k: tuple(v) for k, v in docs["final_natural"].items()}
        final.moments = {}
        result.state, result.resume_point = final, (state, docs["raw_history"])
        result.fingerprint = docs.get("fingerprint")
    return result


def match(result: FitResult, model, path=None, fit: dict | None = None, who: str = "") -> None:
    """Check that ``result`` is a fit of ``model`` (and, given ``fit``, of a fit laid out as
    :func:`~vmp.inference.checkpoint.fit_fingerprint` says), and fill in the moments of its
    states that lack them; else a CheckpointError prefixed by ``who``."""
    model.compile()  # (a partially observed node is hidden once compiled: ``missing.resolve``)
    check(result.fingerprint, fingerprint(model, fit), path, who)
    hidden = {n.name: n for n in model.nodes.values() if not n.observed}
    where = "this result" if path is None else repr(str(path))
    states = [result.state] + ([result.resume_point[0]] if result.resume_point is not None else [])
    for state in states:
        unknown = sorted(set(state.natural) - set(hidden))
        if unknown:
            raise CheckpointError(f"{who}{where} holds node(s) {unknown} that model '{model.name}' lacks or "
                                  f"observes (its hidden nodes: {sorted(hidden)})")
        if not state.moments:
            form = Engine.moments if state is result.state else (lambda node, v: node.family.moments(v))
            with reading(path or "this result"):
                _in_domain(state, hidden, f"{who}{where}")
                state.moments = {k: tuple(form(hidden[k], v)) for k, v in state.natural.items()}
        for name, moments in state.moments.items():
            want = [tuple(s) for s in hidden[name].component_shapes()]
            if [np.shape(m) for m in moments] != want:
                raise CheckpointError(f"{who}{where}: node '{name}' has moments of shapes "
                                      f"{[np.shape(m) for m in moments]} in the file, {want} in the model")


def _in_domain(state: State, hidden: dict, where: str) -> None:
    """A CheckpointError unless every natural parameter read lies in its family's domain (a
    fit never keeps one outside: a step that leaves it is rejected)."""
    for name, natural in state.natural.items():
        try:
            Engine.check_domain(hidden[name], tuple(np.asarray(a) if isinstance(a, (float, np.generic)) else a
                                                    for a in natural))
        except ConvergenceError as err:
            raise CheckpointError(f"{where} is damaged: {err.args[0].replace('update left', 'its q lies outside')}") \
                from None


def resume_state(resume, model, fit: dict | None = None) -> tuple[State, dict]:
    """(State, raw history) to continue a fit of ``model`` (laid out as ``fit`` says) from: a
    FitResult or a checkpoint file; checked against the model and the fit, with the moments
    filled in."""
    path = None
    if not isinstance(resume, FitResult):
        path, resume = resume, read(resume)
    if resume.resume_point is None:
        raise VMPError("resume=: this result carries no state (it was read from a history alone)")
    match(resume, model, path, fit, "resume=: ")
    state, raw = resume.resume_point
    moments = dict(state.moments)
    for name, natural in state.natural.items():
        if model[name].clamp is not None:  # as a sweep forms them (the same bits as the fit saved had)
            moments[name] = Engine.moments(model[name], natural)
    return replace(state, moments=moments), raw
