"""What a stochastic step reads: the children each node draws (Paquet Alg. 1) or a minibatch of a
data plate (Paquet Alg. 2, Hoffman et al.'s SVI). Both produce evaluation contexts: subsets of
plates plus the scale N_i / C (or N / |S|) that makes the message sum unbiased (Paquet eq. (6)).

One protocol: a ``Subsample`` (the user's choice, a plain description) is ``prepare``d for one
model into a ``Plan`` (its structure, held by the fit, never on the Subsample); each step the
plan ``draw``s a ``Draw`` from the fit's generator, which gives every stepped node the contexts
of its factors. The Minibatch plan also has local nodes, optimized on the drawn rows before the
global step (``vmp.inference.steps.local_step``). Batch VMP's plan is the BatchPlan: every child.
"""
from __future__ import annotations

import numpy as np

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from .. import domains
from ..errors import GraphError, OptionError
from ..graph.expressions import Gather
from ..graph.leaves import Context, GatherLeaf
from .partition_model import glue


def _groups(index: np.ndarray, size: int):
    """Rows grouped by the element they point to: (order, starts, counts)."""
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index, minlength=size)
    starts = np.cumsum(counts) - counts
    return order, starts, counts


def _ranges(order, starts, counts):
    """Concatenation of order[starts[i]:starts[i] + counts[i]] without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return order[offsets + np.arange(total)]


class _GatherSampler:
    """Children of each element of a gathered node: the rows that point to it."""

    def __init__(self, leaf: GatherLeaf):
        self.plate = leaf.gather.plate.name
        self.order, self.starts, self.counts = _groups(leaf.gather.index, leaf.node.plate_shape[0])

    def draw(self, rng: np.random.Generator, c: int):
        small = self.counts <= c
        rows = [_ranges(self.order, self.starts[small], self.counts[small])]
        scale = [np.ones(rows[0].size)]
        big = np.flatnonzero(~small)
        if big.size:
            n = self.counts[big]
            chosen = np.empty((big.size, c), dtype=np.int64)
            for i in range(c):  # Floyd's algorithm, vectorized over elements
                j = n - c + i
                pick = np.floor(rng.random(big.size) * (j + 1)).astype(np.int64)
                dup = np.any(chosen[:, :i] == pick[:, None], axis=1) if i else np.zeros(big.size, bool)
                chosen[:, i] = np.where(dup, j, pick)
            rows.append(self.order[(self.starts[big][:, None] + chosen).ravel()])
            scale.append(np.repeat(n / c, c))
        rows, scale = np.concatenate(rows), np.concatenate(scale)
        order = np.argsort(rows, kind="stable")
        return rows[order], scale[order]


class _PlateSampler:
    """Children along a plate the node is not in: one draw of C shared by the node's elements."""

    def __init__(self, plate):
        self.plate, self.size = plate.name, plate.size

    def draw(self, rng: np.random.Generator, c: int):
        rows = np.sort(rng.choice(self.size, size=c, replace=False))
        return rows, np.full(c, self.size / c)


class Subsample(ABC):
    """How a stochastic step subsamples: PerNode (Alg. 1) or Minibatch (Alg. 2)."""

    @abstractmethod
    def prepare(self, engine, rng: np.random.Generator, saved: dict | None = None,
                evaluate_every: int = 10) -> "Plan":
        """The plan of this subsampling for one model; ``saved`` is a plan's ``saved()`` from a
        checkpoint (then ``rng`` is not drawn from); ``evaluate_every`` is the fit's rhythm of
        evaluations (a plan may size its evaluations by it)."""


@dataclass
class Draw:
    """What one step reads: per stepped node, the Context of its update (each factor touching it
    in its own Context, ``Context.factors``); for a minibatch, its rows and the Context of the rows (locals in its overrides).
    The loop adds the policies' weights of the rows (``local_weight`` on the local step's
    factors, ``weight`` on the global targets'; None: 1) and their ``records`` for the history,
    and the generator ``rng`` for the draws a step may add (SVI+'s redraws, the Monte Carlo
    start of an adaptive step size)."""

    contexts: dict = field(default_factory=dict)  # node name -> Context
    rows: np.ndarray | None = None
    ctx: Context | None = None
    local_weight: Any = None
    weight: Any = None
    records: dict = field(default_factory=dict)
    rng: np.random.Generator | None = None


