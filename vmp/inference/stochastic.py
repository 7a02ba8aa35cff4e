"""Stochastic VMP (Paquet Alg. 1 and 2; Hoffman et al. 2013):

    lambda_i^temp = eta_i + (N_i / C) sum_{k in drawn children} eta_ki             (Paquet eq. (6))
    lambda_i <- (1 - rho_t) lambda_i + rho_t lambda_i^temp

option (a) ``update="per-node"``: each node's new lambda is used by the next node;
option (b) ``update="global"``: every lambda^temp from one snapshot, then all applied.
"""
from __future__ import annotations

import time
import warnings

import numpy as np

from ..errors import ConvergenceError
from ..graph.leaves import Context
from .engine import Engine
from .init import initialize
from ..policies.base import combine
from .progress import Progress
from .result import FitResult
from .schedules import RobbinsMonro, per_node
from .subsample import Minibatch, PerNode


class DivergenceWarning(UserWarning):
    """A monitor with action='warn' saw a step or a bound that signals divergence."""


def _accesses(engine, contexts) -> int:
    """Observed-node elements read by one node update (the x-axis of Paquet's Fig. 2)."""
    total = 0
    for name, ctx in contexts.items():
        child = engine.nodes[name]
        if child.observed:
            total += int(np.prod(child.plate_shape if ctx is None else ctx.shape(child.plates)))
    return total


def _factor_context(ctx: Context, child, base, weight) -> Context:
    """The minibatch context for one factor, scaled by ``base`` times a policy weight (a number,
    or one value per drawn datapoint, spread over the factor's elements of that datapoint)."""
    scale = np.asarray(base, float)
    if weight is not None:
        w = np.asarray(weight, float)
        if w.ndim:
            axis = next((i for i, p in enumerate(child.plates) if p.name in ctx.owner), None)
            if axis is not None:
                shape = [1] * len(child.plates)
                shape[axis] = -1
                w = w[ctx.owner[child.plates[axis].name]].reshape(shape)
            else:
                w = np.asarray(1.0)
        scale = scale * w
    return Context(subset=ctx.subset, overrides=ctx.overrides, scale=None if scale.ndim == 0 and scale == 1.0 else scale,
                   owner=ctx.owner)


def _contexts(engine: Engine, ctx: Context, node, base, weight, own: bool) -> dict:
    """Per factor touching ``node``: the scaled context for factors on the minibatch, else None
    (``own``: the node's own factor is on the minibatch too, as for local nodes)."""
    out = {}
    for f in engine.touching[node.name]:
        on_batch = (own or f.child is not node) and any(p.name in ctx.subset for p in f.child.plates)
        out[f.child.name] = _factor_context(ctx, f.child, base, weight) if on_batch else None
    return out


def local_step(engine: Engine, mb: Minibatch, ctx: Context, rng: np.random.Generator,
               weight=None) -> tuple[dict, int]:
    """Optimize the local nodes of one minibatch given the current global q.

    A pure function of (global moments, the rows in ``ctx``): the locals start from their prior
    messages, so nothing of earlier minibatches leaks in. ``weight`` (a policy's local weight,
    e.g. 1/T) multiplies the minibatch's factors. Returns the locals' natural parameters
    (restricted to the rows) and the number of observed elements read.
    """
    ctx.overrides = {}
    natural = {}
    for node in mb.local:
        own = _factor_context(ctx, node, 1.0, weight)
        natural[node.name] = engine.factors[node.name].messages(node, ctx=own)
        ctx.overrides[node.name] = node.family.moments(natural[node.name])
    data = [f for f in engine.factors.values() if f.child.observed and any(p.name in ctx.subset for p in f.child.plates)]
    size = sum(int(np.prod(ctx.shape(f.child.plates))) for f in data)
    accesses = 0
    for _ in range(mb.local_iterations):
        change = 0.0
        for node in reversed(mb.local):
            new = engine.target(node, ctx=ctx if weight is None else _contexts(engine, ctx, node, 1.0, weight, True))
            moments = node.family.moments(new)
            change = max(change, _mean_change(node.family, natural[node.name], ctx.overrides[node.name], new, moments))
            natural[node.name] = new
            ctx.overrides[node.name] = moments
        accesses += size
        if change < mb.local_tol:
            break
    return natural, accesses


def minibatch_targets(engine: Engine, mb: Minibatch, ctx: Context, nodes, weight=None) -> dict:
    """lambda^temp of each global node from one minibatch (locals already in ``ctx``): its prior
    message plus N/|S| times the summed messages of the minibatch's factors, each datapoint's
    messages times the policies' global weight (SVI+, annealing)."""
    return {node.name: engine.target(node, ctx=_contexts(engine, ctx, node, mb.scale, weight, False))
            for node in nodes}


