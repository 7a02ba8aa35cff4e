"""The loop of a fit: draw, step, record, evaluate, watch, checkpoint, stop.

    draw = method.draw(engine, state, rng)            # the plan's subsets and the policies' weights
    state, info = method.step(engine, state, draw)    # batch.py or stochastic.py
    recorder.step(...); every evaluate_every steps: the bound, the monitors, the verdict

The steps are the method's (:class:`~vmp.inference.batch.BatchVMP`,
:class:`~vmp.inference.stochastic.StochasticVMP`); ``Fit`` only runs them. The state of the fit
is one :class:`~vmp.inference.state.State`, replaced only when a step or an evaluation is
complete, so an interrupted fit is always consistent.

    fit = model.stochastic(subsample=vmp.Minibatch("data", 100))   # or model.batch()
    fit.run(50); fit.step(); result = fit.result()
"""
from __future__ import annotations

import contextlib
import copy
import time
import warnings
from dataclasses import replace

import numpy as np

from ..errors import CheckpointError, ConvergenceError, OptionError
from ..graph.data import check_files
from . import objective
from .batch import BatchVMP, ConvergenceWarning
from .checkpoint import CheckpointWarning, fingerprint, fit_fingerprint
from .engine import Engine
from .history import Recorder
from .interrupts import Interrupts
from .alerts import Alerts
from .method import Bound, DivergenceWarning, Event, Method, StepInfo
from .options import check, check_restarts
from .progress import Progress
from .result import FitResult, resume_state
from .state import LoopState, Resumable, State
from .stochastic import StochasticVMP


