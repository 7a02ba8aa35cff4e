"""One loop for batch and stochastic VMP.

Each step: draw (a Plan: every child for batch VMP, PerNode's children, or a Minibatch's rows),
the policies' weights, the local step of a minibatch, each stepped node's target through the
executor, the blend with rho (Paquet Alg. 1-2; rho = 1 for batch VMP), the monitors' verdicts,
and the recorder. The state of the fit is one :class:`~vmp.inference.state.State`, replaced only
when a step or an evaluation is complete, so an interrupted fit is always consistent.

    fit = model.stochastic(subsample=vmp.Minibatch("data", 100))   # or model.batch()
    fit.run(50); fit.step(); result = fit.result()
"""
from __future__ import annotations

import contextlib
import copy
import math
import operator
import time
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from ..errors import ConvergenceError, OptionError, VMPError
from . import steps
from .alerts import warn_once
from .engine import Engine
from .executor import Executor
from .heap import keep_freed_heap
from .history import Recorder
from .init import first_sweep, initialize
from .interrupts import Interrupts
from .progress import Progress
from .result import FitResult, load
from .schedules import RobbinsMonro, per_node, pool
from .state import State
from .stopping import PATIENCE, Plateau, observe
from .subsample import FullPlan, Subsample, sweep_accesses


#: a tempering weight that moved by less than this (relative) since the stretch of evaluations
#: began counts as the same temperature: the objective is the same, so its values compare
SAME_TEMPERATURE = 1e-9


class ElboDecreaseWarning(UserWarning):
    """The bound fell during batch VMP: a bug or a numerical breakdown, never convergence."""


class DivergenceWarning(UserWarning):
    """A monitor with action='warn' saw a step or a bound that signals divergence."""


class ConvergenceWarning(UserWarning):
    """Batch VMP ran out of iterations before its bound met ``tol``: q is not at a fixed point."""


#: the default ``iterations`` of ``fit``: batch VMP stops at ``tol`` (ARD factor analysis and
#: Poisson factorization need 300 to 600 sweeps on small data); a stochastic fit runs them all
BATCH_ITERATIONS, STOCHASTIC_ITERATIONS = 1000, 200


class _Stop(Exception):
    """A monitor with action='stop' ended the run."""


def combine(a, b):
    """The product of two policies' weights, None standing for 1."""
    if a is None:
        return b
    if b is None:
        return a
    return a * b


@dataclass
class Options:
    """The choices of one fit, checked once (see :func:`fit` for their meaning)."""

    method: str | None = None
    iterations: int = 200
    tol: float | None = None
    patience: int | None = None
    seed: int | None = 0
    init: Any = None
    subsample: Subsample | None = None
    update: str = "per-node"
    step: Any = None
    evaluate_every: int | None = None
    evaluate: str | None = None
    policies: list = field(default_factory=list)
    plate: str | None = None
    monitors: list | None = None
    executor: Executor | None = None
    decrease_tol: float | None = None
    on_decrease: str | None = None
    progress: bool | None = None
    callback: Any = None
    checkpoint: Any = None
    checkpoint_every: int | None = None
    resume: Any = None

    def __post_init__(self):
        self.seed = checked_seed(self.seed)
        if self.executor is not None and not isinstance(self.executor, Executor):
            raise OptionError(f"executor= takes vmp.Serial(), vmp.Chunked(size=...) or vmp.DaskExecutor(client), "
                              f"got {self.executor!r}")
        self.method = default_method(self.method, self.subsample)
        if self.method not in ("batch", "stochastic"):
            raise VMPError(f"unknown method {self.method!r}; use 'batch' or 'stochastic'")
        if int(self.iterations) != self.iterations or self.iterations < 0:
            raise VMPError(f"iterations must be a non-negative integer, got {self.iterations!r}")
        self.iterations = int(self.iterations)
        stochastic_only = {"subsample": self.subsample, "step": self.step, "monitors": self.monitors, "evaluate_every": self.evaluate_every,
                           "evaluate": self.evaluate, "patience": self.patience}
        batch_only = {"decrease_tol": self.decrease_tol, "on_decrease": self.on_decrease, "plate": self.plate}
        if self.method == "batch":
            given = sorted(k for k, v in stochastic_only.items() if v is not None)
            if given or self.update != "per-node":
                raise VMPError(f"batch VMP does not take {given or ['update']}: they are options of method='stochastic'")
            self.tol = 1e-6 if self.tol is None else float(self.tol)
            self.decrease_tol = 1e-9 if self.decrease_tol is None else float(self.decrease_tol)
            self.on_decrease = "warn" if self.on_decrease is None else self.on_decrease
            if self.on_decrease not in ("warn", "raise"):
                raise VMPError("on_decrease must be 'warn' or 'raise'")
            self.evaluate_every, self.evaluate = 1, "full"
            self.monitors = []
            for p in self.policies:
                if not p.batch:
                    raise VMPError(f"policies=: {p.name} does not weight batch VMP: {p.batch_refusal}")
        else:
            given = sorted(k for k, v in batch_only.items() if v is not None)
            if given:
                raise VMPError(f"stochastic VMP does not take {given}: they are options of batch VMP "
                               f"(a stochastic fit runs its iterations; monitors watch it)")
            if self.update not in ("per-node", "global"):
                raise VMPError(f"update must be 'per-node' (option (a)) or 'global' (option (b)), got {self.update!r}")
            if not isinstance(self.subsample, Subsample):
                raise VMPError("subsample= takes vmp.PerNode(children=C) or vmp.Minibatch(plate, size)")
            self.evaluate_every = 10 if self.evaluate_every is None else int(self.evaluate_every)
            self.evaluate = "subsample" if self.evaluate is None else self.evaluate
            if self.evaluate not in ("subsample", "full"):
                raise VMPError(f"evaluate= takes 'subsample' (an estimate from a fixed subsample of the data "
                               f"plate, O(evaluation_size)) or 'full' (the exact bound, O(N)); got {self.evaluate!r}")
            if self.tol is not None and (not self.tol >= 0 or not self.evaluate_every):
                raise VMPError(f"tol= of a stochastic fit takes a number >= 0 and evaluate_every >= 1 (it watches "
                               f"the evaluated bound); got tol={self.tol!r}, evaluate_every={self.evaluate_every}")
            self.patience = PATIENCE if self.patience is None else self.patience
            if isinstance(self.patience, bool) or int(self.patience) != self.patience or self.patience < 1:
                raise OptionError(f"patience= takes a positive integer (evaluations without improvement before "
                                  f"tol= stops the fit), got {self.patience!r}")
            self.patience = int(self.patience)
            if self.monitors is None:
                from ..monitors import DomainMonitor, ElboMonitor

                self.monitors = [DomainMonitor(action="stop"), ElboMonitor(patience=3, action="warn")]
            self.monitors = list(self.monitors)
        self.policies = list(self.policies)
        if self.checkpoint_every is not None and (int(self.checkpoint_every) != self.checkpoint_every
                                                  or self.checkpoint_every < 1 or self.checkpoint is None):
            raise VMPError("checkpoint_every= takes a positive integer, with checkpoint=path")


