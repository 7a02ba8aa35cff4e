"""Timing experiment: what a replayed batch-sweep plan would save, emulated before building one.

Not a feature. The script swaps five engine functions for versions that skip what a plan
recorded after one sweep would skip on the next (same structure, data, weights, schedule), fits
matrix factorization (K = 5, structured q) with and without them, alternated, and checks that
the ELBO history and the final natural parameters are the same bits (an emulation that reads a
stale memo would change them). Skipped:

- ``engine.at``: a fresh ``Context`` (a dataclass copy) per message; one per State instead;
- ``Engine.target``: the executor's children sum and the node's adapter; the children's
  messages are summed directly, in the same order;
- ``CompiledFactor.messages``: the constant-message key (the data operands of every term, by
  identity) when a kept message holds for the same weight;
- ``CompiledFactor.elog``: the identity checks of every kept message against the moments its
  terms read; which kept messages pass and which terms remain are recorded once per (skip,
  kept keys) and replayed;
- ``CompiledFactor.standing``: the bound-at-optimum's checks, recorded once per node.

It does not emulate the per-term decisions inside a message (fused sparse product or
contraction, letters, plan keys): those still run.

    python examples/plan_ablation.py [--model small|movielens] [--iterations 100] [--rounds 4]

Run with OMP_NUM_THREADS=1. Prints CPU ms per sweep (fastest of 3 fits per round) for each.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "examples"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import vmp.graph.compiled as C  # noqa: E402
import vmp.inference.engine as E  # noqa: E402
from _bench import limit_threads  # noqa: E402
from vmp.factors.terms import inner_product  # noqa: E402
from vmp.graph.leaves import Context, memoizable, moments_of  # noqa: E402
from vmp.inference.executor import add  # noqa: E402
from vmp.inference.observed import summed  # noqa: E402

NORMAL = dict(at=E.at, target=E.Engine.target, messages=C.CompiledFactor.messages,
              elog=C.CompiledFactor.elog, standing=C.CompiledFactor.standing)
_last: list = [None, None]


def at(ctx, state):
    if ctx is None:
        if _last[0] is not state:
            _last[0], _last[1] = state, Context(state=state)
        return _last[1]
    return NORMAL["at"](ctx, state)


def target(self, state, node, ctx=None):
    if ctx is not None:
        return NORMAL["target"](self, state, node, ctx)
    self._summed = None
    c = at(None, state)
    own = self.factors[node.name]
    prior = own.messages(node, self.factor_weight(own), None, None, c)
    total = None
    for f in self.touching[node.name]:
        if f.child is not node:
            total = add(total, f.messages(node, self.factor_weight(f), None, None, c))
    total = summed(prior, total)
    self._summed = self._summed_messages(node, total, c)
    return total


def messages(self, node, weight=None, plate=None, index=None, ctx=None, _weighted=False, only=None):
    if plate is None and only is None and not _weighted and memoizable(ctx):
        held = self._constant.get(node.name)
        if held is not None and held[0] is self.element_weight(node, weight, ctx):
            return held[2]
    return NORMAL["messages"](self, node, weight, plate, index, ctx, _weighted, only)


def elog(self, weight=None, per_element=False, cached=True, ctx=None, skip=frozenset()):
    if per_element or not cached or not memoizable(ctx):
        return NORMAL["elog"](self, weight, per_element, cached, ctx, skip)
    weight = self._kept(self._weight(weight, ctx), ctx)
    plans = self.__dict__.setdefault("_ablation", {})
    plan = plans.get((skip, tuple(self._cache)))
    if plan is None:  # recorded with the normal checks
        done, keys = set(skip), []
        for key in reversed(list(self._cache)):
            reads, w, _, _, _ = self._cache[key]
            terms = {ti for ti, _, _ in reads}
            if w is not weight or terms & done or not all(
                    self._same(stamp, self._stamp(self._rest(ti, i), ctx)) for ti, i, stamp in reads):
                continue
            keys.append(key)
            done |= terms
        rest = [(ti, t, self._data_key(t.operands, ctx) is not None)
                for ti, t in enumerate(self.terms) if ti not in done]
        plan = plans[skip, tuple(self._cache)] = (keys, rest)
    keys, rest = plan
    total = 0.0
    for key in keys:
        reads, _, grads, node_grads, _ = self._cache[key]
        o = self.terms[reads[0][0]].operands[reads[0][1]]
        if grads is not None:
            total = total + inner_product(grads, o.value(ctx, self.plate_of))
        if node_grads is not None:
            total = total + inner_product(node_grads, moments_of(o.leaf.node, ctx)[o.comp])
    for ti, t, constant in rest:
        if constant:
            held = self._constant_terms.get(ti)
            if held is None or held[0] is not weight:
                return NORMAL["elog"](self, weight, per_element, cached, ctx, skip)
            total = total + t.coef * held[2]
            continue
        total = total + t.coef * self._evaluate(t.operands, weight, "", (), ctx=ctx)[0]
    return total


def standing(self, node, weight, ctx, held):
    plans = self.__dict__.setdefault("_ablation_standing", {})
    if plans.get(node.name) is None:
        plans[node.name] = NORMAL["standing"](self, node, weight, ctx, held)
    return plans[node.name]


def use(emulated: bool) -> None:
    source = globals() if emulated else NORMAL
    E.at = source["at"]
    E.Engine.target = source["target"]
    C.CompiledFactor.messages = source["messages"]
    C.CompiledFactor.elog = source["elog"]
    C.CompiledFactor.standing = source["standing"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=("small", "movielens"), default="small")
    p.add_argument("--path", default=None, help="MovieLens ratings.csv")
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)
    limits = limit_threads(1)
    from vmp.models import matrix_factorization

    if args.model == "movielens":
        from bench_bmf_movielens import DEFAULT, load

        users, items, ratings = load(pathlib.Path(args.path or DEFAULT))
    else:
        rng = np.random.default_rng(1)
        users, items, ratings = rng.integers(0, 300, 3000), rng.integers(0, 300, 3000), rng.normal(3.0, 1.0, 3000)
    n = args.iterations

    def run(emulated: bool):
        use(emulated)
        try:
            model = matrix_factorization(users, items, ratings, n_factors=5)
            model.fit(iterations=3, tol=0, seed=0, progress=False)
            best = float("inf")
            for _ in range(3):
                t = time.process_time()
                result = model.fit(iterations=n, tol=0, seed=0, progress=False)
                best = min(best, (time.process_time() - t) / n)
        finally:
            use(False)
        bits = (np.asarray(result.history["evaluations"]["elbo"], float).tobytes(),
                b"".join(a.tobytes() for name in ("tau", "u", "v") for a in model.state.natural[name]))
        return best * 1e3, bits

    times: dict = {False: [], True: []}
    bits: dict = {}
    for _ in range(args.rounds):
        for emulated in (False, True):
            ms, b = run(emulated)
            times[emulated].append(ms)
            bits.setdefault(emulated, b)
    print(f"{args.model}, K=5, {n} sweeps (BLAS: {limits}), CPU ms per sweep, alternated:")
    print("  normal   " + " ".join(f"{t:.3f}" for t in times[False]))
    print("  emulated " + " ".join(f"{t:.3f}" for t in times[True]))
    print(f"  median saving {np.median(times[False]) - np.median(times[True]):.3f} ms per sweep; "
          f"same bits (ELBO history, final naturals): {bits[False] == bits[True]}")


if __name__ == "__main__":
    main()