class Plan(ABC):
    stepped: list
    local: list = []
    #: policies weight a data plate's factors: only plans that draw its rows take them
    policies_allowed = False
    #: the drawn rows' local nodes are optimized before the global step (Paquet Alg. 2)
    local_step = False
    #: each element of a stepped node draws its own children (Paquet Alg. 1)
    element_draws = False

    @abstractmethod
    def draw(self, engine, rng: np.random.Generator) -> Draw:
        """The subsets of one step, drawn from ``rng``."""

    def contexts(self, engine, draw: Draw, node, weight=None) -> Context:
        """The Context of ``node``'s update: per factor touching it, the Context its message is
        evaluated in."""
        return draw.contexts[node.name]

    def accesses(self, engine, draw: Draw, node) -> int:
        """Observed-node elements read by the step of ``node`` (the x-axis of Paquet's Fig. 2)."""
        return 0

    def saved(self) -> dict:
        """What a checkpoint keeps of the plan (plain data)."""
        return {}

    def exact(self, engine, node, axes: int):
        """Which elements of ``node``'s first ``axes`` plates read all their children in every
        draw (their target is the batch one), a boolean array; None where the plan cannot say."""
        return None


def accesses(engine, ctx: Context) -> int:
    """Observed-node elements read by the factors of ``ctx.factors``."""
    total = 0
    for name, c in ctx.factors.items():
        child = engine.nodes[name]
        if child.has_data:
            total += int(np.prod(c.shape(child.plates)))
    return total


def sweep_accesses(engine) -> int:
    """Observed-node elements read by one batch sweep (every node reads all of its children)."""
    return sum(int(np.prod(f.child.plate_shape)) * len(f.nodes()) for f in engine.factors.values()
               if f.child.has_data)


class PerNode(Subsample):
    """Paquet Alg. 1: every hidden node, per element of its plates, draws ``children`` of its
    children without replacement and scales their messages by N_i / C (eq. (6)); an element
    with fewer children uses them all."""

    def __init__(self, children: int):
        self.children = domains.integer("PerNode(children=)", children, 1)

    def prepare(self, engine, rng=None, saved=None, evaluate_every: int = 10) -> "PerNodePlan":
        return PerNodePlan(engine, self.children)

    def __repr__(self) -> str:
        return f"PerNode(children={self.children})"


class PerNodePlan(Plan):
    element_draws = True

    def __init__(self, engine, children: int):
        self.children = children
        self.stepped = list(engine.hidden)
        self.samplers: dict = {}
        for node in engine.hidden:
            for f in engine.touching[node.name]:
                if f.child is node:
                    continue
                leaf = next(l for l in f.targets if l.node is node)
                if isinstance(leaf, GatherLeaf):
                    sampler = _GatherSampler(leaf)
                else:
                    outside = [p for p in f.child.plates if p not in leaf.plates]
                    sampler = _PlateSampler(max(outside, key=lambda p: p.size)) if outside else None
                self.samplers[(node.name, f.child.name)] = sampler

    def node_contexts(self, engine, node, rng: np.random.Generator) -> Context:
        """The Context of ``node``'s update: per child factor, the children it drew (all: an
        unrestricted Context)."""
        out = {}
        for f in engine.touching[node.name]:
            sampler = None if f.child is node else self.samplers[(node.name, f.child.name)]
            if sampler is None or (isinstance(sampler, _PlateSampler) and sampler.size <= self.children):
                out[f.child.name] = Context()
                continue
            rows, scale = sampler.draw(rng, self.children)
            plate_axis = [p.name for p in f.child.plates].index(sampler.plate)
            shape = [1] * len(f.child.plates)
            shape[plate_axis] = -1
            out[f.child.name] = Context(subset={sampler.plate: rows}, scale=scale.reshape(shape))
        return Context(factors=out)

    def draw(self, engine, rng):
        return Draw(contexts={n.name: self.node_contexts(engine, n, rng) for n in self.stepped})

    def accesses(self, engine, draw, node):
        return accesses(engine, draw.contexts[node.name])

    def exact(self, engine, node, axes: int):
        """Elements with at most C children in every child factor: N_i <= C, scale 1, the batch
        target (Paquet eq. (6) with every child drawn)."""
        if axes == 0:
            return None
        out = np.ones(node.plate_shape[:axes], dtype=bool)
        for f in engine.touching[node.name]:
            sampler = None if f.child is node else self.samplers[(node.name, f.child.name)]
            if isinstance(sampler, _GatherSampler):
                out &= (sampler.counts <= self.children).reshape((-1,) + (1,) * (axes - 1))
            elif sampler is not None:
                out &= sampler.size <= self.children
        return out


#: the default size of a minibatch fit's evaluation subsample (elements of the data plate)
EVALUATION_SIZE = 256


