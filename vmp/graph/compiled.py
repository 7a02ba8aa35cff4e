"""A factor bound to the graph: its expanded terms (``binding.py``), the weights over its
child's elements, and the evaluator of its messages and bound terms (``reference.py``, with the
strategies of ``strategies/`` around it unless the model asks for the reference alone)."""
from __future__ import annotations

import numpy as np

from .binding import Binder, Expanded
from .leaves import Context, restricted
from .calls import Call
from .reference import Reference
from .strategies import Evaluator, checked


class CompiledFactor:
    """The factor of ``child`` with terms bound to leaves; computes messages and its ELBO term.

    ``strategies``: the names of the strategies around the reference (None: the model's
    choice, ``Model.compile(strategies=...)``, by default all; () the reference alone)."""

    def __init__(self, child, strategies=None):
        self.child = child
        bound = Binder(child)
        self.letters, self.child_letters, self.plate_of = bound.letters, bound.child_letters, bound.plate_of
        self.sizes, self._leaves, self._gates = bound.sizes, bound._leaves, bound._gates
        self.terms: list[Expanded] = bound.terms
        self.coupled: dict = bound.coupled
        self.targets = bound.targets
        self.child_shape = child.plate_shape
        self.live: np.ndarray | None = None  # child elements with a live descendant (missing.resolve)
        self._last_live: tuple = (None, None)  # (weight, weight * live) of the last weight
        if strategies is None:
            strategies = child.model.strategies
        names = checked(strategies)
        self.evaluator = Evaluator(self, names) if names else Reference(self)
        self.strategies: dict = self.evaluator.strategies if names else {}

    # ----- the weights over the child's elements ---------------------------------------
    def _weight(self, weight, ctx):
        if not restricted(ctx):
            return weight
        if weight is not None:
            weight = ctx.take(weight, self.child.plates)
        if ctx.scale is not None:
            scale = np.broadcast_to(ctx.scale, ctx.shape(self.child.plates))
            weight = scale if weight is None else weight * scale
        return weight

    def _live_weight(self, weight, ctx):
        """The weight times ``live``: barren child elements send nothing to the parents and add
        nothing to the bound (the same object for the same weight, so that the strategies'
        memos, which compare weights by identity, hold)."""
        if self.live is None:
            return weight
        if ctx is not None:
            live = ctx.take(self.live, self.child.plates)
            return live.astype(float) if weight is None else weight * live
        if self._last_live[0] is not weight or self._last_live[1] is None:
            self._last_live = (weight, self.live.astype(float) if weight is None else weight * self.live)
        return self._last_live[1]

    def element_weight(self, node, weight: np.ndarray | None, ctx: Context | None = None) -> np.ndarray | None:
        """The weight over the child's elements (restricted and scaled by ``ctx``) that multiplies
        the messages to ``node``: barren elements send nothing to the parents."""
        weight = self._weight(weight, ctx)
        return weight if node is self.child else self._live_weight(weight, ctx)

    def bound_weight(self, weight: np.ndarray | None, ctx: Context | None = None) -> np.ndarray | None:
        """The weight over the child's elements that multiplies the bound's terms."""
        return self._live_weight(self._weight(weight, ctx), ctx)

    def size(self, ch: str, ctx: Context | None) -> int:
        """The size of letter ``ch`` (a plate's restricted to the Context's subset)."""
        if ctx is not None and self.plate_of.get(ch) in ctx.subset:
            return len(ctx.subset[self.plate_of[ch]])
        return self.sizes[ch]

    # ----- evaluation -------------------------------------------------------------------
    def messages(self, node, weight: np.ndarray | None = None, plate=None, index: int | None = None,
                 ctx: Context | None = None):
        """Sum over terms of d(term)/d(moments of node), in the node's layout (None if unconnected).

        With ``plate`` and ``index``, only the slice of the node at that index of that plate
        (the coordinate update of elements coupled in a factorized dot). With ``ctx``, only the
        plate elements the context keeps (the message is over the node's kept elements)."""
        return self.evaluator.message(node, Call(self.element_weight(node, weight, ctx), ctx, plate, index))

    def elog(self, weight: np.ndarray | None = None, per_element: bool = False, cached: bool = True,
             ctx: Context | None = None, skip: frozenset = frozenset()):
        """Weighted E[log p(child | parents)], summed (or per child plate element), without the
        terms ``skip`` (those :meth:`standing` found: the bound adds them through the node's
        optimum); ``cached`` False: no strategy serves a term from its memos."""
        call = Call(self.bound_weight(weight, ctx), ctx, cached=cached)
        return self.evaluator.bound(call, per_element, [ti for ti in range(len(self.terms)) if ti not in skip])

    def held(self, node) -> tuple | None:
        """The messages to ``node`` this factor keeps (``KeptDerivatives.held``), for
        :meth:`standing`; None where it keeps none that the bound could read."""
        kept = self.strategies.get("kept_derivatives")
        return None if kept is None else kept.held(node)

    def standing(self, node, weight, ctx: Context | None, held: tuple) -> frozenset | None:
        """The terms that read ``node`` if the messages ``held`` still stand and cover them all
        (their sum is then <message, E[u(node)]>); None otherwise."""
        kept, centered = self.strategies.get("kept_derivatives"), self.strategies.get("centered")
        terms = None if kept is None else kept.standing(node, self.bound_weight(weight, ctx), ctx, held)
        return None if terms is None or (centered is not None and centered.splits(terms)) else terms

    def nodes(self) -> list:
        return list({id(l.node): l.node for l in self.targets}.values())

    def leaves(self) -> list:
        """Every leaf the factor's terms read (nodes, gathers, constants)."""
        return list({id(o.leaf): o.leaf for t in self.terms for o in t.operands if o.leaf is not None}.values())

