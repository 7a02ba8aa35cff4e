"""Fits that follow a stream: each chunk of data updates the global nodes' q.

Streaming variational Bayes (Broderick, Boyd, Wibisono, Wilson & Jordan 2013, SDA-Bayes run
serially): batch VMP on chunk b with the prior of the globals replaced by the posterior after
chunk b - 1,

    q_b = VMP( chunk b ; prior eta_b ),     eta_{b+1} = forget * lambda_b + (1 - forget) * eta_0,

where lambda_b are the globals' posterior natural parameters and eta_0 their declared prior's.
For conjugate globals without locals, forget = 1 gives the batch posterior on all the data
(natural parameters add the chunks' sufficient statistics). ``forget`` < 1 is exponential
forgetting: the prior is pulled back toward eta_0 after every chunk, so old chunks count by
forget^age and a drifting q can follow the data. Local nodes (on the stream's plate) are
fitted fresh per chunk, from the globals' q.

Population variational Bayes (``population=alpha``, McInerney, Ranganath & Blei 2015): the
prior stays eta_0; each chunk runs stochastic steps whose minibatches stand for a population of
alpha points (``vmp.inference.population``), the step counter continuing across chunks.

The stream's state is the globals' q, the number of chunks seen, the step counter and the
schedules' states (population VB: the chunks' steps are one stochastic run):
``save(path)`` writes it (with eta_0, the prior the stream began with) as a State file and
``model.stream(..., resume=path)`` continues with the same bits.
"""
from __future__ import annotations

import math
import warnings
from contextlib import contextmanager

import numpy as np

from ..errors import DataError, GraphError, OptionError, ShapeError
from ..factors.natural_prior import NaturalPrior
from ..graph.change import relative_change
from ..graph.data import is_lazy
from ..graph.expressions import Constant, Gather, random_nodes
from ..graph.leaves import Context
from ..graph.replace import plates_of, set_data
from .engine import Engine
from .loop import Fit
from .options import check, checked_seed
from .population import Population
from .result import FitResult
from .state import LoopState, State
from .steps import complete
from .subsample import check_data_plate, linked_plates


class DriftWarning(UserWarning):
    """A chunk's bound per element is far below the earlier chunks': the data may have changed."""


#: a chunk whose bound per element lies below the earlier chunks' median (with at least
#: DRIFT_HISTORY of them) by more than DRIFT_DEVIATIONS robust deviations and DRIFT_NATS nats
#: (each element of the chunk e times less likely than before) is reported as a change in the data
DRIFT_DEVIATIONS = 6.0
DRIFT_NATS = 1.0
DRIFT_HISTORY = 3