class Fit:
    """A fit in progress: its engine, plan, options, current State and history.

    ``step()`` advances one step (a sweep for batch VMP), ``run(n)`` up to n more steps (or to
    ``iterations``, the total a fit runs to), ``result()`` the FitResult so far. Ctrl-C or
    SIGTERM during ``run`` ends it after the current step with ``result.interrupted = True``.
    """

    def __init__(self, model, **options):
        keep_freed_heap()
        self.opts = o = Options(**options)
        self.model = model
        self.engine = engine = Engine(model, o.executor)
        self.start = time.perf_counter()
        resume = _resume_point(o.resume, model)
        if resume is None:
            self.rng = rng = np.random.default_rng(o.seed)
        else:
            state, raw = resume
            self.rng = rng = state.generator()
        self._warned = {} if resume is None else dict(state.extra.get("warned") or {})
        self.plan = plan = FullPlan(engine, _data_plate(model, o) if o.policies else None) \
            if o.method == "batch" else o.subsample.prepare(
                engine, rng, None if resume is None else state.extra.get("plan"), o.evaluate_every)
        engine.executor.prepare(engine, plan)
        if o.policies and not plan.policies_allowed:
            raise VMPError("policies= weight the factors of a data plate: use subsample=vmp.Minibatch(plate, size) "
                           "or method='batch'")
        names = [n.name for n in plan.stepped]
        self.schedules = per_node(RobbinsMonro() if o.step is None else o.step, names)
        self.axes = {n.name: _independent_axes(engine, n) for n in plan.stepped}
        self.nodes = {n.name: n for n in plan.stepped}
        if resume is None:
            state, count = initialize(engine, rng, o.init, plan), 0
            if o.update == "global" and o.init != "prior":
                # option (b) reads every target from one state: make the globals agree first (one
                # coordinate sweep, from a minibatch's locals or over all data); option (a)'s first
                # step is such a sweep already
                if plan.local_step:
                    state, count = first_sweep(engine, plan, state, rng)
                else:
                    state, _ = steps.sweep(engine, state, plan.stepped)
                    count = sweep_accesses(engine)
            extra = {"plan": plan.saved(), "backoff": {n: 1.0 for n in names}, "accesses": count,
                     "policies": [p.start(engine, self.plan, state, rng) for p in o.policies],
                     "monitors": [m.start() for m in o.monitors], "good": None, "good_value": None,
                     "converged": False, "message": "reached the iteration limit", "decrease": None,
                     "diverged": False, "watch": None, "plateau": Plateau().saved()}
            self.state = state.updated({}, extra=extra, rng=rng.bit_generator.state)
            self.recorder = Recorder(names)
            self.evaluate(0)
        else:
            self.state = state
            self.recorder = Recorder(names, copy.deepcopy(raw))
        self.model.state = self.state
        self.interrupted = False
        #: per-row local terms of the last evaluation on the evaluation subsample (None: exact)
        self.evaluation_terms = getattr(self, "evaluation_terms", None)
        self.done = self.state.extra["converged"] or self.state.extra["diverged"]
        self.resume_point = None

    # ----- one step -------------------------------------------------------------------------
    @property
    def t(self) -> int:
        return self.state.step

    def step(self) -> None:
        """One step of the fit (a sweep of batch VMP), committed to ``self.state``."""
        o, engine, plan, rng = self.opts, self.engine, self.plan, self.rng
        state = self.state
        extra = dict(state.extra)
        t, tick = state.step + 1, time.perf_counter()
        draw = plan.draw(engine, rng)
        local = glob = None
        series: dict = {}
        pol = list(extra["policies"])
        for i, p in enumerate(o.policies):
            lw, gw = p.weights(t, draw.rows, rng, pol[i])
            local, glob = combine(local, lw), combine(glob, gw)
            series.update(p.record(t, draw.rows, pol[i]))
        count = extra["accesses"]
        remote = None if not plan.local_step or o.policies else engine.executor.local_step(
            engine, plan, state, draw.rows, plan.stepped, o.update == "global")
        if remote is not None:  # the locals stay where the rows are
            draw, count = replace(draw, ctx=remote.ctx), count + remote.accesses
            series["bound_estimate"] = steps.global_terms(engine, plan, state) + plan.scale * float(remote.terms.sum())
        elif plan.local_step:
            ctx, natural, acc = steps.local_step(engine, plan, state, draw.ctx, local)
            draw, count = replace(draw, ctx=ctx), count + acc
            series["bound_estimate"] = steps.minibatch_bound(engine, plan, state, ctx, natural)
            bound = steps.data_bound(engine, plan, ctx) if any(p.needs_data_bound for p in o.policies) else None
            for i, p in enumerate(o.policies):
                pol[i] = p.observe(engine, plan, ctx, bound, pol[i])
        backoff = dict(extra["backoff"])
        sched = {n: extra.get("schedules", {}).get(n) for n in self.schedules}
        own = plan.element_draws and o.update == "per-node"
        sched = {n: s.start(self.axes[n], own, plan.exact(engine, self.nodes[n], self.axes[n]) if own else None)
                 if sched[n] is None else sched[n] for n, s in self.schedules.items()}
        if o.update == "global":
            count += self._prime(state, state, sched, plan.stepped)
        rho = dict.fromkeys(self.schedules, np.nan)
        monitors = list(extra["monitors"])
        work, skipped = state, False
        redraws = max((p.redraws for p in o.policies), default=0)
        if o.update == "global":
            targets = self._valid_targets(work, draw, plan.stepped, glob, redraws, t, extra)
            skipped = targets is None
            for node in [] if skipped else plan.stepped:
                r = self._rate(t, node, work, targets[node.name], sched, backoff, rho)
                work = self._apply(work, node, engine.blend(work.natural[node.name], targets[node.name], r),
                                   t, monitors, backoff)
        else:
            for node in plan.stepped:
                count += self._prime(state, work, sched, [node])
                if engine.coupled_plate(node) is not None:
                    new = self._sliced(t, node, work, draw, glob, sched, backoff, rho)
                else:
                    lam = self._valid_targets(work, draw, [node], glob, redraws, t, extra)
                    if lam is None:
                        continue
                    new = engine.blend(work.natural[node.name], lam[node.name],
                                       self._rate(t, node, work, lam[node.name], sched, backoff, rho))
                work = self._apply(work, node, new, t, monitors, backoff)
        if plan.monotone and o.policies:
            pol = self._observe_all(work, pol)
        extra["policies"] = pol
        if not skipped:
            count += sum(plan.accesses(engine, draw, node) for node in plan.stepped)
        if plan.monotone:
            count += plan.per_sweep
        change = {n.name: steps.relative_change(state.natural[n.name], work.natural[n.name]) for n in plan.stepped}
        factor = {name: math.exp(st["log_f"]) for name, st in sched.items() if isinstance(st, dict) and "log_f" in st}
        if factor:
            series["adaptive_factor"] = factor
        extra.update(backoff=backoff, monitors=monitors, accesses=count, schedules=pool(self.schedules, sched))
        self.recorder.step(t, count, time.perf_counter() - tick, rho, change, series)
        self._commit(work.updated({}, step=t, extra=extra))

    def _observe_all(self, state: State, pol: list) -> list:
        """Batch VMP: the policies' updates after a sweep, from every row of the data plate."""
        engine, plan = self.engine, self.plan
        ctx = replace(plan.context(plan.rows), overrides={n.name: state.moments[n.name] for n in plan.local},
                      state=state)
        bound = steps.data_bound(engine, plan, ctx) if any(p.needs_data_bound for p in self.opts.policies) else None
        return [p.observe(engine, plan, ctx, bound, st) for p, st in zip(self.opts.policies, pol)]

    def _commit(self, state: State) -> None:
        extra = state.extra if state.extra.get("warned", {}) == self._warned else {**state.extra, "warned": self._warned}
        self.state = state.updated({}, extra=extra, rng=self.rng.bit_generator.state)
        self.model.state = self.state

    def _rate(self, t: int, node, state: State, target, sched: dict, backoff: dict, rho: dict) -> float:
        """rho_t of ``node``: its schedule's rate (given the gradient lambda^temp - lambda when
        the schedule reads one) times the monitors' back-off factor; 1 for batch VMP. Updates
        the schedule's state in ``sched`` and records the rate in ``rho``."""
        r = 1.0
        if not self.plan.monotone:
            s = self.schedules[node.name]
            gradient = _gradient(target, state.natural[node.name]) if s.needs_gradient else None
            r, sched[node.name] = s.rate(t, gradient, sched[node.name])
            r = r * backoff[node.name]
        rho[node.name] = float(r) if np.ndim(r) == 0 else float(np.mean(r))
        return r

    def _sliced(self, t: int, node, state: State, draw, glob, sched: dict, backoff: dict, rho: dict):
        """Option (a)'s step of a node whose elements are stepped slice by slice: the rate comes
        first (a schedule that reads the gradient gives :meth:`Schedule.rate_before`), the
        gradient from the slices' own targets after (:meth:`Engine.coordinate_step`), so the
        drawn children are read once."""
        s = self.schedules[node.name]
        if self.plan.monotone or not s.needs_gradient:
            r = self._rate(t, node, state, None, sched, backoff, rho)
            return steps.coordinate(self.engine, self.plan, state, draw, node, r, glob)[0]
        r = s.rate_before(t, sched[node.name]) * backoff[node.name]
        rho[node.name] = float(np.mean(r))
        new, _, gradient = steps.coordinate(self.engine, self.plan, state, draw, node, r, glob, gradient=True)
        sched[node.name] = s.rate(t, gradient, sched[node.name])[1]
        return new

    def _prime(self, start: State, state: State, sched: dict, nodes: list) -> int:
        """Ranganath et al. 2013's initialization of the schedules of ``nodes`` that ask for it
        (first step): the gradients of fresh draws, without policy weights, where the step reads
        its targets: local steps at the step's ``start``, targets at ``state``. Option (a) primes
        each node after the nodes before it moved, option (b) every node at the snapshot. A
        coupled node's targets go one slice at a time (each slice reading the ones before it, at
        rho = 1), as its steps read them under both options. Returns the observed elements read."""
        engine, plan = self.engine, self.plan
        wants = {n.name: self.schedules[n.name].samples_wanted(sched[n.name]) for n in nodes}
        nodes = [n for n in nodes if wants[n.name]]
        if plan.monotone or not nodes:
            return 0
        gradients: dict = {n.name: [] for n in nodes}
        count = 0
        for _ in range(max(wants[n.name] for n in nodes)):
            draw = plan.draw(engine, self.rng)
            if plan.local_step:
                ctx, _, acc = steps.local_step(engine, plan, start, draw.ctx)
                draw, count = replace(draw, ctx=ctx), count + acc
            lam = steps.targets(engine, plan, state, draw, nodes, sliced=True)
            for n in nodes:
                gradients[n.name].append(_gradient(lam[n.name], state.natural[n.name]))
            count += sum(plan.accesses(engine, draw, n) for n in nodes)
        for n in nodes:
            sched[n.name] = self.schedules[n.name].prime(gradients[n.name][:wants[n.name]], sched[n.name])
        return count

    def _valid_targets(self, state, draw, nodes, glob, redraws, t, extra):
        """Targets from the policies' global weights; a draw whose target leaves the domain
        (negative SVI+ weights) is drawn again, at most ``redraws`` times, then the step is
        skipped and an event names the policies that asked for it."""
        for attempt in range(redraws + 1):
            targets = steps.targets(self.engine, self.plan, state, draw, nodes, glob,
                                    sliced=self.opts.update == "global")
            if redraws == 0 or all(np.all(n.family.valid(targets[n.name])) for n in nodes):
                return targets
            if attempt < redraws:
                glob = None
                for i, p in enumerate(self.opts.policies):
                    glob = combine(glob, p.weights(t, draw.rows, self.rng, extra["policies"][i])[1])
        source = ",".join(p.name for p in self.opts.policies if p.redraws)
        self.recorder.event(t, source, ",".join(n.name for n in nodes), "skip",
                            f"the weighted target left the domain in {redraws + 1} draws")
        return None

    def _apply(self, state, node, new, t, monitors, backoff) -> State:
        """The monitors' verdict on one node's step; the state with it applied, or unchanged."""
        old = state.natural[node.name]
        for i, m in enumerate(self.opts.monitors):
            problem, monitors[i] = m.check_step(node, old, new, monitors[i])
            if problem is None:
                continue
            self.recorder.event(t, m.name, node.name, m.action, problem)
            if m.action == "warn":
                self._warned = warn_once(self._warned, m.name, node.name, problem, DivergenceWarning, 4)
            elif m.action == "stop":
                raise _Stop(problem)
            else:
                backoff[node.name] /= m.factor
                return state
        self.engine.check_domain(node, new)
        return state.updated({node.name: (new, self.engine.moments(node, new))})

    # ----- evaluations ----------------------------------------------------------------------
    def evaluate(self, t: int | None = None) -> float:
        """The bound at the current state (locals optimized on all data for a minibatch fit),
        recorded in the history and shown to the monitors."""
        o, engine, plan = self.opts, self.engine, self.plan
        t = self.state.step if t is None else t
        state = self.state
        extra = dict(state.extra)
        stderr, self.evaluation_terms = 0.0, None
        if plan.local_step and o.evaluate == "subsample":
            value, stderr, self.evaluation_terms = steps.subsample_bound(engine, plan, state, plan.evaluation, terms=True)
        elif plan.local_step:
            value = engine.elbo(steps.optimize_locals(engine, plan, state), cached=False)
        else:
            value = engine.elbo(state, cached=plan.monotone)
        heldout = None
        if plan.local_step and plan.heldout.size:
            heldout = steps.heldout_bound(engine, plan, state)
        self.recorder.evaluation(t, extra["accesses"], value, heldout, stderr)
        if o.policies:
            extra["watch"] = self._watch(t, state, value, extra.get("watch"))
        monitors = list(extra["monitors"])
        for i, m in enumerate(o.monitors):
            problem, monitors[i] = m.check_elbo(t, self._watched(extra), monitors[i])
            if problem is None:
                continue
            self.recorder.event(t, m.name, None, m.action, problem)
            if m.action == "warn":
                self._warned = warn_once(self._warned, m.name, None, problem, DivergenceWarning, 3)
            elif m.action == "stop":
                extra["monitors"] = monitors
                self._commit(state.updated({}, extra=extra))
                raise _Stop(problem)
            else:
                if extra["good"] is not None:
                    state = state.updated({n: (nat, self.engine.nodes[n].family.moments(nat))
                                           for n, nat in extra["good"].items()})
                    self.recorder.elbo[-1] = extra["good_value"]
                    self.evaluation_terms = None
                extra["backoff"] = {n: b / m.factor for n, b in extra["backoff"].items()}
                break
        extra["monitors"] = monitors
        last = self.recorder.elbo[-1]
        if np.isfinite(last) and (extra["good"] is None or last >= extra["good_value"] or not o.monitors):
            extra["good"] = {n.name: state.natural[n.name] for n in plan.stepped}
            extra["good_value"] = last
        self._commit(state.updated({}, extra=extra))
        return last

    def _watch(self, t: int, state: State, value: float, watch: dict | None) -> dict:
        """The stretch of evaluations of one objective, with this one added: the bound with the
        data plate's factors weighted by the policies' 1/T plus their own terms (Mandt et al.
        eq. (4)-(5)), the value the steps ascend. A new stretch begins when the temperature of a
        policy without own terms (annealing's schedule) moves: the objective changed. A stretch
        is shifted by one constant to start at the bound, so that relative tolerances read the
        bound's size (a tempered bound's parts can cancel to near zero)."""
        o, engine, plan = self.opts, self.engine, self.plan
        rows = plan.rows if plan.monotone else (plan.evaluation if o.evaluate == "subsample"
                                                 else np.arange(plan.plate.size))
        weight, key, terms = None, [], 0.0
        for p, st in zip(o.policies, state.extra["policies"]):
            w, own = p.tempered_weight(t, rows, st), p.objective_terms(st)
            weight = combine(weight, w)
            if own is None:
                key.append(1.0 if w is None else w)
            else:
                terms += own
        if weight is None:
            objective = value
        elif plan.monotone:
            objective = engine.elbo(state, weights=plan.weights(engine, weight), cached=False)
        else:
            objective = steps.subsample_bound(engine, plan, state, rows, weight)[0]
        objective += terms
        key = [np.asarray(k, float) for k in key]
        if watch is not None and len(watch["key"]) == len(key) and all(
                np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=SAME_TEMPERATURE, atol=0.0)
                for a, b in zip(watch["key"], key)):
            return dict(watch, values=watch["values"] + [objective + watch["offset"]])
        return {"key": key, "values": [value], "offset": value - objective}

    def _watched(self, extra: dict) -> list:
        """The values the stopping rule and the monitors compare: the bound, or with policies
        the objective's current stretch (:meth:`_watch`)."""
        return extra["watch"]["values"] if self.opts.policies else self.recorder.elbo

    def _verdict(self, t: int, value: float) -> str | None:
        """After an evaluation at step t: why the fit ends now, or None."""
        o = self.opts
        if self.plan.monotone:
            return self._batch_verdict(t, value)
        if not np.isfinite(value) and not any(m.action == "backoff" for m in o.monitors):
            self._set(diverged=True)
            return f"the ELBO is not finite at iteration {t}"
        if o.tol is not None:
            return self._plateau(t)
        return None

    def _plateau(self, t: int) -> str | None:
        """The stopping rule of a stochastic fit (:mod:`vmp.inference.stopping`): no improvement
        of the evaluated bound by more than ``tol`` relative and beyond the standard error of the
        change over the last max(``patience`` evaluations, 3/4 of the run); recorded as an event
        'tol'."""
        o = self.opts
        size = self.plan.plate.size if self.evaluation_terms is not None else 0
        memory, why = observe(Plateau.load(self.state.extra.get("plateau")), t, self.recorder.elbo[-1],
                              self.evaluation_terms, size, o.tol, o.evaluate_every, o.patience)
        self._set(plateau=memory.saved())
        if why is None:
            return None
        self.recorder.event(t, "tol", None, "stop", why)
        self._set(converged=True)
        return why

    def _batch_verdict(self, t: int, value: float) -> str | None:
        """Coordinate ascent never lowers the bound: a fall is reported (and the node that
        causes it named), never taken for convergence."""
        o = self.opts
        values = self._watched(self.state.extra)
        if not np.isfinite(value):
            return "the ELBO is not finite"
        if len(values) < 2:
            return None
        value, prev = values[-1], values[-2]
        change = value - prev
        if change < -o.decrease_tol * max(abs(prev), 1.0):
            if o.policies:
                decrease = {"node": None, "amount": -change, "objective": "tempered"}
                message = f"the tempered objective decreased by {-change:.3g} at iteration {t}"
            else:
                decrease = _locate_decrease(self.engine, self.state, self.plan.stepped, value)
                message = f"the ELBO decreased by {-change:.3g} at iteration {t}; " + decrease_text(decrease)
            self._set(decrease=decrease)
            if o.on_decrease == "raise":
                raise ConvergenceError(message)
            warnings.warn(message, ElboDecreaseWarning, stacklevel=4)
            return message
        if o.tol > 0 and change <= o.tol * abs(value):  # tol <= 0: every sweep
            self._set(converged=True)
            return f"relative ELBO change below {o.tol:g}"
        return None

    def _set(self, **fields) -> None:
        self._commit(self.state.updated({}, extra={**self.state.extra, **fields}))

    # ----- running ----------------------------------------------------------------------------
    def run(self, steps_: int | None = None) -> "Fit":
        """Up to ``steps_`` more steps (default: until the fit's ``iterations``), ending early
        on convergence, divergence, a monitor's stop, the callback, or an interrupt."""
        o = self.opts
        end = o.iterations if steps_ is None else self.t + int(steps_)
        bar = Progress(max(end - self.t, 0), o.progress, f"{o.method} VMP")
        stop = Interrupts()
        quiet = np.errstate(over="ignore", invalid="ignore") if not self.plan.monotone else contextlib.nullcontext()
        try:
            with quiet, stop:
                while self.t < end and not self.done:
                    if stop.requested:
                        self.interrupted = True
                        self._set(message=f"interrupted after iteration {self.t}")
                        break
                    self.step()
                    t = self.t
                    due = (o.evaluate_every and t % o.evaluate_every == 0) or any(
                        m.every and t % m.every == 0 for m in o.monitors)
                    if due:
                        why = self._verdict(t, self.evaluate(t))
                        if why is not None:
                            self._set(message=why)
                            self.done = True
                    bar.update(self.recorder.elbo[-1])
                    if not self.done and o.callback is not None and o.callback(t, self) is False:
                        self._set(message=f"stopped by the callback at iteration {t}")
                        self.done = True
                    if o.checkpoint is not None and o.checkpoint_every and t % o.checkpoint_every == 0:
                        self.save(o.checkpoint)
        except ConvergenceError as err:
            self._set(message=f"diverged: {err}", diverged=True)
            self.done = True
            if self.plan.monotone:
                raise
        except _Stop as err:
            self._set(message=f"stopped by a monitor: {err}", diverged=True)
            self.done = True
        finally:
            bar.close()
            self._commit(self.engine.executor.finish(self.state))
        if stop.requested:
            self.interrupted = True
            if "interrupted" not in self.state.extra["message"]:
                self._set(message=f"interrupted after iteration {self.t}")
        if o.checkpoint is not None:
            self.save(o.checkpoint)
        return self

    def save(self, path) -> None:
        """Write a checkpoint: the state and history now (resume with ``fit(resume=path)``)."""
        self.result(close=False).save(path)

    def result(self, close: bool = True) -> FitResult:
        """The FitResult so far. With ``close`` a stochastic fit evaluates the bound at its last
        step if it was not (for the report; a resumed fit continues from before it)."""
        o = self.opts
        resume = (self.state, copy.deepcopy(self.recorder.raw))
        done = self.recorder.raw["iteration"][-1] if self.recorder.raw["iteration"] else 0
        ev = self.recorder.raw["evaluations"]["iteration"]
        if close and not self.plan.monotone and not self.state.extra["diverged"] and not self.interrupted \
                and ev and ev[-1] != done:
            with np.errstate(over="ignore", invalid="ignore"):
                try:
                    self.evaluate(done)
                except _Stop as err:
                    self._set(message=f"stopped by a monitor: {err}", diverged=True)
            self._commit(self.engine.executor.finish(self.state))
        extra = self.state.extra
        history = self.recorder.history()
        elbo = np.array(self.recorder.elbo, dtype=float)
        info = {"method": o.method} if o.method == "batch" else {"method": o.method, "update": o.update, "tol": o.tol}
        whole = not self.plan.local_step or o.evaluate == "full" or self.plan.evaluation.size == self.plan.plate.size
        info["bound"] = "exact" if whole else (
            f"estimate from {self.plan.evaluation.size} of {self.plan.plate.size} elements of "
            f"'{self.plan.plate_name}'")
        diverged = bool(extra["diverged"]) if not self.plan.monotone else not bool(np.all(np.isfinite(elbo)))
        return FitResult(elbo, bool(extra["converged"]), len(history["iteration"]), extra["message"],
                         extra["decrease"], time.perf_counter() - self.start, extra=info, history=history,
                         diverged=diverged, interrupted=self.interrupted, state=self.state,
                         resume_point=resume)