class Fit(Resumable):
    """A fit in progress: its engine, method, options, current State and history.

    ``step()`` advances one step (a sweep of batch VMP), ``run(n)`` up to n more steps (or to
    ``iterations``, the total a fit runs to), ``result()`` the FitResult so far. Ctrl-C or
    SIGTERM during ``run`` ends it after the current step with ``result.interrupted = True``.
    """

    def __init__(self, model, **options):
        self.opts = o = check(options)
        self.model = model
        self.engine = engine = Engine(model, o.executor)
        self.start = time.perf_counter()
        self.interrupted = self.done = False
        self.fingerprint = fit_fingerprint(o)
        resume = None if o.checkpoints.resume is None else _resume_point(o.checkpoints.resume, model,
                                                                         self.fingerprint)
        if resume is not None and options.get("iterations") is not None and o.iterations <= resume[0].step:
            raise OptionError(f"resume=: the fit resumed has run {resume[0].step} steps, and iterations="
                              f"{o.iterations} is the total a fit runs to, counting them: pass iterations= above "
                              f"{resume[0].step} to run more")
        self.rng = rng = np.random.default_rng(o.seed) if resume is None else resume[0].generator()
        saved = None if resume is None else resume[0].loop.plan
        self.method: Method = BatchVMP(o, engine) if o.method == "batch" else StochasticVMP(o, engine, rng, saved)
        self.plan = self.method.plan
        engine.executor.start(engine, self.plan)
        names = [n.name for n in self.plan.stepped]
        #: the per-row local terms of the last evaluation on the evaluation subsample (None: exact)
        self.evaluation_terms = None
        if resume is None:
            with floating_point(0):
                state, accesses = self.method.start(engine, rng, o.init)
            self._commit(state.updated({}, loop=self.method.loop_start(engine, state, rng, accesses)))
            self.recorder = Recorder(names)
            self.alerts = Alerts([])
            self.evaluate(0)
        else:
            self._commit(_continued(resume[0]))
            self.recorder = Recorder(names, copy.deepcopy(resume[1]))
            self.alerts = Alerts(self.recorder.raw["events"])
        self.done = self.state.loop.converged or self.state.loop.diverged

    @property
    def t(self) -> int:
        return self.state.step

    # ----- one step -------------------------------------------------------------------------
    def step(self) -> StepInfo:
        """One step of the fit (a sweep of batch VMP), committed to ``self.state``; returns
        what it did. A node that leaves its domain raises a ConvergenceError; a monitor with
        action 'stop' ends the fit (``done``) with the state before the step."""
        tick = time.perf_counter()
        check_files(self.model)
        t = self.state.step + 1
        with floating_point(t):
            draw = self.method.draw(self.engine, self.state, self.rng)
            state, info = self.method.step(self.engine, self.state, draw)
        for event in info.events:
            self._event(t, event)
        if info.error is not None:
            raise info.error
        if info.stopped is not None:
            self._end(f"stopped by a monitor: {info.stopped}", diverged=True)
            return info
        self.recorder.step(t, state.loop.accesses, time.perf_counter() - tick, info.rho, info.change, info.series)
        self._commit(state)
        return info

    def _event(self, t: int, event: Event) -> None:
        self.recorder.event(t, event.source, event.node, event.action, event.message)
        if event.action == "warn":
            self.alerts.warn(event, DivergenceWarning, stacklevel=5)

    def _commit(self, state: State) -> None:
        self.state = state.updated({}, rng=self.rng.bit_generator.state)
        self.model.state = self.state

    def _set(self, **fields) -> None:
        self._commit(self.state.updated({}, loop=replace(self.state.loop, **fields)))

    def _end(self, message: str, warn: bool = True, **fields) -> None:
        """End the fit with ``message``; one that diverged says so (unless ``warn`` is False: the
        caller warns or raises), with the monitors' counted warnings."""
        self._set(message=message, **fields)
        self.done = True
        if fields.get("diverged") and warn:
            counted = self.alerts.summary()
            warnings.warn(f"model '{self.model.name}': the fit diverged at iteration {self.t}: {message}"
                          + (f"; {counted}" if counted else "") + ". result.diverged is True; "
                          "vmp.diagnostics.dashboard(result) shows the run", DivergenceWarning, stacklevel=5)

    # ----- evaluations ----------------------------------------------------------------------
    def evaluate(self, t: int | None = None) -> float:
        """The bound at the current state (locals optimized on all data for a minibatch fit),
        recorded in the history and shown to the monitors; returns it (after a monitor's
        back-off, the best bound it returned to)."""
        t = self.state.step if t is None else t
        state = self.state
        check_files(self.model)
        with floating_point(t):
            bound = self.method.bound(self.engine, state)
        self.recorder.evaluation(t, state.loop.accesses, bound.value, bound.heldout, bound.stderr)
        loop = state.loop
        if self.method.policies:
            loop = replace(loop, objective=objective.extend(self.method, self.engine, state, t, bound.value))
        state, loop, stopped = self._watch_bound(t, state, loop)
        last = self.recorder.elbo[-1]
        if last != bound.value:  # a monitor's back-off: q and the bound returned to the best evaluation
            bound = Bound(last)
        self.evaluation_terms = bound.terms
        if stopped is None:
            loop = self.method.observe(loop, t, bound)
        if stopped is None and np.isfinite(last) and (
                loop.best is None or last >= loop.best_bound or not self.method.monitors):
            loop = replace(loop, best={n.name: state.natural[n.name] for n in self.plan.stepped}, best_bound=last)
        self._commit(state.updated({}, loop=loop))
        if stopped is not None:
            self._end(f"stopped by a monitor: {stopped}", diverged=True)
        return last

    def _watch_bound(self, t: int, state: State, loop: LoopState) -> tuple[State, LoopState, str | None]:
        """The monitors' verdicts on the bound: a warning, a stop (its problem returned), or a
        back-off (q back at the best evaluated state, every rate divided by the factor)."""
        monitors = list(loop.monitors)
        for i, m in enumerate(self.method.monitors):
            problem, monitors[i] = m.check_elbo(t, self._watched(loop), monitors[i])
            if problem is None:
                continue
            self._event(t, Event(m.name, None, m.action, problem))
            if m.action == "stop":
                return state, replace(loop, monitors=monitors), problem
            if m.action == "backoff":
                if loop.best is not None:
                    state = state.updated({n: (nat, self.engine.nodes[n].family.moments(nat))
                                           for n, nat in loop.best.items()})
                    self.recorder.elbo[-1] = loop.best_bound
                loop = replace(loop, backoff={n: b / m.factor for n, b in loop.backoff.items()})
                break
        return state, replace(loop, monitors=monitors), None

    def _watched(self, loop: LoopState | None = None) -> list:
        """The values the stopping rule and the monitors compare: the bound, or with policies
        the tempered objective's current stretch (:mod:`vmp.inference.objective`)."""
        loop = self.state.loop if loop is None else loop
        return loop.objective.values if self.method.policies else self.recorder.elbo

    def _judge(self, t: int) -> None:
        """The method's verdict after an evaluation at step t: the fit ends if it says so."""
        verdict = self.method.verdict(self.engine, self.state, self.recorder.raw["evaluations"], self._watched(), t)
        if verdict is None:
            return
        for event in verdict.events:
            self._event(t, event)
        fields = {k: True for k in ("converged", "diverged") if getattr(verdict, k)}
        if verdict.decrease is not None:
            fields["decrease"] = verdict.decrease
        self._end(verdict.message, warn=verdict.warning is None and not verdict.error, **fields)
        if verdict.error:
            raise ConvergenceError(verdict.message)
        if verdict.warning is not None:
            warnings.warn(verdict.message, verdict.warning, stacklevel=4)

    # ----- running ----------------------------------------------------------------------------
    def run(self, steps: int | None = None) -> "Fit":
        """Up to ``steps`` more steps (default: until the fit's ``iterations``), ending early
        on convergence, divergence, a monitor's stop, the callback, or an interrupt."""
        o = self.opts
        end = o.iterations if steps is None else self.t + int(steps)
        bar = Progress(max(end - self.t, 0), o.progress, f"{self.method.name} VMP")
        with Interrupts() as stop:  # (held until the last checkpoint is written)
            self._loop(end, bar, stop)
            if stop.requested:
                self.interrupted = True
                if "interrupted" not in self.state.loop.message:
                    self._set(message=f"interrupted after iteration {self.t}")
            elif not self.done and self.t >= o.iterations:
                self._end_diverging()
            if o.checkpoints.path is not None:
                with stop.held():
                    self._checkpoint(o.checkpoints.path, last=True)
        return self

    def _loop(self, end: int, bar: Progress, stop: Interrupts) -> None:
        """Steps up to ``end``; a second Ctrl-C ends them at once (the state is the last step's)."""
        quiet = np.errstate(over="ignore", invalid="ignore") if self.method.quiet else contextlib.nullcontext()
        try:
            with quiet:
                while self.t < end and not self.done:
                    if stop.requested:
                        self.interrupted = True
                        self._set(message=f"interrupted after iteration {self.t}")
                        break
                    self._advance(bar)
        except KeyboardInterrupt:
            stop.requested = True
        except ConvergenceError as err:
            self._end(f"diverged: {err}", warn=not self.method.raises, diverged=True)
            if self.method.raises:
                raise
        finally:
            bar.close()
            self._commit(self.engine.executor.finish(self.state))

    def _end_diverging(self) -> None:
        """A fit that reached its iterations with a monitor's warning about the bound at its last
        evaluation (the bound not finite, or far below its best) ends as diverged, and says so."""
        events, t = self.recorder.raw["events"], self.t
        evaluated = self.recorder.raw["evaluations"]["iteration"]
        if not evaluated or evaluated[-1] != t:
            return
        for e in reversed(events):
            if e["iteration"] != t:
                return
            if e["node"] is None and e["action"] == "warn":
                self._end(f"reached the iteration limit diverging: {e['message']}", diverged=True)
                return

    def _advance(self, bar: Progress) -> None:
        """One step, then the evaluation and verdict, progress, callback and checkpoint due."""
        self.step()
        if self.done:
            return
        t, o = self.t, self.opts
        every = self.method.evaluate_every
        if (every and t % every == 0) or any(m.every and t % m.every == 0 for m in self.method.monitors):
            self.evaluate(t)
            if self.done:
                return
            self._judge(t)
        bar.update(self.recorder.elbo[-1])
        if not self.done and o.callback is not None and o.callback(t, self) is False:
            self._end(f"stopped by the callback at iteration {t}")
        if o.checkpoints.path is not None and o.checkpoints.every and t % o.checkpoints.every == 0:
            self._checkpoint(o.checkpoints.path)

    def save(self, path) -> None:
        """Write a checkpoint: the state and history now (resume with ``fit(resume=path)``),
        atomically (:func:`~vmp.inference.checkpoint.write_atomic`)."""
        self.result(close=False).save(path)

    def _checkpoint(self, path, last: bool = False) -> None:
        """The fit's checkpoint; a write that fails is a CheckpointWarning, and the fit goes on
        (the file keeps the last checkpoint written)."""
        try:
            self.save(path)
        except CheckpointError as err:
            then = ("the fit's result is returned: save it elsewhere with result.save(path)" if last else
                    "the fit goes on and writes it again at the next checkpoint")
            warnings.warn(f"{err}; {then}", CheckpointWarning, stacklevel=4)

    def result(self, close: bool = True) -> FitResult:
        """The FitResult so far. With ``close`` a stochastic fit evaluates the bound at its last
        step if it was not (for the report; a resumed fit continues from before it)."""
        resume = (self.state, copy.deepcopy(self.recorder.raw))
        done = self.recorder.raw["iteration"][-1] if self.recorder.raw["iteration"] else 0
        ev = self.recorder.raw["evaluations"]["iteration"]
        if close and self.method.closes and not self.state.loop.diverged and not self.interrupted \
                and ev and ev[-1] != done:
            with np.errstate(over="ignore", invalid="ignore"):
                self.evaluate(done)
            self._commit(self.engine.executor.finish(self.state))
        loop = self.state.loop
        history = self.recorder.history()
        elbo = np.array(self.recorder.elbo, dtype=float)
        return FitResult(elbo, bool(loop.converged), len(history["iteration"]), loop.message, loop.decrease,
                         time.perf_counter() - self.start, extra=self.method.describe(), history=history,
                         diverged=self.method.diverged(loop, elbo), interrupted=self.interrupted, state=self.state,
                         resume_point=resume, fingerprint=fingerprint(self.model, self.fingerprint))


