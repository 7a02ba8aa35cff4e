"""Step-size schedules rho_t, t = 1, 2, ... (Robbins & Monro 1951; Paquet section 2.2;
Ranganath et al. 2013).

A schedule is a rule with plain-data state kept in the fit's State (``state.loop.schedules``,
one entry per stepped node), so a checkpoint and its resume give the same bits::

    st = schedule.start()
    gradients = [...]                       # only if schedule.samples_wanted(st) > 0
    st = schedule.prime(gradients, st)
    rho, st = schedule.rate(t, gradient, st)   # gradient: lambda^temp - lambda, a tuple of arrays

The fixed schedules (RobbinsMonro, Constant, Warmup) are functions of t: ``rate`` ignores the
gradient, and the loop does not compute it for them (``needs_gradient = False``).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


from .. import domains
from ..errors import OptionError, VMPError
from .engine import along


class Schedule(ABC):
    #: whether :meth:`rate` reads the natural gradient (the loop computes it first if so)
    needs_gradient = False

    @abstractmethod
    def __call__(self, t: int) -> float:
        """rho_t for step t = 1, 2, ..."""

    def start(self, axes: int = 0, own_draws: bool = False, exact=None) -> Any:
        """The schedule's state before the first step, as plain data; ``axes``, ``own_draws``
        and ``exact`` as in :meth:`Adaptive.start`."""
        return None

    def samples_wanted(self, st: Any) -> int:
        """How many extra gradient samples :meth:`prime` wants before the next step."""
        return 0

    def prime(self, gradients: list, st: Any) -> Any:
        """The state after seeing ``gradients`` drawn at the initial q (see :class:`Adaptive`)."""
        return st

    def rate(self, t: int, gradient: tuple | None, st: Any) -> tuple[float, Any]:
        """(rho_t, the next state) given the natural gradient of step t."""
        return self(t), st

    def rate_before(self, t: int, st: Any) -> float:
        """rho_t for a step whose gradient is known only once the step is taken (a node stepped
        slice by slice); the loop then gives that gradient to :meth:`rate` for the next state."""
        return self(t)

    def pool(self, states: list) -> list:
        """The states of the nodes stepped with this schedule after a step, given together (a
        schedule that reads all nodes at once, as :class:`Adaptive` with ``coupled=True``)."""
        return states


@dataclass(frozen=True)
class RobbinsMonro(Schedule):
    """rho_t = rho1 * ((t + tau) / (1 + tau)) ** -kappa, so that rho_1 = rho1.

    tau is scikit-learn's ``learning_offset``, kappa its ``learning_decay``; kappa in (0.5, 1]
    satisfies sum rho = inf, sum rho^2 < inf. With rho1 = (1 + tau)^-kappa this is Hoffman et
    al.'s (t + tau)^-kappa.
    """

    tau: float = 1.0
    kappa: float = 0.6
    rho1: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "tau", domains.number("RobbinsMonro(tau=)", self.tau, 0.0))
        object.__setattr__(self, "kappa", domains.number("RobbinsMonro(kappa=)", self.kappa, 0.0, 1.0))
        object.__setattr__(self, "rho1", domains.number("RobbinsMonro(rho1=)", self.rho1, 0.0, 1.0, above=True))

    def __call__(self, t: int) -> float:
        return self.rho1 * ((t + self.tau) / (1.0 + self.tau)) ** -self.kappa


@dataclass(frozen=True)
class Constant(Schedule):
    """rho_t = rho."""

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", domains.number("Constant(rho=)", self.rho, 0.0, 1.0, above=True))

    def __call__(self, t: int) -> float:
        return self.rho


@dataclass(frozen=True)
class Warmup(Schedule):
    """rho = 1 for the first ``iterations`` steps, then ``then(t - iterations)`` (the warm-up of
    the recommender system Paquet describes)."""

    iterations: int
    then: Schedule = RobbinsMonro()

    def __post_init__(self):
        object.__setattr__(self, "iterations", domains.integer("Warmup(iterations=)", self.iterations, 0))
        if not isinstance(self.then, Schedule):
            raise domains.refuse("Warmup(then=)", "a schedule (vmp.RobbinsMonro(), vmp.Constant(rho), ...)", self.then)
        if self.then.needs_gradient:
            raise OptionError(f"Warmup(then={self.then!r}): a schedule that reads the gradient cannot follow a "
                              f"warm-up; vmp.Adaptive() takes a full first step (rho_1 = 1) by itself")

    def __call__(self, t: int) -> float:
        return 1.0 if t <= self.iterations else self.then(t - self.iterations)


#: the coupled factors' state at a node's start (``Adaptive(coupled=True)``): z, this step's
#: agreement and its norm, log f, log f_0 and their cap, the number n of gradients taken
COUPLED_START = {"z": None, "agree": 0.0, "norm": 0.0, "log_f": 0.0, "log_f0": 0.0, "cap": 0.0, "n": 0, "spent": 0.0}


@dataclass(frozen=True)
class Adaptive(Schedule):
    """Ranganath, Wang, Blei & Xing (2013)'s adaptive learning rate, per node (or per plate element),
    by default times a factor f >= 1 that the nodes of one schedule object share (``coupled``).

    With g_t = lambda^temp_t - lambda_t the node's noisy natural gradient (all its natural
    parameter arrays as one vector), Ranganath et al. 2013, Sec. 3.2 and Algorithm 1:

        gbar_t  = (1 - 1/tau_t) gbar_(t-1) + (1/tau_t) g_t                   (moving average of g)
        hbar_t  = (1 - 1/tau_t) hbar_(t-1) + (1/tau_t) g_t^T g_t             (... of its squared norm)
        rho_t   = gbar_t^T gbar_t / hbar_t                                   (the estimated optimal rate)
        tau_t+1 = tau_t (1 - rho_t) + 1                                      (the memory)

    rho_t estimates E[g]^T E[g] / E[g^T g] = |E g|^2 / (|E g|^2 + tr Cov g): 1 without noise, small
    when the noise dominates the gradient. At a fixed q it settles where rho = (|E g|^2 + s rho /
    (2 - rho)) / (|E g|^2 + s), s = tr Cov g (its averages hold about 1/rho gradients), between
    that ideal and twice it.

    The start. ``samples=0`` (the default): the first step's own gradient starts the averages
    (gbar = g_1, hbar = g_1^T g_1, tau_1 = 1, so rho_1 = 1) and nothing extra is read.
    ``samples=n >= 2``: n gradients (fresh draws of the fit's subsample before the node's first
    step) give gbar and hbar their starting values and tau_1 = n, the paper's Monte Carlo
    initialization; they are drawn where that step reads its target (under option (a) after
    the nodes before it moved, not at the initial q). One draw would give rho = 1 and tau = 1,
    and the paper's rule then stays at rho = 1 (the averages hold one gradient only). For the
    same reason the memory is kept at ``min_tau`` or more (default 1.2, a departure from the
    paper; ``min_tau=1`` is its rule exactly): with tau = 1 the averages are the last gradient
    alone, rho_t = 1 whatever the noise, and tau stays 1, a fixed point the rule never leaves
    once a step reaches rho = 1 (the default start relies on the floor from its first step). A
    zero gradient (hbar = 0) gives rho = 1: the target is the current q.

    ``per="node"``: one rate for the node, all its natural parameters as one vector.
    ``per="element"``: gbar per element, hbar and tau per element of the node's first ``axes``
    plates (given to :meth:`start` by the loop: its plates before any whose elements meet in one
    factor), the rate an array over those plates; Ranganath et al.'s rule per block of natural
    parameters. ``per="auto"`` (the default): with ``coupled=False``, per element where each
    element draws its own children and the nodes step one after the other (PerNode, option
    (a)), per node otherwise
    (a Minibatch's elements share one draw; under option (b)'s simultaneous steps one rate per
    element does worse on MovieLens). Under PerNode and option (a), an element whose
    draw is all its children (N_i <= C: Paquet eq. (6) with scale 1, batch VMP's target) steps
    with rate 1, its coordinate update; its averages still take its gradients. With one rate per
    node (``coupled=True``), a node whose elements all read all their children steps with rate 1.

    ``coupled=True`` (the default; ``coupled=False`` is the paper's rule alone): the rate above
    times a factor f >= 1 shared by all the nodes stepped with this schedule object, for the
    coupling the one-step rule misses (docs/stochastic.md, "How vmp.Adaptive sets its rates"); ``per="auto"``
    then means one rate per node under both options. The rule
    minimizes the distance to the node's own target; along a slow joint mode (contraction delta
    per unit of rho) the distance to the joint optimum is minimized by the rule's rate over
    delta. That rate is where the step's gradient is orthogonal to the error it leaves
    (d/drho E|lambda_t + rho g_t - lambda*|^2 = 0), and that error is what the later steps
    travel; in a stationary stretch E[g_t^T g_(t+k)] = E[g_(t-k)^T g_t], so the test reads the
    agreement of each gradient with the discounted sum of the earlier ones (Kesten 1958's test of
    successive steps, pooled over all the nodes' natural parameters)::

        z_t    = (1 - rho_(t-1) / horizon) z_(t-1) + g_(t-1)              (per node; z_1 = 0)
        A_t    = sum_nodes g_t^T z_t / sum_nodes |g_t| |z_t|
        log f <- min(cap, max(0, log f + min(1 / horizon, gain rhobar_t A_t)))   (after each step)

    For one mode of contraction delta at a constant rate, sum_k E[g_t^T g_(t-k)] (1 - rho /
    horizon)^(k-1) is proportional to delta e^2 (1 - rho delta) - rho s (e its distance to the
    optimum, s the noise): zero at the rate |m|^2 / (delta (|m|^2 + s)), m = delta e, below
    zero (f falls to 1, the rule's rate) on a fixed target with noise only. ``horizon`` (in
    units of the sum of rho) sets the slowest mode the test sees at half weight (delta = 1 /
    horizon). rhobar_t is the nodes' mean rate: f moves on the iterate's time scale (by at most
    ``gain`` per unit of the sum of rho), so the noise of A_t, large when the nodes have few
    natural parameters, does not pile up against the floor f = 1 at small rates; it rises at
    most e-fold per ``horizon`` steps and falls without that limit (too large a rate is the
    costlier error): z discounts by 1 - rho / horizon >= 1 - 1 / horizon a step, so it takes at
    least ``horizon`` steps to renew, and a rise of f is read by A only once z holds the
    gradients it caused; faster, f outruns its test (rising by gain / horizon = 0.5 a step, under
    option (a) on MovieLens f goes 1 -> 10 in 6 steps, the rates reach 1 before A turns, and the
    bound falls up to 40-fold before it recovers);
    cap = -log of the smallest rule rate of the nodes, beyond which no rate changes.
    The agreement's zero is a one-step optimum. Pooled over modes, the fast ones' noise (A < 0 at
    any rate above their 1/(delta t)) holds f where the slow ones still agree (A > 0), and the
    two errors are not alike: at the rates c / (delta t) a mode's error is c^2 / (2c - 1) times
    the optimum's for c > 1/2, so a rate too large by 1.5 costs 12.5% and one too small by 2 (c
    = 1/2) loses the 1/t convergence. So f moves on the agreement's distance from a target A*_n
    < 0 (the A a lone noise-only mode, delta = 1, reads at the rate c_* / n: n the gradients
    the node has taken, c_* = ``target_gain``), the factor above becomes f_0, and::

        A*_n    = -kappa sqrt(c_* / (2 (1 + 1 / horizon) n)),  kappa = 2 (c_* - 1) / (2 c_* - 1)
                  (0 until the rates taken sum to horizon)
        log f   <- min(cap, max(log f_0, log f + min(1 / horizon, gain rhobar_t (A_t - A*_n))))
        rho_t   = max(min(1, f_0 rho_rule), min(f rho_rule, c_* horizon / n))

    A mode's A at the rates c / (delta t) is (1 - c delta) / (2 c delta - 1) sqrt(2 c / ((delta
    + 1 / horizon) t)) (from the stationary sums above), so on a lone noise-only mode f settles
    at c_* (12.5% more error at c_* = 1.5; c_* = 1 gives f = f_0, the zero alone), and where
    slow modes agree it rises further. That value is a stationary sum, which z holds only once it
    has renewed: z discounts by 1 - rho / horizon a step, so until the rates taken sum to
    horizon the target is the zero (f = f_0 on a mixture's first steps under Minibatch). The rate f adds is kept below c_* horizon / n: c_* times
    the Kalman gain 1 / (delta n) from a diffuse start of the slowest mode the test weighs at
    half weight (delta = 1 / horizon), the multiple f's target gives a lone mode; no mode that f
    serves wants more at any n (without it, on MovieLens, f reaches 50 to 175 and the bound falls
    by 3% to 40% before it recovers); slower modes keep f_0, the agreement's zero.
    Elements stepped with rate 1 for exactness are left out of A_t (f does not move them).
    rhobar_t and z's discount read the rate :meth:`rate` returns with the step's gradient,
    before a monitor's back-off: the rate the node takes at this step, or, for a node stepped
    slice by slice (below), the rate it will take at the next one.

    Each stepped node keeps its own averages. A monitor's back-off factor multiplies rho_t; the
    averages see every gradient. A node stepped slice by slice (coupled elements under option
    (a)) learns its gradient only during the step, from the slices' own targets: it is stepped
    with :meth:`rate_before` (the rule's rate after the previous gradient) and its averages then
    take the step's gradient, so the children are read once.
    """

    samples: int = 0
    min_tau: float = 1.2
    per: str = "auto"
    coupled: bool = True
    horizon: float = 10.0
    gain: float = 5.0
    target_gain: float = 1.5

    needs_gradient = True

    def __post_init__(self):
        if not self.min_tau >= 1:
            raise OptionError(f"Adaptive(min_tau=) takes a number >= 1 (the shortest memory), got {self.min_tau!r}")
        if int(self.samples) != self.samples or self.samples < 0 or self.samples == 1:
            raise OptionError(f"Adaptive(samples=) takes 0 (start from the first step's gradient) or an integer >= 2 "
                              f"(the gradients drawn to start the averages), got {self.samples!r}")
        if self.samples == 0 and self.min_tau == 1:
            raise OptionError("Adaptive(samples=0, min_tau=1): started from one gradient, the paper's rule stays at "
                              "rho = 1 for ever; take min_tau > 1 or samples >= 2")
        if not isinstance(self.coupled, (bool, np.bool_)):
            raise OptionError(f"Adaptive(coupled=) takes True (the rule's rate times a factor the nodes share) or "
                              f"False (the paper's rule alone), got {self.coupled!r}")
        if not (isinstance(self.target_gain, (int, float, np.number)) and 1 <= self.target_gain < np.inf):
            raise OptionError(f"Adaptive(target_gain=) takes a finite number >= 1 (the gain c / t the factor's target "
                              f"gives a lone noise-only mode; 1: the agreement's zero), got {self.target_gain!r}")
        for name in ("horizon", "gain"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.number)) and np.isfinite(value) and value > 0):
                raise OptionError(f"Adaptive({name}=) takes a finite number > 0, got {value!r}")
        if self.per not in ("auto", "element", "node"):
            raise OptionError(f"Adaptive(per=) takes 'element' (one rate per plate element), 'node' (one rate per "
                              f"node) or 'auto' (per element under PerNode and option (a), else per node), "
                              f"got {self.per!r}")

    def __call__(self, t: int) -> float:
        raise VMPError("vmp.Adaptive() sets rho from the fit's gradients: use it as step= of a stochastic fit")

    def start(self, axes: int = 0, own_draws: bool = False, exact=None) -> dict:
        """``axes``: how many leading axes of the node's natural parameters are plates whose
        elements may each keep their own averages; ``own_draws``: whether each element draws its
        own children and steps before the next node's target is read (PerNode, option (a)).
        ``per="element"`` keeps averages per element of those plates, ``per="auto"`` does so
        when ``own_draws``, ``per="node"`` never. ``exact``: a boolean array over those plates,
        the elements whose draw is all their children (N_i <= C); with averages per element and
        ``own_draws`` they step with rate 1, and so does a node with one rate whose elements all
        are (its target is batch VMP's: the coordinate update)."""
        per_element = self.per == "element" or (self.per == "auto" and own_draws and not self.coupled)
        masked = per_element and own_draws and axes > 0 and exact is not None and bool(np.any(exact))
        whole = own_draws and exact is not None and np.size(exact) > 0 and bool(np.all(exact))
        mask = np.asarray(exact, dtype=bool) if masked else (np.asarray(True) if whole else None)
        st = {"g": None, "h": 0.0, "tau": float(max(self.samples, self.min_tau)),
              "axes": axes if per_element else 0, "exact": mask}
        return {**st, **COUPLED_START} if self.coupled else st

    def samples_wanted(self, st: dict | None) -> int:
        return self.samples if st is None or st["g"] is None else 0

    def prime(self, gradients: list, st: dict) -> dict:
        """gbar, hbar = the sample means of g and g^T g over ``gradients`` (Ranganath et al.
        2013, Algorithm 1, initialization); tau_1 = their number."""
        n, axes = len(gradients), st.get("axes", 0)
        g = tuple(sum(parts) / n for parts in zip(*gradients))
        h = sum(_square(x, axes) for x in gradients) / n
        tau = float(max(n, self.min_tau))
        return {**st, "g": g, "h": h, "tau": tau if axes == 0 else np.full(np.shape(h), tau)}

    def rate(self, t: int, gradient: tuple | None, st: dict) -> tuple:
        if gradient is None or st is None or (st["g"] is None and self.samples):
            raise VMPError("vmp.Adaptive(): rate() needs the gradient and averages started by prime()")
        axes = st.get("axes", 0)
        if self.coupled and "log_f" not in st:  # a fit resumed from another schedule's state
            st = {**st, **COUPLED_START}
        if st["g"] is None:  # samples=0: the first gradient starts the averages, rho_1 = 1
            st = self.prime([gradient], st)
            st["tau"] = np.ones_like(st["tau"]) if axes else 1.0
        w = 1.0 / st["tau"]
        g = tuple((1.0 - along(w, a)) * a + along(w, a) * b for a, b in zip(st["g"], gradient))
        h = (1.0 - w) * st["h"] + w * _square(gradient, axes)
        rho = _ratio(g, h, axes, st.get("exact"))
        tau = np.maximum(st["tau"] * (1.0 - rho) + 1.0, self.min_tau)
        new = {**st, "g": g, "h": h, "tau": float(tau) if axes == 0 else tau}
        if not self.coupled:
            return rho, new
        exact = st.get("exact")
        free = np.ones(np.shape(rho), dtype=bool) if exact is None else np.logical_not(exact)
        least = float(np.min(np.where(free, rho, 1.0)))
        cap = -np.log(least) if least > 0 else 0.0
        n = st.get("n", 0) + 1
        rho = self._coupled(rho, st, n)
        return (float(rho) if axes == 0 else rho), {**new, **self._agreement(gradient, rho, free, st), "cap": cap,
                                                    "n": n}

    def _coupled(self, rule, st: dict, n: int):
        """max(min(1, f_0 rule), min(f rule, c_* horizon / n)) (the class docstring)."""
        log_f = st.get("log_f", 0.0)
        high = np.minimum(np.exp(log_f) * rule, min(1.0, self.target_gain * self.horizon / n))
        return np.maximum(np.minimum(1.0, np.exp(st.get("log_f0", log_f)) * rule), high)

    def _agreement(self, gradient: tuple, rho, free, st: dict) -> dict:
        """g_t^T z_t and |g_t| |z_t| of this step over the ``free`` elements (those not stepped
        with rate 1 by exactness), and z_(t+1) (``coupled=True``)."""
        z = st["z"]
        seen = gradient if np.all(free) else tuple(along(free, a) * a for a in gradient)
        agree = 0.0 if z is None else float(sum(np.sum(a * b) for a, b in zip(seen, z)))
        past = z if z is None or np.all(free) else tuple(along(free, b) * b for b in z)
        norm = 0.0 if z is None else float(np.sqrt(_square(seen) * _square(past)))
        decay = np.maximum(0.0, 1.0 - np.asarray(rho) / self.horizon)
        z = tuple(a.copy() for a in gradient) if z is None else \
            tuple(along(decay, b) * b + a for a, b in zip(gradient, z))
        return {"z": z, "agree": agree, "norm": norm, "taken": float(np.mean(rho))}

    def pool(self, states: list) -> list:
        """log f_0 <- min(cap, max(0, log f_0 + min(1 / horizon, gain rhobar A))) with A = sum g^T
        z / sum |g| |z| over the nodes' states of the step, and log f likewise on A - A*_n
        (``coupled=True``; the class docstring); every node takes the new f_0 and f."""
        if not self.coupled or not states:
            return states
        norm = sum(st.get("norm", 0.0) for st in states)
        if norm <= 0:
            return states
        cap = max(st.get("cap", 0.0) for st in states)  # beyond it no node's rate changes
        taken = float(np.mean([st.get("taken", 0.0) for st in states]))
        agree, h, c = sum(st["agree"] for st in states), self.horizon, self.target_gain
        old = states[0]["log_f"]
        log_f0 = min(cap, max(0.0, states[0].get("log_f0", old) + min(1.0 / h, self.gain * taken * agree / norm)))
        spent = states[0].get("spent", 0.0) + taken
        n = max(st.get("n", 1) for st in states)
        target = -2 * (c - 1) / (2 * c - 1) * np.sqrt(c / (2 * (1 + 1 / h) * n)) if spent >= h else 0.0
        log_f = min(cap, max(log_f0, old + min(1.0 / h, self.gain * taken * agree / norm - self.gain * taken * target)))
        return [{**st, "log_f": log_f, "log_f0": log_f0, "spent": spent, "agree": 0.0, "norm": 0.0} for st in states]

    def rate_before(self, t: int, st: dict):
        """gbar^T gbar / hbar of the averages so far: the rate the rule gave after the last
        gradient (the Monte Carlo start's at t = 1), applied one step later. The sequence of
        averages, memories and rates is the paper's; the step it multiplies is the next one."""
        if st is not None and st["g"] is None and not self.samples:
            return 1.0
        if st is None or st["g"] is None:
            raise VMPError("vmp.Adaptive(): rate_before() needs the averages started by prime()")
        rho = _ratio(st["g"], st["h"], st.get("axes", 0), st.get("exact"))
        return self._coupled(rho, st, st.get("n", 0) + 1) if self.coupled else rho


def pool(schedules: dict, states: dict) -> dict:
    """The nodes' schedule states after a step, each schedule's :meth:`Schedule.pool` given the
    states of all the nodes it steps (one object given as ``step=``, or one value of a dict)."""
    out = dict(states)
    groups: dict = {}
    for name, schedule in schedules.items():
        if states.get(name) is not None:
            groups.setdefault(id(schedule), (schedule, []))[1].append(name)
    for schedule, names in groups.values():
        out.update(zip(names, schedule.pool([states[n] for n in names])))
    return out


def _square(arrays, axes: int = 0):
    """The squared norm of ``arrays`` per element of their first ``axes`` axes (a float for 0)."""
    if axes == 0:
        return float(sum(np.sum(np.square(a)) for a in arrays))
    return sum(np.sum(np.square(a), axis=tuple(range(axes, a.ndim))) for a in arrays)


def _ratio(g: tuple, h, axes: int, exact=None):
    """min(1, gbar^T gbar / hbar), 1 where hbar = 0 or the element is ``exact`` (per element of
    the first ``axes`` axes)."""
    if axes == 0:
        return min(1.0, _square(g) / h) if h > 0 and not (exact is not None and exact) else 1.0
    sq = _square(g, axes)
    ok = h > 0 if exact is None else (h > 0) & ~exact
    return np.where(ok, np.minimum(1.0, sq / np.where(ok, h, 1.0)), 1.0)


@dataclass(frozen=True)
class _Function(Schedule):
    """A plain function t -> rho given as ``step=``."""

    function: Callable[[int], float]

    def __call__(self, t: int) -> float:
        return float(self.function(t))


def per_node(step, names) -> dict:
    """Resolve ``step=`` (one schedule or function of t, or a dict from node names to them with
    an optional 'default') to a Schedule for every name."""
    if isinstance(step, dict):
        default = step.get("default", RobbinsMonro())
        unknown = set(step) - set(names) - {"default"}
        if unknown:
            raise OptionError(f"step=: no hidden node named {', '.join(map(repr, sorted(unknown, key=str)))}; "
                              f"the stepped nodes: {', '.join(map(repr, names))}")
        return {n: _schedule(step.get(n, default)) for n in names}
    return {n: _schedule(step) for n in names}


def _schedule(step) -> Schedule:
    if isinstance(step, Schedule):
        return step
    if callable(step):
        return _Function(step)
    raise OptionError(f"step= takes a schedule (vmp.RobbinsMonro(), vmp.Adaptive(), ...), a function of t, or a dict "
                   f"from node names to them; got {step!r}")