def _data_plate(model, o: Options) -> str:
    """The plate whose factors batch VMP's policies weight: ``plate=``, or the one outermost
    plate of every observed node."""
    if o.plate is not None:
        return o.plate
    outer = sorted({n.plates[0].name for n in model.nodes.values() if n.has_data and n.plates})
    if len(outer) != 1:
        raise VMPError(f"policies= in batch VMP weight the factors of one data plate: name it with plate= "
                       f"(the observed nodes' outermost plates: {outer})")
    return outer[0]


def _gradient(target, natural) -> tuple:
    """g_t = lambda^temp - lambda, the noisy natural gradient (Ranganath et al. 2013, Sec. 2)."""
    return tuple(a - b for a, b in zip(target, natural))


def _resume_point(resume, model):
    """(State, raw history) from ``resume=``: a FitResult, a Fit, or a checkpoint file."""
    if resume is None:
        return None
    if isinstance(resume, Fit):
        resume = resume.result(close=False)
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


def _independent_axes(engine, node) -> int:
    """The leading plates of ``node`` whose elements get their own rate from a per-element
    schedule: all of them, or those before a plate whose elements meet in one factor (the K
    coordinates of a fully factorized u_m share u_m's drawn children)."""
    plate = engine.coupled_plate(node)
    return len(node.plates) if plate is None else node.plates.index(plate)


