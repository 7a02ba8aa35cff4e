"""The update equation, its ELBO, and the node schedule, over a compiled model.

    lambda_i^temp = ( sum over factors f touching i of  w_f * eta_fi ) / m_i       (Paquet eq. (5))

where f runs over node i's own factor (the prior part eta_i) and its children's factors, w_f is
the factor's weight over its plates (data multiplicity, mask; later subsampling and policies),
and m_i is node i's own multiplicity (an LDA token seen c times is c identical copies).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConvergenceError


class Engine:
    def __init__(self, model):
        self.model = model
        self.factors, order = model.compile()
        self.nodes = model.nodes
        self.hidden = [self.nodes[n] for n in order if not self.nodes[n].observed]
        self.touching: dict = {n.name: [] for n in self.hidden}
        self.coupled: dict = {n.name: set() for n in self.hidden}
        for f in self.factors.values():
            for node in f.nodes():
                self.touching[node.name].append(f)
            for name, plates in f.coupled.items():
                self.coupled[name] |= plates

    # ----- the update -------------------------------------------------------------------
    def factor_weight(self, f, weights: dict | None = None) -> np.ndarray | None:
        w = f.child.factor_weights()
        extra = None if weights is None else weights.get(f.child.name)
        if extra is not None:
            w = extra if w is None else w * extra
        return w

    def target(self, node, weights: dict | None = None, plate=None, index: int | None = None,
               ctx=None) -> tuple[np.ndarray, ...]:
        """lambda^temp of ``node`` given every other q (the coordinate-ascent optimum);
        with ``plate``/``index`` only that slice of the node. ``ctx`` (a Context, or a dict from
        factor child names to Contexts) restricts and scales each factor's messages."""
        total = None
        for f in self.touching[node.name]:
            c = ctx.get(f.child.name) if isinstance(ctx, dict) else ctx
            msg = f.messages(node, self.factor_weight(f, weights), plate, index, c)
            if msg is not None:
                total = msg if total is None else tuple(a + b for a, b in zip(total, msg))
        if node.weights is not None:
            m = node.weights
            own = ctx.get(node.name) if isinstance(ctx, dict) else ctx
            if own is not None:
                m = own.take(m, node.plates)
            if plate is not None:
                m = np.take(m, index, axis=node.plates.index(plate))
            m = np.where(m > 0, m, 1.0)
            total = tuple(t / m.reshape(m.shape + (1,) * (t.ndim - m.ndim)) for t in total)
        return total

    def coupled_plate(self, node):
        coupled = sorted(self.coupled[node.name], key=node.plates.index)
        if len(coupled) > 1:
            raise ConvergenceError(f"node '{node.name}': elements coupled along several plates are not supported")
        return coupled[0] if coupled else None

    def update(self, node, weights: dict | None = None, ctx=None, rho: float = 1.0, check=None) -> bool:
        """Coordinate update of q(node): lambda <- (1 - rho) lambda + rho lambda^temp (Paquet
        Alg. 1, option (a)); elements coupled through a factor go one slice at a time.
        ``check(node, old, new)`` may veto a step (returns False); returns whether all applied."""
        plate = self.coupled_plate(node)
        if plate is None:
            new = self.blend(node.natural, self.target(node, weights, ctx=ctx), rho)
            if check is not None and not check(node, node.natural, new):
                return False
            self._set(node, new)
            return True
        axis = node.plates.index(plate)
        for i in range(plate.size):
            part = self.target(node, weights, plate, i, ctx)
            new = []
            for old, t in zip(node.natural, part):
                arr = old.copy()
                sl = (slice(None),) * axis + (i,)
                arr[sl] = t if rho == 1.0 else (1.0 - rho) * arr[sl] + rho * t
                new.append(arr)
            if check is not None and not check(node, node.natural, tuple(new)):
                return False
            self._set(node, tuple(new))
        return True

    @staticmethod
    def blend(old, new, rho: float):
        if rho == 1.0:
            return new
        return tuple((1.0 - rho) * a + rho * b for a, b in zip(old, new))

    def _set(self, node, natural) -> None:
        ok = node.family.valid(natural)
        if not np.all(ok):
            bad = int(np.size(ok) - np.count_nonzero(ok))
            raise ConvergenceError(
                f"node '{node.name}': update left the valid {node.family.name} domain at {bad} element(s)"
            )
        node.set_natural(natural)

    # ----- the bound --------------------------------------------------------------------
    def entropy(self, node) -> float:
        h = node.family.entropy(node.natural, node.moments)
        if node.weights is not None:
            h = h * node.weights
        return float(np.sum(h))

    def elbo(self, weights: dict | None = None, cached: bool = True) -> float:
        """sum_f w_f E[log p(child_f | parents_f)] + sum_i m_i H[q_i] (every constant included)."""
        total = 0.0
        for f in self.factors.values():
            total += float(f.elog(self.factor_weight(f, weights), cached=cached))
        for node in self.hidden:
            total += self.entropy(node)
        return total

    def schedule(self) -> list:
        """Parents before children (topological order): the globals first, from the
        initial local responsibilities, then the locals."""
        return list(self.hidden)

    def snapshot(self) -> dict:
        return {n.name: (n.natural, n.moments) for n in self.hidden}

    def restore(self, snap: dict) -> None:
        for n in self.hidden:
            n.set_natural(*snap[n.name])
