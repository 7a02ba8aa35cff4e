"""Strategies: the optimizations of the reference evaluator, each a named object beside it.

The reference (``vmp/graph/reference.py``) states what a message and a bound term are. A
strategy computes some of them another way, or keeps them: it implements hooks, each named
after a method of ``Reference`` with that method's arguments plus ``inner`` (the rest of the
chain, ending with the reference's method), and returns what the reference would (to rounding),
from its cache, by another route, or by calling ``inner``. The ``Evaluator`` is the reference
with the chosen strategies around its methods, in the order of ``ORDER`` whatever the order
asked; ``DEFAULT`` is every strategy, and no strategy is the reference alone
(``model.compile(strategies=())``).

Each strategy owns its cache, per bound factor, with its key and bound in its docstring; caches
compare the objects they were computed from by identity (new moments, data or weights are new
objects), and serve only where the Context is ``memoizable``.

To add a strategy: a module here with one ``Strategy`` subclass (``name``, ``hooks``, a
docstring with the equation it uses and its cache's key and bound), its name in ``ORDER``
where its hooks must run, and a test that compares it, alone and with the others, with the
reference (tests/test_reference.py).
"""
from __future__ import annotations

from functools import partial

from ...errors import OptionError
from ..reference import Reference
from .base import Strategy
from .centered import Centered
from .coefficients import Coefficients
from .constant import ConstantMessages, ConstantTerms
from .folding import Folding
from .fused import FusedGathers
from .kept import KeptDerivatives
from .layouts import Layouts
from .plans import Plans
from .plate_sums import PlateSums

#: every strategy, outermost first: a hook runs before the hooks of the same name after it
ORDER: tuple[type[Strategy], ...] = (Centered, ConstantMessages, ConstantTerms, KeptDerivatives, FusedGathers, Layouts,
                                     Coefficients, PlateSums, Folding, Plans)
STRATEGIES = {s.name: s for s in ORDER}
#: the default evaluator's strategies (all)
DEFAULT: tuple[str, ...] = tuple(STRATEGIES)
#: the methods of ``Reference`` a strategy may wrap
HOOKS = ("message", "sums", "component", "contraction", "einsum", "bound", "term")


def checked(names) -> tuple[str, ...]:
    """``names`` as a tuple of known strategy names (an OptionError names an unknown one)."""
    names = tuple(names)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise OptionError(f"strategies: unknown {unknown}; known: {sorted(STRATEGIES)} (() for the reference alone)")
    return names


class Evaluator(Reference):
    """The reference with the strategies ``names`` around its methods (module docstring)."""

    def __init__(self, factor, names):
        super().__init__(factor)
        chosen = set(checked(names))
        self.strategies = {s.name: s(self) for s in ORDER if s.name in chosen}
        for hook in HOOKS:
            fn = getattr(self, hook)
            for s in reversed(list(self.strategies.values())):
                if hook in s.hooks:
                    fn = partial(getattr(s, hook), inner=fn)
            setattr(self, hook, fn)