def _resume_point(resume, model, fit: dict) -> tuple[State, dict]:
    """(State, raw history) from ``resume=``: a FitResult, a Fit, or a checkpoint file, of a fit
    of ``model`` laid out as ``fit`` (:func:`~vmp.inference.checkpoint.fit_fingerprint`)."""
    if isinstance(resume, Fit):
        resume = resume.result(close=False)
    return resume_state(resume, model, fit)


@contextlib.contextmanager
def floating_point(t: int):
    """A matrix that floating point cannot factor at step ``t`` (a precision formed from inputs of
    scale 1e8 that is not positive definite once rounded) is a ConvergenceError: the fit diverged
    (reported by a stochastic fit, raised by batch VMP), not numpy's LinAlgError."""
    try:
        yield
    except np.linalg.LinAlgError as err:
        raise ConvergenceError(f"at step {t} a matrix of q cannot be factored in floating point ({err}): rescale "
                               f"the inputs, or take smaller steps") from None


def _continued(state: State) -> State:
    """A resumed state: unless its fit had ended (converged or diverged), the message of how it
    ended (an interrupt, the callback, the iteration limit) is the default again."""
    if state.loop.converged or state.loop.diverged:
        return state
    return state.updated({}, loop=replace(state.loop, message=LoopState().message))