class Stream:
    """``model.stream(plate, forget=1.0, population=None, ...)``; ``update(chunk)`` fits one chunk.

    ``batch`` (population VB only): the minibatch size (default: the whole chunk); ``steps``:
    stochastic steps per chunk (default: one pass, ceil(chunk / batch)). Other keywords are the
    chunk fits' options (``iterations``, ``tol``, ``seed``, ``init`` for the first chunk, a
    ``step`` schedule...). ``resume``: a file written by :meth:`save`."""

    def __init__(self, model, plate: str, forget: float = 1.0, population: float | None = None, *,
                 batch: int | None = None, steps: int | None = None, resume=None, **options):
        check_data_plate(model, plate, "model.stream")
        self.model, self.plate = model, plate
        self.forget = _forget(forget)
        if population is not None:
            if self.forget != 1.0:
                raise OptionError("model.stream: forget= applies to streaming VB; population VB keeps the "
                                  "declared prior (give one of forget= and population=)")
        self.population = None if population is None else float(population)
        self.batch, self.steps = _count(batch, "batch"), _count(steps, "steps")
        if self.population is None and (batch is not None or steps is not None):
            raise OptionError("model.stream: batch= and steps= apply to population VB (population=alpha)")
        for key in ("method", "subsample", "checkpoint", "checkpoint_every", "resume"):
            if key in options:
                raise OptionError(f"model.stream: {key}= is set by the stream (per chunk fits), not an option")
        self.method = "batch" if self.population is None else "stochastic"
        probe = {"subsample": Population(plate, 1, self.population)} if self.population is not None else {}
        check({"method": self.method, **probe, **options})
        self.options = options
        self.seed = checked_seed(options.pop("seed", 0))
        self.plates = {plate, *linked_plates(model, plate)}
        self.links = _links(model, plate)
        self.locals, self.globals = self._split()
        self.prior0 = self._declared_priors() if self.population is None else {}
        self.posterior: dict | None = None
        self.chunks, self.step, self.bounds = 0, 0, []
        self.schedules: dict = {}  # population VB: the schedules' states, continuing over the chunks
        #: the records of the chunks this object fitted (``extra["stream"]`` of each)
        self.records: list[dict] = []
        if resume is not None:
            self._resume(resume)

    # ----- structure ----------------------------------------------------------------------
    def _split(self) -> tuple[list, list]:
        """(locals, globals): hidden nodes on the stream's plates, and the others; every global
        of streaming VB must have constant parents (its prior is what the stream replaces)."""
        model = self.model
        model.compile()
        hidden = [n for n in model.nodes.values() if not n.observed]
        local = [n for n in hidden if any(p.name in self.plates for p in n.plates)]
        glob = [n for n in hidden if n not in local]
        if self.population is None:
            for node in glob:
                parents = sorted({p.name for e in node.parents.values() if not isinstance(e, Constant)
                                  for p in random_nodes(e)})
                if parents:
                    raise GraphError(f"model.stream: global node '{node.name}' has random parent(s) {parents}; "
                                     f"streaming VB moves each global's posterior into its own prior, which "
                                     f"needs constant hyperparameters (a joint node such as GaussianWishart, "
                                     f"or population=alpha, which keeps the declared prior)")
        return local, glob

    def _declared_priors(self) -> dict:
        """eta_0 of every global: its own factor's message (constant parents)."""
        factors, _ = self.model.compile()
        ctx = Context(state=State())
        return {n.name: tuple(np.array(a, float) for a in factors[n.name].messages(n, ctx=ctx))
                for n in self.globals}

    def prior(self) -> dict | None:
        """The globals' prior for the next chunk, eta = forget * lambda + (1 - forget) * eta_0
        (None before the first chunk: the declared prior)."""
        if self.posterior is None:
            return None
        f = self.forget
        if f == 1.0:
            return dict(self.posterior)
        return {name: tuple(f * lam + (1.0 - f) * eta0 for lam, eta0 in zip(post, self.prior0[name]))
                for name, post in self.posterior.items()}

    @contextmanager
    def _priors(self, prior: dict | None):
        """The globals' factors replaced by ``prior`` (NaturalPrior) while a chunk is fitted."""
        if prior is None:
            yield
            return
        model, kept = self.model, {}
        for node in self.globals:
            kept[node.name] = node.factor
            node.factor = NaturalPrior(node.event_shape, node.family, prior[node.name])
        model._compiled = None
        try:
            yield
        finally:
            for node in self.globals:
                node.factor = kept[node.name]
            model._compiled = None

    # ----- one chunk ----------------------------------------------------------------------
    def update(self, chunk: dict) -> FitResult | None:
        """Fit one chunk ({observed node or vmp.Data name: rows}); the globals' posterior becomes
        the next chunk's prior. Returns the chunk's FitResult (bound, history; its
        ``extra['stream']``: the chunk's number, size, bound per element and each global's
        relative change; ``extra['stream_chunks']``: the records of every chunk this stream fitted,
        which ``result.plot()`` draws by chunk). An empty chunk changes nothing (a warning;
        returns None)."""
        chunk, n = self._checked(chunk)
        if n == 0:
            warnings.warn(f"model.stream: an empty chunk of plate '{self.plate}' changes nothing", UserWarning,
                          stacklevel=2)
            return None
        model = self.model
        model.state = None  # (set_data would infer the locals of the last chunk's q again)
        set_data(model, chunk, {}, {self.plate: n})
        seed = int(np.random.SeedSequence([self.seed or 0, self.chunks]).generate_state(1)[0])
        with self._priors(None if self.population else self.prior()):
            fit = Fit(model, method=self.method, init=self._start(), seed=seed, **self._fit_options(n))
            fit.run(self._steps(n))
            result = fit.result()
        if result.interrupted:
            model.state = None if self.posterior is None else self._globals_state(Engine(model), self.step)
            raise KeyboardInterrupt(f"model.stream: interrupted during chunk {self.chunks + 1}; the stream is "
                                    f"at the end of chunk {self.chunks}")
        return self._advance(result, n)

    def _checked(self, chunk: dict) -> tuple[dict, int]:
        """The chunk as {name: array} and its number of elements of the plate: every observed
        node on the stream's plates (and each gather index into the plate) present, all of one
        length along their plate; else a DataError or ShapeError naming the node."""
        if not isinstance(chunk, dict):
            raise DataError(f"model.stream: a chunk is a dict from observed node names to their rows, got "
                            f"{type(chunk).__name__}")
        model = self.model
        wanted = [n.name for n in model.nodes.values() if n.has_data and n.plates and n.plates[0].name in self.plates]
        unknown = [k for k in chunk if k not in model.nodes and k not in model.inputs]
        if unknown:
            raise DataError(f"model.stream: the chunk names {unknown}, which are not nodes or inputs of model "
                            f"'{model.name}'")
        wanted += [d.name for d in model.inputs.values() if any(p.name in self.plates for p in plates_of(d))]
        missing = [k for k in wanted if k not in chunk]
        if missing:
            raise DataError(f"model.stream: the chunk has no rows for {missing} of plate(s) {sorted(self.plates)}")
        out, sizes = {}, {}
        for name, rows in chunk.items():
            rows = rows if is_lazy(rows) else np.asarray(rows)
            node = model.nodes.get(name)
            if node is not None:
                _check_rows(node, rows)
                if node.plates and node.plates[0].name in self.plates:
                    sizes.setdefault(node.plates[0].name, {})[name] = rows.shape[0]
            out[name] = rows
        for plate, by_node in sizes.items():
            if len(set(by_node.values())) > 1:
                raise ShapeError(f"model.stream: the chunk's nodes have different numbers of rows along plate "
                                 f"'{plate}': {by_node}")
        n = next(iter(sizes.get(self.plate, {}).values()), None)
        return self._linked_rows(out, n)

    def _linked_rows(self, chunk: dict, n: int | None) -> tuple[dict, int]:
        """The chunk with each gather index into the plate (a token's document) renumbered to
        the chunk's elements, and their number n: positions 0..n-1 when the plate has rows of
        its own, else the distinct ids of the index in increasing order (a chunk of whole
        documents, under any ids)."""
        for name in self.links:
            index = np.asarray(chunk[name])
            if index.ndim != 1 or not (np.issubdtype(index.dtype, np.integer) or index.size == 0):
                raise ShapeError(f"model.stream: the chunk's '{name}' (each element's row of plate "
                                 f"'{self.plate}') must be a 1-D integer array, got shape {index.shape}, dtype "
                                 f"{index.dtype}")
            if n is not None:
                if index.size and (index.min() < 0 or index.max() >= n):
                    raise DataError(f"model.stream: the chunk's '{name}' must index its {n} rows of plate "
                                    f"'{self.plate}', got values in [{index.min()}, {index.max()}]")
                continue
            ids, inverse = np.unique(index, return_inverse=True)
            chunk[name], n = inverse.reshape(-1).astype(np.int64), ids.size
        return chunk, 0 if n is None else n

    def _start(self):
        """The chunk fit's start: after the first chunk, the globals at their last q (with the
        locals given them, for batch VMP); before it, the fits' ``init`` (by default a builder's
        ``model.start`` of the globals)."""
        if self.posterior is None:
            start = {k: v for k, v in (self.model.start or {}).items() if k in {g.name for g in self.globals}}
            return self.options.get("init", start or None)
        engine = Engine(self.model)
        state = self._globals_state(engine, self.step if self.population is not None else 0)
        if self.population is not None:
            return state
        return complete(engine, state, [n for n in engine.hidden if n in self.locals])

    def _globals_state(self, engine, step: int) -> State:
        """A State holding the globals' last q (their moments formed again) and, for population
        VB, the step counter and the schedules' states, from which the next chunk's steps go on."""
        state = State({}, {}, step, loop=LoopState(schedules=dict(self.schedules)))
        for node in self.globals:
            natural = self.posterior[node.name]
            state = state.updated({node.name: (natural, engine.moments(node, natural))})
        return state

    def _fit_options(self, n: int) -> dict:
        options = {k: v for k, v in self.options.items() if k != "init"}
        if self.population is not None:
            size = min(self.batch or n, n)
            options["subsample"] = Population(self.plate, size, self.population)
        return options

    def _steps(self, n: int) -> int | None:
        if self.population is None:
            return None
        size = min(self.batch or n, n)
        return self.steps or math.ceil(n / size)

    def _advance(self, result: FitResult, n: int) -> FitResult:
        """The stream after a fitted chunk: its globals' posterior, counters and diagnostics."""
        state = result.state
        new = {g.name: tuple(np.array(a) for a in state.natural[g.name]) for g in self.globals}
        change = {name: (float("nan") if self.posterior is None else
                         float(relative_change(self.posterior[name], new[name]))) for name in new}
        per = float(result.final_elbo) / n
        drift = _drift(per, self.bounds)
        self.posterior = new
        if self.population is not None:
            self.step = int(state.step)  # the stochastic steps so far: rho_t continues
            self.schedules = dict(state.loop.schedules)
        self.chunks += 1
        self.bounds.append(per)
        result.extra["stream"] = {"chunk": self.chunks, "rows": n, "bound_per_element": per, "change": change,
                                  "drift": drift}
        self.records.append(result.extra["stream"])
        result.extra["stream_chunks"] = list(self.records)  # the dashboard's chunk panels
        if drift:
            warnings.warn(f"model.stream: chunk {self.chunks}'s bound per element {per:.4g} is far below the "
                          f"earlier chunks' (median {np.median(self.bounds[:-1]):.4g}): the data may have "
                          f"changed", DriftWarning, stacklevel=3)
        return result

    def bound(self, data: dict) -> float:
        """The bound on ``data`` (rows of the plate, e.g. all data seen, or held-out rows) of the
        model as declared, with the globals at the stream's q and the locals inferred given
        them; the model's state is left there (``model["z"].mean`` reads those rows' q)."""
        if self.posterior is None:
            raise OptionError("model.stream: no chunk fitted yet")
        data, n = self._checked(data)
        model = self.model
        model.state = None
        set_data(model, data, {}, {self.plate: n})
        engine = Engine(model)
        model.state = complete(engine, self._globals_state(engine, 0), [n for n in engine.hidden if n in self.locals])
        return engine.elbo(model.state)

    def read(self, source, rows: int | None = None, columns: dict | None = None, lazy: bool = False):
        """The chunks of ``source`` for this stream, read one at a time (arrays, iterables,
        CSV/Parquet files: :func:`vmp.inference.stream_sources.chunks`; ``rows`` whole documents
        per chunk on a documents plate; ``lazy``: a chunk of an array out of core stays there,
        read where the chunk's fit reads it)."""
        from .stream_sources import chunks

        return chunks(source, rows, self.model, self.plate, columns, lazy, self.links)

    def run(self, source, rows: int | None = None, columns: dict | None = None, lazy: bool = False) -> list:
        """``update`` on every chunk of ``source`` (:meth:`read`); the chunks' results."""
        return [r for r in (self.update(c) for c in self.read(source, rows, columns, lazy)) if r is not None]

    # ----- the stream's state -------------------------------------------------------------
    def save(self, path) -> None:
        """Write the stream's state (the globals' q, the chunks seen, the step counter, the
        chunks' bounds) to one ``.npz`` file (``State.save``)."""
        if self.posterior is None:
            raise OptionError("model.stream: nothing to save before the first chunk")
        state = State(self.posterior, {}, self.step, loop=LoopState(schedules=self.schedules))
        state.save(path, stream=self._describe(), prior0={k: list(v) for k, v in self.prior0.items()})

    def _describe(self) -> dict:
        return {"plate": self.plate, "forget": self.forget, "population": self.population, "chunks": self.chunks,
                "bounds": list(self.bounds), "globals": [g.name for g in self.globals]}

    def _resume(self, path) -> None:
        state, docs = State.load(path)
        saved = docs.get("stream") or {}
        mine = self._describe()
        for key in ("plate", "forget", "population", "globals"):
            if saved.get(key) != mine[key]:
                raise OptionError(f"model.stream(resume=): the file was written by a stream with {key}="
                                  f"{saved.get(key)!r}, this one has {mine[key]!r}")
        self.posterior = {k: tuple(v) for k, v in state.natural.items()}
        self.step, self.chunks, self.bounds = state.step, int(saved["chunks"]), list(saved["bounds"])
        self.schedules = dict(state.loop.schedules)
        prior0 = {k: tuple(np.asarray(a) for a in v) for k, v in (docs.get("prior0") or {}).items()}
        for name, arrays in prior0.items():  # the prior the stream began with (a builder's may follow the data)
            if [a.shape for a in arrays] != [np.shape(a) for a in self.prior0[name]]:
                raise OptionError(f"model.stream(resume=): node '{name}' has natural parameters of shapes "
                                  f"{[a.shape for a in arrays]} in the file, {[np.shape(a) for a in self.prior0[name]]} "
                                  f"in the model")
        self.prior0.update(prior0)

    def __repr__(self) -> str:
        kind = f"population={self.population:g}" if self.population else f"forget={self.forget:g}"
        return f"<Stream of plate '{self.plate}', {kind}: {self.chunks} chunk(s)>"