def _locate_decrease(engine, state, schedule, start_value) -> dict:
    """One more sweep from ``state``, evaluating the bound after each node's update. Names the
    node whose update lowers the bound (the state is left as it was)."""
    worst = {"node": None, "amount": 0.0}
    value = start_value
    for node in schedule:
        state = state.updated({node.name: engine.coordinate(state, node)})
        new = engine.elbo(state)
        if value - new > worst["amount"]:
            worst = {"node": node.name, "amount": value - new}
        value = new
    return worst


def decrease_text(decrease: dict) -> str:
    """Where ``_locate_decrease`` found the decrease: a node's update, or none (a change at the
    rounding level of the bound's terms, e.g. under a prior of huge precision); with policies no
    sweep is run: the tempered objective's decrease."""
    if decrease.get("objective") == "tempered":
        return f"the tempered objective decreased by {decrease['amount']:.3g} (with policies no sweep locates it)"
    if decrease.get("node") is None:
        return ("in a diagnostic sweep no single node's update lowered it (a change at the rounding level "
                "of the bound's terms?)")
    return f"in a diagnostic sweep the update of node '{decrease['node']}' lowered it by {decrease['amount']:.3g}"


def checked_seed(seed) -> int | None:
    """``seed`` as a Python int (a numpy integer or 0-d integer array too), or None; anything
    else, a bool or a negative number (``np.random.default_rng`` refuses it) is an OptionError."""
    if seed is None:
        return None
    try:
        value = operator.index(seed)
    except TypeError:
        value = None
    if value is None or isinstance(seed, (bool, np.bool_)) or value < 0:
        raise OptionError(f"seed= takes a non-negative integer or None, got {seed!r}")
    return value