class Minibatch(Subsample):
    """Paquet Alg. 2 / Hoffman et al.'s SVI: draw ``size`` elements of the data ``plate``.

    Plates reached from it through gathers (the tokens of the drawn documents) are restricted
    too. Local nodes (on those plates) get exact coordinate updates, iterated until the mean
    change of a datapoint's mean parameters is below ``local_tol`` (1e-3: a document's topic
    proportions move by less than 0.1 percentage point; at most ``local_iterations``); global nodes
    then step with scale N / |S|. ``holdout`` keeps
    a fraction of the plate out of training for held-out evaluation. The bound is estimated on a
    fixed subsample of ``evaluation_size`` elements of the plate (and of the held-out rows),
    drawn once from the fit's seed; by default EVALUATION_SIZE = 256 (or the whole plate if
    smaller), whatever ``evaluate_every`` is, so that evaluations at any spacing estimate the
    same quantity and their changes can be compared (the stopping rule pairs them).
    """

    def __init__(self, plate: str, size: int, *, local_iterations: int = 50, local_tol: float = 1e-3,
                 holdout: float = 0.0, evaluation_size: int | None = None):
        self.plate_name = domains.name("Minibatch(plate=)", plate)
        self.size = domains.integer("Minibatch(size=)", size, 1)
        self.local_iterations = domains.integer("Minibatch(local_iterations=)", local_iterations, 1)
        self.local_tol = domains.number("Minibatch(local_tol=)", local_tol, 0.0)
        self.holdout = domains.number("Minibatch(holdout=)", holdout, 0.0, 1.0, below=True)
        self.evaluation_size = None if evaluation_size is None else domains.integer(
            "Minibatch(evaluation_size=)", evaluation_size, 2)

    def prepare(self, engine, rng, saved=None, evaluate_every: int = 10) -> "MinibatchPlan":
        size = self.evaluation_size or EVALUATION_SIZE
        return MinibatchPlan(self, engine, rng, saved, size)

    def check(self, model, who: str = "Minibatch") -> None:
        """That ``model`` has the data plate this draws from, with at least ``size`` elements
        (``who``: how the caller names this option in a message)."""
        check_data_plate(model, self.plate_name, who)
        plate = model.plates[self.plate_name]
        if self.size > plate.size:
            raise OptionError(f"{who}: size {self.size} exceeds plate '{plate.name}' ({plate.size} elements)")

    def __repr__(self) -> str:
        return f"Minibatch({self.plate_name!r}, {self.size})"


def linked_plates(model, plate_name: str) -> dict:
    """The plates linked to a data plate through gathers (the tokens of a document: a node on
    them reads ``theta[doc]``), each with its gather index into the plate's elements."""
    plate = model.plates[plate_name]
    return {expr.plate.name: expr.index for node in model.nodes.values() for expr in node.parents.values()
            if isinstance(expr, Gather) and expr.node.plates and expr.node.plates[0] == plate}


def data_plates(model) -> list[str]:
    """Plates a minibatch can be drawn from and policies weight: those holding observed data,
    on the plate itself or on a plate linked to it (``linked_plates``)."""
    model.compile()  # (a partially observed node holds data once compiled: ``missing.resolve``)
    held = {p.name for n in model.nodes.values() if n.has_data for p in n.plates}
    return [name for name in model.plates if name in held or held & set(linked_plates(model, name))]


def check_data_plate(model, plate_name: str, who: str) -> None:
    """A GraphError naming ``who`` unless ``plate_name`` is one of the model's data plates."""
    usable = data_plates(model)
    if plate_name not in model.plates:
        raise GraphError(f"{who}: model '{model.name}' has no plate named '{plate_name}'; its plates: "
                         f"{', '.join(model.plates) or 'none'} (data plates: {', '.join(usable) or 'none'})")
    if plate_name not in usable:
        raise GraphError(f"{who}: plate '{plate_name}' holds no observed node; minibatches are drawn from a "
                         f"data plate ({', '.join(usable) or 'none in this model'})")