def _links(model, plate: str) -> dict:
    """{vmp.Data name: linked plate}: the inputs holding the gather indices from the plates
    linked to ``plate`` into it (a token's document), which each chunk replaces; a GraphError
    for a fixed index, which cannot follow the chunks."""
    links = {}
    for linked, index in linked_plates(model, plate).items():
        names = [d.name for d in model.inputs.values() for use, _, _ in d.uses
                 if isinstance(use, Gather) and use.plate.name == linked and use.node.plates[0].name == plate]
        if not names:
            raise GraphError(f"model.stream: plate '{linked}' reads plate '{plate}' through a gather with a fixed "
                             f"index; for each chunk to bring its own elements of both plates, declare the "
                             f"index with vmp.Data(name, rows) (models.lda's 'document')")
        links.update(dict.fromkeys(names, linked))
    return links


def _check_rows(node, rows) -> None:
    """A ShapeError unless ``rows`` are rows of the node's outer plate: (rows,) + inner plates + event."""
    event = node._data_event_shape()
    if rows.ndim < 1 or tuple(rows.shape[rows.ndim - len(event):]) != tuple(event) \
            or rows.ndim != len(node.plates) + len(event):
        raise ShapeError(f"node '{node.name}': a chunk's rows have shape {rows.shape}; node '{node.name}' takes "
                         f"(rows,) + {tuple(p.size for p in node.plates[1:])} + {tuple(event)}")


def _forget(forget) -> float:
    if isinstance(forget, bool) or not isinstance(forget, (int, float, np.floating)) or not 0 < forget <= 1:
        raise OptionError(f"model.stream: forget= must lie in (0, 1], got {forget!r}")
    return float(forget)


def _count(value, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise OptionError(f"model.stream: {name}= must be a positive integer, got {value!r}")
    return int(value)


def _drift(per: float, earlier: list) -> bool:
    """Is ``per`` far below the earlier chunks' bounds per element: below their median by more
    than DRIFT_DEVIATIONS scaled median absolute deviations and by more than DRIFT_NATS?"""
    if len(earlier) < DRIFT_HISTORY or not np.isfinite(per):
        return False
    med = float(np.median(earlier))
    spread = 1.4826 * float(np.median(np.abs(np.asarray(earlier) - med)))
    return per < med - max(DRIFT_DEVIATIONS * spread, DRIFT_NATS)