def fit_stochastic(model, *, subsample, update: str = "per-node", step=None, iterations: int = 100,
                   seed: int | None = 0, init=None, evaluate_every: int = 10, callback=None,
                   progress: bool | None = None, policies=(), monitors=None) -> FitResult:
    """Stochastic VMP. ``subsample``: PerNode(children=C) or Minibatch(plate, size); ``update``:
    'per-node' (option (a)) or 'global' (option (b)); ``step``: a schedule (RobbinsMonro,
    Constant, Warmup) or a dict from node names to schedules with a 'default'; the full ELBO is
    evaluated every ``evaluate_every`` iterations (0: only at the ends), outside the step timings.
    ``callback(t, engine)`` runs after each step; returning False stops.
    ``policies``: message-weighting policies (vmp.SVIPlus, vmp.Annealing) for Minibatch runs.
    ``monitors``: by default DomainMonitor('stop') (a step that leaves a family's domain ends the
    run with ``result.diverged = True``) and ElboMonitor(patience=3, action='warn'); pass a list
    to choose (``[]`` for none), e.g. with action='backoff' to reject steps and shrink rho."""
    if monitors is None:
        from ..monitors import DomainMonitor, ElboMonitor

        monitors = [DomainMonitor(action="stop"), ElboMonitor(patience=3, action="warn")]
    if update not in ("per-node", "global"):
        raise ValueError(f"update must be 'per-node' (option (a)) or 'global' (option (b)), got {update!r}")
    if not isinstance(subsample, (PerNode, Minibatch)):
        raise ValueError("subsample= takes vmp.PerNode(children=C) or vmp.Minibatch(plate, size)")
    engine = Engine(model)
    rng = np.random.default_rng(seed)
    initialize(engine, rng, init)
    run = _Run(engine, subsample, update, step, rng, policies, monitors)
    run.evaluate(0)
    start = time.perf_counter()
    message, diverged = "reached the iteration limit", False
    bar = Progress(iterations, progress, "stochastic VMP")
    # overflow in a diverging run is reported through result.diverged, not as numpy warnings
    quiet = np.errstate(over="ignore", invalid="ignore")
    quiet.__enter__()
    try:
        for t in range(1, iterations + 1):
            run.step(t)
            bar.update(run.evals["elbo"][-1])
            due = (evaluate_every and t % evaluate_every == 0) or any(
                getattr(m, "every", None) and t % m.every == 0 for m in run.monitors)
            if due and not np.isfinite(run.evaluate(t)):
                if not any(m.action == "backoff" for m in run.monitors):
                    message, diverged = f"the ELBO is not finite at iteration {t}", True
                    break
            if callback is not None and callback(t, engine) is False:
                message = f"stopped by the callback at iteration {t}"
                break
    except ConvergenceError as err:
        message, diverged = f"diverged: {err}", True
    except _Stop as err:
        message, diverged = f"stopped by a monitor: {err}", True
    finally:
        quiet.__exit__(None, None, None)
    bar.close()
    seconds = time.perf_counter() - start
    done = run.hist["iteration"][-1] if run.hist["iteration"] else 0
    if not diverged and run.evals["iteration"][-1] != done:
        run.evaluate(done)
    result = FitResult(np.array(run.evals["elbo"]), False, len(run.hist["iteration"]), message, None, seconds,
                       extra={"method": "stochastic", "update": update}, history=run.history())
    result.diverged = diverged or run.diverged
    return result


class _Stop(Exception):
    """A monitor with action='stop' ended the run."""