class DataPlatePlan(Plan):
    """A plan that knows a data plate: the plate, the plates linked to it through gathers (the
    tokens of a document), its local nodes (hidden nodes on those plates), and Contexts of its
    rows. Minibatches draw its rows; batch VMP weights its factors by the policies."""

    local_iterations, local_tol = 50, 1e-4
    #: N / |S|: the rows' share of the data plate (1 when every row is read)
    scale = 1.0

    def _bind_plate(self, engine, plate_name: str, who: str) -> None:
        model = engine.model
        check_data_plate(model, plate_name, who)
        self.plate_name, self.plate = plate_name, model.plates[plate_name]
        self.linked = {name: _groups(index, self.plate.size) for name, index in linked_plates(model, plate_name).items()}
        self.names = {plate_name} | set(self.linked)
        self.local = [n for n in engine.hidden if any(p.name in self.names for p in n.plates)]

    first = 0  # the first data-plate element whose links this plan holds (a holder's part)

    def context(self, rows: np.ndarray) -> Context:
        """The subsets for the data-plate elements ``rows`` (sorted) and the plates linked to them."""
        subset = {self.plate_name: rows}
        owner = {self.plate_name: np.arange(rows.size)}
        for name, (order, starts, counts) in self.linked.items():
            at = rows - self.first
            elements = _ranges(order, starts[at], counts[at])
            order = np.argsort(elements, kind="stable")
            subset[name] = elements[order]
            owner[name] = np.repeat(np.arange(rows.size), counts[at])[order]
        return Context(subset=subset, owner=owner)

    def on_batch(self, f) -> bool:
        return any(p.name in self.names for p in f.child.plates)


class MinibatchPlan(DataPlatePlan):
    policies_allowed = True
    local_step = True

    def __init__(self, spec: Minibatch, engine, rng, saved=None, evaluation_size: int = 2000):
        self.size = spec.size
        self.local_iterations, self.local_tol = spec.local_iterations, spec.local_tol
        spec.check(engine.model)
        self._bind_plate(engine, spec.plate_name, "Minibatch")
        self.stepped = [n for n in engine.hidden if n not in self.local]
        for node in engine.model.nodes.values():
            for expr in glue(node):
                if isinstance(expr, Gather) and expr.node in self.local and expr.node.plates \
                        and expr.plate.name == expr.node.plates[0].name:
                    raise GraphError(f"Minibatch: '{node.name}' reads the local '{expr.node.name}' at other rows "
                                     f"of plate '{expr.plate.name}' (the gather {expr.node.name}[...]): a "
                                     f"minibatch's locals are its own rows; not supported")
        for n in self.local:
            coupled = engine.coupled_plate(n)
            if coupled is not None and coupled.name in self.names:
                raise GraphError(f"Minibatch: local node '{n.name}' has elements coupled along the data plate "
                                 f"'{coupled.name}'; not supported")
            for whole in n.joint_plates:
                if whole.name in self.names:
                    raise GraphError(f"Minibatch: '{n.name}' is one {n.family.name} along plate '{whole.name}' "
                                     f"(a Markov chain's steps): draw whole chains (a minibatch of an outer "
                                     f"plate), not steps of them")
        n = self.plate.size
        if saved is not None:
            self.heldout, self.train = np.asarray(saved["heldout"]), saved["train"]
            self.evaluation, self.heldout_evaluation = np.asarray(saved["evaluation"]), np.asarray(saved["heldout_evaluation"])
        else:
            n_out = int(round(spec.holdout * n))
            if n_out:
                perm = rng.permutation(n)
                self.heldout, self.train = np.sort(perm[:n_out]), np.sort(perm[n_out:])
            else:  # every row trains: no O(N) index array
                self.heldout, self.train = np.zeros(0, dtype=np.int64), None
            self.evaluation = np.sort(rng.choice(n, size=min(evaluation_size, n), replace=False))
            self.heldout_evaluation = self.heldout if self.heldout.size <= evaluation_size else np.sort(
                rng.choice(self.heldout, size=evaluation_size, replace=False))
        self.n_train = n - self.heldout.size
        if self.size > self.n_train:
            raise OptionError(f"Minibatch: size {self.size} exceeds the {self.n_train} training elements "
                              f"(plate '{self.plate_name}' of {n} less the holdout of {self.heldout.size})")

    def saved(self) -> dict:
        return {"heldout": self.heldout, "train": self.train, "evaluation": self.evaluation,
                "heldout_evaluation": self.heldout_evaluation}

    def part(self, lo: int, hi: int) -> dict:
        """What a holder of the data-plate elements lo..hi needs to run the local step of its
        drawn rows (:meth:`on_part`): the plan's options and names, and of each linked plate the
        elements of those rows only (plain data)."""
        linked = {}
        for name, (order, starts, counts) in self.linked.items():
            first = int(starts[lo])
            linked[name] = (order[first:first + int(counts[lo:hi].sum())], starts[lo:hi] - first, counts[lo:hi])
        return {"plate": self.plate_name, "size": self.size, "local_iterations": self.local_iterations,
                "local_tol": self.local_tol, "n_train": self.n_train, "first": lo, "linked": linked,
                "local": [n.name for n in self.local], "stepped": [n.name for n in self.stepped]}

    @classmethod
    def on_part(cls, model, part: dict) -> "MinibatchPlan":
        """The plan on a holder of one range of the data plate (from :meth:`part`): its local
        step and contexts are this plan's on the rows it holds; it draws nothing."""
        plan = cls.__new__(cls)
        plan.plate_name, plan.size, plan.first = part["plate"], part["size"], part["first"]
        plan.local_iterations, plan.local_tol, plan.n_train = part["local_iterations"], part["local_tol"], part["n_train"]
        plan.plate, plan.linked = model.plates[plan.plate_name], part["linked"]
        plan.names = {plan.plate_name} | set(plan.linked)
        plan.local = [model.nodes[n] for n in part["local"]]
        plan.stepped = [model.nodes[n] for n in part["stepped"]]
        return plan

    def spans(self, lo: int, hi: int) -> dict:
        """Per plate, the range of elements that the data-plate elements lo..hi hold: lo..hi of
        the plate itself, and of a linked plate the range its elements fill (None where they
        are not contiguous, as for tokens not grouped by document)."""
        out = {self.plate_name: (lo, hi)}
        for name, (order, starts, counts) in self.part(lo, hi)["linked"].items():
            out[name] = None
            if order.size == 0:
                continue
            a, b = int(order.min()), int(order.max()) + 1
            if b - a == order.size:
                out[name] = (a, b)
        return out

    def draw(self, engine, rng):
        rows = np.sort(rng.choice(self.plate.size if self.train is None else self.train, size=self.size,
                                  replace=False))
        return Draw(rows=rows, ctx=self.context(rows))

    def contexts(self, engine, draw, node, weight=None):
        """The minibatch's factors of ``node``'s children, scaled by N / |S| times the policies'
        global weight; the node's own factor in full (Paquet Alg. 2)."""
        return Context(factors={f.child.name: scaled_context(draw.ctx, f.child, self.scale, weight)
                                if f.child is not node and self.on_batch(f) else Context()
                                for f in engine.touching[node.name]})

    def accesses(self, engine, draw, node):
        return accesses(engine, Context(factors={f.child.name: draw.ctx for f in engine.touching[node.name]
                                                 if f.child is not node and self.on_batch(f)}))

    @property
    def scale(self) -> float:
        return self.n_train / self.size


