"""Benchmark: forward-backward of the hidden Markov chain, and a whole HMM fit.

Synthetic data: S sequences of T steps from a K-state chain with Gaussian emissions
(tests/test_markov_chain.py's truth). Times, in CPU seconds (the fastest of --repeat, after a
warm-up; the machine may be shared):

* ``forward-backward``  vmp.families.CategoricalMarkovChain.moments on the expected
                        log-potentials of all S chains at once (unary S x T x K, pairwise
                        S x T x K x K), the cost of one update of q(z);
* ``fit``               vmp.models.hmm(x, K).fit(iterations=I, tol=0) per iteration.

    python examples/bench_hmm.py                        # S=200, T=100, K=3
    python examples/bench_hmm.py --s 1000 --t 500 --k 10
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench import best_cpu, limit_threads  # noqa: E402

import vmp  # noqa: E402
import vmp.models  # noqa: E402
from vmp.families import CategoricalMarkovChain  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--s", type=int, default=200)
    p.add_argument("--t", type=int, default=100)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    print("BLAS threads:", limit_threads(1))
    rng = np.random.default_rng(0)
    s, t, k = args.s, args.t, args.k
    a = rng.dirichlet(np.full(k, 0.5), size=k) * 0.3 + np.eye(k) * 0.7
    z = np.zeros((s, t), int)
    z[:, 0] = rng.integers(k, size=s)
    for i in range(1, t):
        z[:, i] = (rng.random((s, 1)) > np.cumsum(a[z[:, i - 1]], 1)).sum(1)
    x = 3.0 * z + rng.normal(size=(s, t))

    unary = -0.5 * (x[..., None] - 3.0 * np.arange(k)) ** 2
    pairwise = np.broadcast_to(np.log(a), (s, t, k, k)).copy()
    fb = best_cpu(lambda: CategoricalMarkovChain.moments((unary, pairwise)), args.repeat)
    print(f"forward-backward  S={s} T={t} K={k}: {fb * 1e3:.1f} ms CPU "
          f"({fb / (s * t) * 1e9:.0f} ns per step)")

    model = vmp.models.hmm(list(x), k)
    per = best_cpu(lambda: model.fit(iterations=args.iterations, tol=0, seed=0), 1) / args.iterations
    print(f"fit               S={s} T={t} K={k}: {per * 1e3:.1f} ms CPU per iteration "
          f"({args.iterations} iterations, Gaussian emissions)")


if __name__ == "__main__":
    main()