class _Run:
    """The state of one stochastic fit: schedules, policies, monitors, counters and history."""

    def __init__(self, engine, subsample, update, step, rng, policies=(), monitors=()):
        self.engine, self.sub, self.update, self.rng = engine, subsample, update, rng
        self.policies, self.monitors = list(policies), list(monitors)
        self.minibatch = isinstance(subsample, Minibatch)
        if self.policies and not self.minibatch:
            raise ValueError("policies= weight the factors of a data plate: use subsample=vmp.Minibatch(plate, size)")
        if self.minibatch:
            subsample.prepare(engine, rng)
            self.stepped = subsample.globals
        else:
            subsample.prepare(engine)
            self.stepped = list(engine.schedule())
        for p in self.policies:
            if hasattr(p, "prepare"):
                p.prepare(engine, subsample, rng)
        self.schedules = per_node(RobbinsMonro() if step is None else step, [n.name for n in self.stepped])
        self.backoff = {n.name: 1.0 for n in self.stepped}
        self.hist = {"iteration": [], "accesses": [], "step_seconds": [],
                     "rho": {n.name: [] for n in self.stepped}, "change": {n.name: [] for n in self.stepped}}
        self.evals = {"iteration": [], "accesses": [], "elbo": [], "heldout": []}
        self.events: list = []
        self.accesses = 0
        self.good = None
        self.diverged = False
        self.t = 0

    # ----- monitors ---------------------------------------------------------------------
    def _event(self, monitor, node, message, action) -> None:
        self.events.append({"iteration": self.t, "monitor": type(monitor).__name__, "node": node,
                            "action": action, "message": message})

    def check(self, node, old, new) -> bool:
        """Monitors' verdict on one node's step; False rejects it."""
        for m in self.monitors:
            problem = m.check_step(node, old, new)
            if problem is None:
                continue
            self._event(m, node.name, problem, m.action)
            if m.action == "warn":
                warnings.warn(problem, DivergenceWarning, stacklevel=3)
                self.diverged = True
            elif m.action == "stop":
                self.diverged = True
                raise _Stop(problem)
            else:
                self.backoff[node.name] /= m.factor
                return False
        return True

    def apply(self, node, new) -> None:
        if self.check(node, node.natural, new):
            self.engine._set(node, new)

    def check_elbo(self) -> None:
        for m in self.monitors:
            problem = m.check_elbo(self.t, self.evals["elbo"])
            if problem is None:
                continue
            self._event(m, None, problem, m.action)
            if m.action == "warn":
                warnings.warn(problem, DivergenceWarning, stacklevel=3)
            elif m.action == "stop":
                self.diverged = True
                raise _Stop(problem)
            else:
                if self.good is not None:
                    for node in self.stepped:
                        node.set_natural(self.good[node.name])
                    self.evals["elbo"][-1] = self.good_value
                for name in self.backoff:
                    self.backoff[name] /= m.factor
                return

    # ----- one step ---------------------------------------------------------------------
    def step(self, t: int) -> None:
        engine, tick = self.engine, time.perf_counter()
        self.t = t
        before = {n.name: n.natural for n in self.stepped}
        rho = {n.name: self.schedules[n.name](t) * self.backoff[n.name] for n in self.stepped}
        if self.minibatch:
            self._minibatch_step(t, rho)
        else:
            targets = {}
            for node in self.stepped:
                contexts = self.sub.contexts(engine, node, self.rng)
                self.accesses += _accesses(engine, contexts)
                if self.update == "per-node":
                    engine.update(node, ctx=contexts, rho=rho[node.name], check=self.check)
                else:
                    targets[node.name] = engine.target(node, ctx=contexts)
            if self.update == "global":
                for node in self.stepped:
                    self.apply(node, engine.blend(node.natural, targets[node.name], rho[node.name]))
        self.hist["step_seconds"].append(time.perf_counter() - tick)
        self.hist["iteration"].append(t)
        self.hist["accesses"].append(self.accesses)
        for node in self.stepped:
            self.hist["rho"][node.name].append(rho[node.name])
            self.hist["change"][node.name].append(_relative_change(before[node.name], node.natural))

    def _weights(self, t, rows):
        local = glob = None
        for p in self.policies:
            lw, gw = p.weights(t, rows, self.rng)
            local, glob = combine(local, lw), combine(glob, gw)
            for key, value in p.record(t).items():
                self.hist.setdefault(key, []).append(value)
        return local, glob

    def _minibatch_step(self, t, rho) -> None:
        engine, sub = self.engine, self.sub
        ctx = sub.draw(self.rng)
        rows = ctx.subset[sub.plate_name]
        local, glob = self._weights(t, rows)
        _, acc = local_step(engine, sub, ctx, self.rng, weight=local)
        self.accesses += acc
        for p in self.policies:
            if hasattr(p, "observe_locals"):
                p.observe_locals(engine, ctx)
        observers = [p for p in self.policies if hasattr(p, "observe")]
        if observers:
            plain = Context(subset=ctx.subset, overrides=ctx.overrides, owner=ctx.owner)
            data = sub.scale * sum(float(f.elog(engine.factor_weight(f), ctx=plain)) for f in engine.factors.values()
                                   if any(p.name in ctx.subset for p in f.child.plates))
            for p in observers:
                p.observe(data)
        redraws = max((getattr(p, "redraws", 0) for p in self.policies), default=0)
        if self.update == "global":
            targets = self._valid_targets(ctx, self.stepped, glob, redraws, t, rows)
            if targets is None:
                return
            for node in self.stepped:
                self.apply(node, engine.blend(node.natural, targets[node.name], rho[node.name]))
        else:
            for node in self.stepped:
                lam = self._valid_targets(ctx, [node], glob, redraws, t, rows)
                if lam is not None:
                    self.apply(node, engine.blend(node.natural, lam[node.name], rho[node.name]))
        for node in self.stepped:
            self.accesses += _accesses(engine, {f.child.name: ctx for f in engine.touching[node.name]
                                                if f.child is not node and any(p.name in ctx.subset for p in f.child.plates)})

    def _valid_targets(self, ctx, nodes, glob, redraws, t, rows):
        """Targets from the policies' global weights; a draw whose target leaves the domain
        (negative SVI+ weights) is drawn again, at most ``redraws`` times, then the step is skipped."""
        for attempt in range(redraws + 1):
            targets = minibatch_targets(self.engine, self.sub, ctx, nodes, weight=glob)
            if redraws == 0 or all(np.all(n.family.valid(targets[n.name])) for n in nodes):
                return targets
            if attempt < redraws:
                glob = None
                for p in self.policies:
                    glob = combine(glob, p.weights(t, rows, self.rng)[1])
        self.events.append({"iteration": t, "monitor": "SVIPlus", "node": ",".join(n.name for n in nodes),
                            "action": "skip", "message": f"the weighted target left the domain in {redraws + 1} draws"})
        return None

    def evaluate(self, t: int) -> float:
        """The full ELBO at T = 1 (locals optimized on all data for a minibatch run)."""
        self.t = t
        if self.minibatch:
            _optimize_locals(self.engine, self.sub)
        value = self.engine.elbo(cached=False)
        self.evals["iteration"].append(t)
        self.evals["accesses"].append(self.accesses)
        self.evals["elbo"].append(value)
        if self.minibatch and self.sub.heldout.size:
            self.evals["heldout"].append(heldout_elbo(self.engine, self.sub, self.rng))
        self.check_elbo()
        if np.isfinite(self.evals["elbo"][-1]) and (self.good is None or self.evals["elbo"][-1] >= self.good_value
                                                     or not self.monitors):
            self.good = {n.name: n.natural for n in self.stepped}
            self.good_value = self.evals["elbo"][-1]
        return self.evals["elbo"][-1]

    def history(self) -> dict:
        out = {k: (np.array(v) if not isinstance(v, dict) else {n: np.array(a) for n, a in v.items()})
               for k, v in self.hist.items()}
        out["evaluations"] = {k: np.array(v) for k, v in self.evals.items()}
        out["events"] = list(self.events)
        return out