def scaled_context(ctx: Context, child, base, weight) -> Context:
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
                   owner=ctx.owner, state=ctx.state)


def own_and_children(engine, plan, ctx, node, weight) -> Context:
    """The Context of ``node``'s update: the minibatch's factors weighted by ``weight`` (a
    policy's local weight), the others whole."""
    return Context(factors={f.child.name: scaled_context(ctx, f.child, 1.0, weight) if plan.on_batch(f) else Context()
                            for f in engine.touching[node.name]}, state=ctx.state)


class BatchPlan(DataPlatePlan):
    """Batch VMP: every node reads all of its children, parents first, rho = 1. With a data
    ``plate`` the policies' weights multiply every factor on it (its rows are every row)."""

    def __init__(self, engine, plate: str | None = None):
        self.stepped = list(engine.hidden)
        self.per_sweep = sweep_accesses(engine)
        self.rows = None
        if plate is not None:
            self._bind_plate(engine, plate, "fit(policies=...)")
            self.policies_allowed = True
            self.rows = np.arange(self.plate.size)
            self.owner = self.context(self.rows).owner

    def draw(self, engine, rng):
        return Draw(contexts={n.name: Context() for n in self.stepped}, rows=self.rows)

    def spread(self, weight, child) -> np.ndarray:
        """A policy weight (a number, or one per row) over the elements of ``child``'s plates."""
        scale = scaled_context(Context(owner=self.owner), child, 1.0, weight).scale
        return np.broadcast_to(1.0 if scale is None else scale, child.plate_shape)

    def contexts(self, engine, draw, node, weight=None):
        """Every factor on the data plate touching ``node`` (its own too: a local's prior is
        tempered) weighted by ``weight``; without it every factor in full."""
        if weight is None:
            return draw.contexts[node.name]
        return Context(factors={f.child.name: Context(scale=self.spread(weight, f.child)) if self.on_batch(f)
                                else Context() for f in engine.touching[node.name]})

    def weights(self, engine, weight) -> dict | None:
        """``weight`` on the data plate's factors, as :meth:`Engine.elbo`'s ``weights``."""
        if weight is None:
            return None
        return {f.child.name: self.spread(weight, f.child) for f in engine.factors.values() if self.on_batch(f)}

    def accesses(self, engine, draw, node):
        return 0
