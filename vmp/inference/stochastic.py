"""Stochastic VMP (Paquet Alg. 1-2; Hoffman et al. 2013's SVI): each step reads a draw of the data.

    (Minibatch) the drawn rows' locals <- their optimum given the globals          (Paquet Alg. 2)
    for each stepped node i:   lambda_i <- (1 - rho_t) lambda_i + rho_t lambda_i^temp(draw)

lambda^temp is the node's coordinate-ascent target from the drawn children, scaled by N_i / C
(PerNode) or N / |S| (Minibatch) so that its sum is unbiased (Paquet eq. (6)); rho_t comes from
the node's schedule times the monitors' back-off. Option (a) ``update='per-node'`` steps each
node from the state its predecessors left, option (b) ``'global'`` reads every target from the
state the step began at. Monitors judge each node's step before it is applied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ConvergenceError, VMPError
from ..graph.change import relative_change
from . import steps
from .init import initialize
from .method import Bound, Event, Method, StepInfo, Verdict, combine
from .options import Options
from .schedules import RobbinsMonro, per_node, pool
from .state import LoopState, State
from .stopping import Plateau, observe
from .subsample import Draw, sweep_accesses


class _Stopped(Exception):
    """A monitor with action 'stop' ended the step (never leaves this module)."""


@dataclass
class _Work:
    """One step in progress: what its parts add to the next LoopState and to its StepInfo."""

    t: int
    accesses: int
    policies: list
    backoff: dict
    monitors: list
    rho: dict
    series: dict
    schedules: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    skipped: bool = False

    def info(self, **fields) -> StepInfo:
        return StepInfo(rho=self.rho, series=self.series, events=self.events, **fields)


class StochasticVMP(Method):
    name = "stochastic"
    quiet = True
    closes = True

    def __init__(self, options: Options, engine, rng: np.random.Generator, saved_plan: dict | None = None):
        self.options = s = options.stochastic
        self.policies, self.monitors, self.evaluate_every = options.policies, s.monitors, s.evaluate_every
        self.plan = plan = s.subsample.prepare(engine, rng, saved_plan, s.evaluate_every)
        if self.policies and not plan.policies_allowed:
            raise VMPError("policies= weight the factors of a data plate: use subsample=vmp.Minibatch(plate, size) "
                           "or method='batch'")
        self.schedules = per_node(RobbinsMonro() if s.step is None else s.step, [n.name for n in plan.stepped])
        self.nodes = {n.name: n for n in plan.stepped}
        self.axes = {n.name: independent_axes(engine, n) for n in plan.stepped}
        self.redraws = max((p.redraws for p in self.policies), default=0)
        #: PerNode under option (a): each element of a node draws its own children
        self.own_draws = plan.element_draws and s.update == "per-node"
        self._exact: dict = {}

    def start(self, engine, rng, init) -> tuple[State, int]:
        """The initial q; under option (b), which reads every target from one state, the
        globals are first made to agree (one coordinate sweep, from a minibatch's locals or
        over all data; option (a)'s first step is such a sweep already)."""
        state = initialize(engine, rng, init, self.plan)
        if self.options.update != "global" or isinstance(init, State) or init == "prior":
            return state, 0
        if self.plan.local_step:
            return first_sweep(engine, self.plan, state, rng)
        return steps.sweep(engine, state, self.plan.stepped)[0], sweep_accesses(engine)

    # ----- one step ---------------------------------------------------------------------------
    def step(self, engine, state: State, draw: Draw) -> tuple[State, StepInfo]:
        loop = state.loop
        work = _Work(state.step + 1, loop.accesses, list(loop.policies), dict(loop.backoff), list(loop.monitors),
                     dict.fromkeys(self.schedules, np.nan), dict(draw.records))
        try:
            draw = self._local_step(engine, state, draw, work)
            work.schedules = self._started(engine, loop.schedules)
            if self.options.update == "global":
                current = self._global(engine, state, draw, work)
            else:
                current = self._per_node(engine, state, draw, work)
        except _Stopped as stop:
            return state, work.info(stopped=str(stop))
        except ConvergenceError as err:
            return state, work.info(error=err)
        if not work.skipped:
            work.accesses += sum(self.plan.accesses(engine, draw, node) for node in self.plan.stepped)
        change = {n.name: relative_change(state.natural[n.name], current.natural[n.name]) for n in self.plan.stepped}
        factor = {name: math.exp(st["log_f"]) for name, st in work.schedules.items()
                  if isinstance(st, dict) and "log_f" in st}
        if factor:
            work.series["adaptive_factor"] = factor
        loop = replace(loop, policies=work.policies, backoff=work.backoff, monitors=work.monitors,
                       accesses=work.accesses, schedules=pool(self.schedules, work.schedules))
        return current.updated({}, step=work.t, loop=loop), work.info(change=change)

    def _local_step(self, engine, state: State, draw: Draw, work: _Work) -> Draw:
        """A minibatch's locals given the globals (where the rows live when the executor can,
        without policies), its noisy bound, and the policies' updates from it."""
        plan = self.plan
        if not plan.local_step:
            return draw
        if not self.policies:
            remote = engine.executor.local_step(engine, plan, state, draw.rows, plan.stepped,
                                                self.options.update == "global")
            if remote is not None:
                work.accesses += remote.accesses
                work.series["bound_estimate"] = steps.global_terms(engine, plan, state) + \
                    plan.scale * float(remote.terms.sum())
                return replace(draw, ctx=remote.ctx)
        ctx, natural, accesses = steps.local_step(engine, plan, state, draw.ctx, draw.local_weight)
        work.accesses += accesses
        work.series["bound_estimate"] = steps.minibatch_bound(engine, plan, state, ctx, natural)
        bound = steps.data_bound(engine, plan, ctx) if any(p.needs_data_bound for p in self.policies) else None
        work.policies = [p.observe(engine, plan, ctx, bound, st) for p, st in zip(self.policies, work.policies)]
        return replace(draw, ctx=ctx)

    def _started(self, engine, saved: dict) -> dict:
        """Each node's schedule state, started where the state has none."""
        out = {}
        for name, schedule in self.schedules.items():
            st = saved.get(name)
            out[name] = schedule.start(self.axes[name], self.own_draws, self._exact_elements(engine, name)) \
                if st is None else st
        return out

    def _exact_elements(self, engine, name: str):
        """``Plan.exact`` of a node under PerNode's option (a) (found once), else None."""
        if not self.own_draws:
            return None
        if name not in self._exact:
            self._exact[name] = self.plan.exact(engine, self.nodes[name], self.axes[name])
        return self._exact[name]

    def _per_node(self, engine, state: State, draw: Draw, work: _Work) -> State:
        """Option (a): each node's target from the state its predecessors left."""
        current = state
        for node in self.plan.stepped:
            self._prime(engine, draw, state, current, [node], work)
            if engine.coupled_plate(node) is not None:
                new = self._sliced(engine, current, node, draw, work)
            else:
                targets = self._valid_targets(engine, current, draw, [node], work)
                if targets is None:
                    continue
                rate = self._rate(current, node, targets[node.name], work)
                new = engine.blend(current.natural[node.name], targets[node.name], rate, node)
            current = self._apply(engine, current, node, new, work)
        return current

    def _global(self, engine, state: State, draw: Draw, work: _Work) -> State:
        """Option (b): every target from the state the step began at, then every blend."""
        self._prime(engine, draw, state, state, self.plan.stepped, work)
        targets = self._valid_targets(engine, state, draw, self.plan.stepped, work)
        if targets is None:
            work.skipped = True
            return state
        current = state
        for node in self.plan.stepped:
            rate = self._rate(current, node, targets[node.name], work)
            current = self._apply(engine, current, node, engine.blend(current.natural[node.name],
                                                                      targets[node.name], rate, node), work)
        return current

    def _rate(self, state: State, node, target, work: _Work):
        """rho_t of ``node``: its schedule's rate (given the gradient lambda^temp - lambda when
        the schedule reads one) times the monitors' back-off factor."""
        schedule = self.schedules[node.name]
        gradient = _gradient(target, state.natural[node.name]) if schedule.needs_gradient else None
        rate, work.schedules[node.name] = schedule.rate(work.t, gradient, work.schedules[node.name])
        rate = rate * work.backoff[node.name]
        work.rho[node.name] = float(rate) if np.ndim(rate) == 0 else float(np.mean(rate))
        return rate

    def _sliced(self, engine, state: State, node, draw: Draw, work: _Work):
        """Option (a)'s step of a node whose elements are stepped slice by slice: the rate comes
        first (a schedule that reads the gradient gives :meth:`Schedule.rate_before`), the
        gradient from the slices' own targets after (:meth:`Engine.coordinate_step`), so the
        drawn children are read once."""
        schedule = self.schedules[node.name]
        if not schedule.needs_gradient:
            rate = self._rate(state, node, None, work)
            return steps.coordinate(engine, self.plan, state, draw, node, rate, draw.weight)[0]
        rate = schedule.rate_before(work.t, work.schedules[node.name]) * work.backoff[node.name]
        work.rho[node.name] = float(np.mean(rate))
        new, _, gradient = steps.coordinate(engine, self.plan, state, draw, node, rate, draw.weight, gradient=True)
        work.schedules[node.name] = schedule.rate(work.t, gradient, work.schedules[node.name])[1]
        return new

    def _prime(self, engine, draw: Draw, start: State, state: State, nodes: list, work: _Work) -> None:
        """Ranganath et al. 2013's initialization of the schedules of ``nodes`` that ask for it
        (first step): the gradients of fresh draws, without policy weights, where the step reads
        its targets: local steps at the step's ``start``, targets at ``state``. Option (a) primes
        each node after the nodes before it moved, option (b) every node at the snapshot. A
        coupled node's targets go one slice at a time (each slice reading the ones before it, at
        rho = 1), as its steps read them under both options."""
        wants = {n.name: self.schedules[n.name].samples_wanted(work.schedules[n.name]) for n in nodes}
        nodes = [n for n in nodes if wants[n.name]]
        if not nodes:
            return
        plan, gradients = self.plan, {n.name: [] for n in nodes}
        for _ in range(max(wants[n.name] for n in nodes)):
            fresh = plan.draw(engine, draw.rng)
            if plan.local_step:
                ctx, _, accesses = steps.local_step(engine, plan, start, fresh.ctx)
                fresh, work.accesses = replace(fresh, ctx=ctx), work.accesses + accesses
            targets = steps.targets(engine, plan, state, fresh, nodes, sliced=True)
            for n in nodes:
                gradients[n.name].append(_gradient(targets[n.name], state.natural[n.name]))
            work.accesses += sum(plan.accesses(engine, fresh, n) for n in nodes)
        for n in nodes:
            work.schedules[n.name] = self.schedules[n.name].prime(gradients[n.name][:wants[n.name]],
                                                                  work.schedules[n.name])

    def _valid_targets(self, engine, state: State, draw: Draw, nodes: list, work: _Work) -> dict | None:
        """Targets under the policies' global weights; a draw whose target leaves the domain
        (negative SVI+ weights) is drawn again, at most ``redraws`` times, then the step is
        skipped and an event names the policies that asked for it."""
        weight = draw.weight
        for attempt in range(self.redraws + 1):
            targets = steps.targets(engine, self.plan, state, draw, nodes, weight,
                                    sliced=self.options.update == "global")
            if self.redraws == 0 or all(np.all(n.family.valid(targets[n.name])) for n in nodes):
                return targets
            if attempt < self.redraws:
                weight = None
                for p, st in zip(self.policies, state.loop.policies):
                    weight = combine(weight, p.weights(work.t, draw.rows, draw.rng, st)[1])
        source = ",".join(p.name for p in self.policies if p.redraws)
        work.events.append(Event(source, ",".join(n.name for n in nodes), "skip",
                                 f"the weighted target left the domain in {self.redraws + 1} draws"))
        return None

    def _apply(self, engine, state: State, node, new, work: _Work) -> State:
        """The monitors' verdicts on one node's step; the state with it applied, or unchanged
        (a back-off); a monitor with action 'stop' ends the step."""
        old = state.natural[node.name]
        for i, m in enumerate(self.monitors):
            problem, work.monitors[i] = m.check_step(node, old, new, work.monitors[i])
            if problem is None:
                continue
            work.events.append(Event(m.name, node.name, m.action, problem))
            if m.action == "stop":
                raise _Stopped(problem)
            if m.action == "backoff":
                work.backoff[node.name] /= m.factor
                return state
        engine.check_domain(node, new)
        return state.updated({node.name: (new, engine.moments(node, new))})

    # ----- the bound and the verdict ----------------------------------------------------------
    def bound(self, engine, state: State) -> Bound:
        """The bound with the locals optimized: on the fixed evaluation subsample (an estimate
        with its standard error) or on all data (``evaluate='full'``), and the held-out rows'."""
        plan, stderr, terms = self.plan, 0.0, None
        if plan.local_step and self.options.evaluate == "subsample":
            value, stderr, terms = steps.subsample_bound(engine, plan, state, plan.evaluation, terms=True)
        elif plan.local_step:
            value = engine.elbo(steps.optimize_locals(engine, plan, state), cached=False)
        else:
            value = engine.elbo(state, cached=False)
        heldout = steps.heldout_bound(engine, plan, state) if plan.local_step and plan.heldout.size else None
        return Bound(value, stderr, heldout, terms)

    def objective_rows(self):
        plan = self.plan
        return plan.evaluation if self.options.evaluate == "subsample" else np.arange(plan.plate.size)

    def tempered_bound(self, engine, state: State, rows, weight) -> float:
        return steps.subsample_bound(engine, self.plan, state, rows, weight)[0]

    def observe(self, loop: LoopState, t: int, bound: Bound) -> LoopState:
        """With ``tol``, the stopping rule's memory after the evaluation (:mod:`vmp.inference.stopping`;
        an estimate's per-row terms pair it with earlier ones)."""
        s = self.options
        if s.tol is None:
            return loop
        size = self.plan.plate.size if bound.terms is not None else 0
        memory = observe(loop.plateau or Plateau(), t, bound.value, bound.terms, size, s.tol, s.evaluate_every,
                         s.patience)
        return replace(loop, plateau=memory)

    def verdict(self, engine, state: State, evaluations: dict, watched: list, t: int) -> Verdict | None:
        """A bound that is not finite ends the fit as diverged (unless a monitor backs off);
        with ``tol``, the stopping rule (:mod:`vmp.inference.stopping`): the mean of the last
        ``patience`` evaluations has not improved by more than ``tol`` relative, and by more than 2
        standard errors of the change, on the mean of ``patience`` evaluations before the last
        max(``patience`` evaluations, 3/4 of the run) steps."""
        if not np.isfinite(evaluations["elbo"][-1]) and not any(m.action == "backoff" for m in self.monitors):
            return Verdict(f"the ELBO is not finite at iteration {t}", diverged=True)
        plateau = state.loop.plateau
        if plateau is None or plateau.stop is None:
            return None
        return Verdict(plateau.stop, converged=True, events=[Event("tol", None, "stop", plateau.stop)])

    def diverged(self, loop: LoopState, elbo: np.ndarray) -> bool:
        return bool(loop.diverged)

    def describe(self) -> dict:
        s, plan = self.options, self.plan
        whole = not plan.local_step or s.evaluate == "full" or plan.evaluation.size == plan.plate.size
        bound = "exact" if whole else (f"estimate from {plan.evaluation.size} of {plan.plate.size} elements of "
                                       f"'{plan.plate_name}'")
        return {"method": "stochastic", "update": s.update, "tol": s.tol, "patience": s.patience, "bound": bound}


def first_sweep(engine, plan, state: State, rng: np.random.Generator) -> tuple[State, int]:
    """One coordinate sweep of the global nodes (option (a) order, rho = 1) from the locals of
    one minibatch; returns the state and the observed elements read."""
    draw = plan.draw(engine, rng)
    remote = engine.executor.local_step(engine, plan, state, draw.rows, plan.stepped)
    if remote is not None:
        ctx, count = remote.ctx, remote.accesses
    else:
        ctx, _, count = steps.local_step(engine, plan, state, draw.ctx)
    draw = replace(draw, ctx=ctx)
    for node in plan.stepped:
        state = state.updated({node.name: steps.coordinate(engine, plan, state, draw, node, 1.0)})
    return state, count + sum(plan.accesses(engine, draw, node) for node in plan.stepped)


def independent_axes(engine, node) -> int:
    """The leading plates of ``node`` whose elements get their own rate from a per-element
    schedule: all of them, or those before a plate whose elements meet in one factor (the K
    coordinates of a fully factorized u_m share u_m's drawn children)."""
    plate = engine.coupled_plate(node)
    return len(node.plates) if plate is None else node.plates.index(plate)


def _gradient(target, natural) -> tuple:
    """g_t = lambda^temp - lambda, the noisy natural gradient (Ranganath et al. 2013, Sec. 2)."""
    return tuple(a - b for a, b in zip(target, natural))