def _mean_change(family, old_natural, old_moments, new_natural, new_moments) -> float:
    """Mean absolute change of the mean parameter (probabilities, normalized Dirichlet counts,
    means): the local convergence test, as scikit-learn's mean_change of the document topics."""
    from .. import families as fam

    if family is fam.Dirichlet:
        a, b = old_natural[0] + 1.0, new_natural[0] + 1.0
        return float(np.mean(np.abs(a / a.sum(-1, keepdims=True) - b / b.sum(-1, keepdims=True))))
    return float(np.mean(np.abs(old_moments[0] - new_moments[0])))


def _relative_change(old, new) -> float:
    num = sum(float(np.sum((a - b) ** 2)) for a, b in zip(old, new))
    den = sum(float(np.sum(a ** 2)) for a in old)
    return float(np.sqrt(num / den)) if den > 0 else float(np.sqrt(num))


def _optimize_locals(engine: Engine, mb: Minibatch) -> None:
    """Exact local updates on all data given the global q (for evaluating the full ELBO)."""
    for _ in range(mb.local_iterations):
        old = [n.moments for n in mb.local]
        for node in reversed(mb.local):
            engine.update(node)
        change = max((max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(o, n.moments))
                      for o, n in zip(old, mb.local)), default=0.0)
        if change < mb.local_tol:
            break


def heldout_elbo(engine: Engine, mb: Minibatch, rng) -> float:
    """Per-element ELBO of the held-out rows: locals optimized on them, their factors and
    entropies summed, divided by the number of held-out elements."""
    ctx = mb.context(mb.heldout)
    natural, _ = local_step(engine, mb, ctx, rng)
    total = 0.0
    for f in engine.factors.values():
        if any(p.name in ctx.subset for p in f.child.plates):
            total += float(f.elog(engine.factor_weight(f), ctx=ctx))
    for node in mb.local:
        h = node.family.entropy(natural[node.name], ctx.overrides[node.name])
        if node.weights is not None:
            h = h * ctx.take(node.weights, node.plates)
        total += float(np.sum(h))
    return total / mb.heldout.size