def fit(model, *, method: str | None = None, iterations: int | None = None, n_init: int = 1, **options) -> FitResult:
    """Fit q by variational message passing.

    ``method``: 'batch' or 'stochastic'; when not given, 'stochastic' if ``subsample`` is given,
    else 'batch'.

    ``method="batch"`` (Winn & Bishop 2005, section 3.2): coordinate ascent, parents first; the
    bound never decreases. Options: ``tol`` (stop when the relative change of the bound is below
    it; default 1e-7; tol <= 0 runs every sweep), ``decrease_tol`` and ``on_decrease`` ('warn' or 'raise' when an update
    lowers the bound by more than decrease_tol relative; reported, never "converged"),
    ``policies`` (Annealing, Tempering, LocalTempering: every factor of the data plate weighted
    by 1/T; ``plate`` names the data plate when the observed nodes do not share an outermost
    one). With policies the stopping rule and the decrease check watch the tempered objective,
    only while the temperature holds (docs/policies.md).

    ``method="stochastic"`` (Paquet Alg. 1-2; Hoffman et al. 2013): ``subsample``
    (vmp.PerNode(children=C) or vmp.Minibatch(plate, size)), ``update`` ('per-node', option (a),
    or 'global', option (b)), ``step`` (a schedule, or a dict from node names to schedules with a
    'default'), ``evaluate_every`` (steps between evaluations of the bound, default 10; 0: only
    at the ends), ``policies`` (SVIPlus, Annealing, Tempering, LocalTempering; Minibatch only) and
    ``monitors`` (default DomainMonitor('stop') and ElboMonitor(patience=3, action='warn')),
    ``tol`` (stop when the mean of the last ``patience`` evaluations of the bound has not improved
    by more than tol relative, and by more than 2 standard errors of the change, on the mean of
    ``patience`` evaluations before the last max(``patience`` evaluations, 3/4 of the run) steps;
    ``patience`` default PATIENCE = 5 (:mod:`vmp.inference.stopping`); default
    None: run the iterations). ``step=vmp.Adaptive()`` sets each node's rho from its own gradients (Ranganath
    et al. 2013), times a factor its nodes share (``coupled=True``, the default).

    Both: ``iterations`` (the total number of steps the fit runs to, counting the steps of a
    resumed fit; 0: the initial q and its bound only; default BATCH_ITERATIONS = 2000 for batch
    VMP, which warns with a ConvergenceWarning when it ends there before ``tol`` unless tol <= 0;
    STOCHASTIC_ITERATIONS = 200 otherwise), ``seed``, ``init`` ('prior' or {name: initial mean}),
    ``executor`` (where the sums over the data run; default vmp.Serial(), or vmp.Chunked() when observed data are out of
    core), ``progress``, ``callback(t, fit)`` (returning False stops), ``checkpoint`` (a path written at the end, on interrupt and every
    ``checkpoint_every`` steps) and ``resume`` (a path, a FitResult or a Fit to continue from).
    ``n_init``: that many fits from seeds seed, seed + 1, ...; the one with the best final bound
    wins (scikit-learn's convention), and ``result.extra["n_init_bounds"]`` lists them all.
    The options are checked by :func:`vmp.inference.options.check`.
    """
    keywords = dict(options, method=method, iterations=iterations)
    n_init = check_restarts(n_init, keywords)
    checked = check(keywords)
    best, bounds = None, []
    for k in range(n_init):
        seed = None if checked.seed is None else checked.seed + k
        result = Fit(model, **dict(keywords, seed=seed)).run().result()
        bounds.append(result.final_elbo)
        if best is None or (np.isfinite(result.final_elbo) and not result.final_elbo <= best.final_elbo):
            best = result
    model.state = best.state
    if n_init > 1:
        best.extra["n_init_bounds"] = bounds
    if checked.method == "batch":
        _warn_unconverged(model, best, checked.batch.tol)
    return best


def _warn_unconverged(model, result: FitResult, tol: float) -> None:
    """A ConvergenceWarning when batch VMP ran out of iterations before its bound met ``tol``."""
    if not result.converged and result.message == "reached the iteration limit" and tol > 0 and len(result.elbo) > 1:
        change = abs(result.elbo[-1] - result.elbo[-2]) / max(abs(result.elbo[-1]), 1e-300)
        warnings.warn(f"model '{model.name}': batch VMP reached iterations={result.iterations} with the relative "
                      f"ELBO change {change:.2g} still above tol={tol:g}; q is not converged: "
                      f"pass a larger iterations= (or resume=result)", ConvergenceWarning, stacklevel=3)