def default_method(method: str | None, subsample) -> str:
    """``method`` as given; when not given, 'stochastic' with a ``subsample=`` and 'batch' without."""
    if method is not None:
        return method
    return "batch" if subsample is None else "stochastic"


def fit(model, *, method: str | None = None, iterations: int | None = None, n_init: int = 1, **options) -> FitResult:
    """Fit q by variational message passing.

    ``method``: 'batch' or 'stochastic'; when not given, 'stochastic' if ``subsample`` is given,
    else 'batch'.

    ``method="batch"`` (Winn & Bishop 2005, section 3.2): coordinate ascent, parents first; the
    bound never decreases. Options: ``tol`` (stop when the relative change of the bound is below
    it; default 1e-6; tol <= 0 runs every sweep), ``decrease_tol`` and ``on_decrease`` ('warn' or 'raise' when an update
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
    ``tol`` (stop when the evaluated bound has not improved by more than tol relative, and by
    more than 2 standard errors of the change, over the last max(``patience`` evaluations, 3/4 of
    the run) steps, patience default PATIENCE = 5 (:mod:`vmp.inference.stopping`); default None:
    run the iterations). ``step=vmp.Adaptive()`` sets each node's rho from its own gradients (Ranganath
    et al. 2013), times a factor its nodes share (``coupled=True``, the default).

    Both: ``iterations`` (the total number of steps the fit runs to, counting the steps of a
    resumed fit; default BATCH_ITERATIONS = 1000 for batch VMP, which warns with a
    ConvergenceWarning when it ends there before ``tol`` unless tol <= 0;
    STOCHASTIC_ITERATIONS = 200 otherwise), ``seed``, ``init`` ('prior' or {name: initial mean}),
    ``executor`` (where the sums over the data run; default vmp.Serial(), or vmp.Chunked() when observed data are out of
    core), ``progress``, ``callback(t, fit)`` (returning False stops), ``checkpoint`` (a path written at the end, on interrupt and every
    ``checkpoint_every`` steps) and ``resume`` (a path, a FitResult or a Fit to continue from).
    ``n_init``: that many fits from seeds seed, seed + 1, ...; the one with the best final bound
    is kept (scikit-learn's convention), and ``result.extra["n_init_bounds"]`` lists them all.
    """
    if int(n_init) != n_init or n_init < 1:
        raise VMPError(f"n_init= takes a positive integer, got {n_init!r}")
    if n_init > 1 and (options.get("resume") is not None or options.get("checkpoint") is not None):
        raise VMPError("n_init= restarts from new seeds: it does not combine with resume= or checkpoint=")
    unknown = sorted(set(options) - {f.name for f in fields(Options)})
    if unknown:
        raise OptionError(f"fit() has no option {', '.join(map(repr, unknown))}; its options: method, iterations, "
                          f"n_init, " + ", ".join(f.name for f in fields(Options) if f.name not in ("method", "iterations")))
    seed = checked_seed(options.pop("seed", 0))
    method = default_method(method, options.get("subsample"))
    if iterations is None:
        iterations = BATCH_ITERATIONS if method == "batch" else STOCHASTIC_ITERATIONS
    best, bounds = None, []
    for k in range(int(n_init)):
        result = Fit(model, method=method, iterations=iterations, seed=None if seed is None else seed + k,
                     **options).run().result()
        bounds.append(result.final_elbo)
        if best is None or (np.isfinite(result.final_elbo) and not result.final_elbo <= best.final_elbo):
            best = result
    model.state = best.state
    if n_init > 1:
        best.extra["n_init_bounds"] = bounds
    tol = 1e-6 if options.get("tol") is None else options["tol"]
    if method == "batch" and not best.converged and best.message == "reached the iteration limit" \
            and tol > 0 and len(best.elbo) > 1:
        change = abs(best.elbo[-1] - best.elbo[-2]) / max(abs(best.elbo[-1]), 1e-300)
        warnings.warn(f"model '{model.name}': batch VMP reached iterations={best.iterations} with the relative "
                      f"ELBO change {change:.2g} still above tol={tol:g}; q is not converged: "
                      f"pass a larger iterations= (or resume=result)", ConvergenceWarning, stacklevel=3)
    return best
