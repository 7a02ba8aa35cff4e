"""Benchmark: forward-backward of the hidden Markov chain, and a whole HMM fit.

Synthetic data: S sequences of T steps from a K-state chain with Gaussian emissions
(tests/test_markov_chain.py's truth). Times, in CPU seconds (the fastest of --repeat, after a
warm-up; the machine may be shared):

* ``forward-backward``  vmp.families.markov_chain.forward_backward on the expected
                        log-potentials of all S chains at once (unary S x T x K, pairwise
                        S x T x K x K), the cost of one update of q(z);
* ``hand-written``      the anchor, measured in the same run: the scaled forward-backward a
                        user would write for this one model in numpy (Bishop 2006 section
                        13.2.4; one transition matrix for every chain, no underflow fallback),
                        with the same outputs (marginals, pair marginals, log Z);
* ``fit``               vmp.models.hmm(x, K).fit(iterations=I, tol=0) per iteration.

    python benchmarks/bench_hmm.py                        # S=200, T=100, K=3
    python benchmarks/bench_hmm.py --s 1000 --t 500 --k 10
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
from vmp.families.markov_chain import forward_backward  # noqa: E402


def handwritten(unary: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Marginals (S, T, K), pair marginals (S, T-1, K, K) and log Z (S,) of S chains with emission
    log-likelihoods ``unary`` (S, T, K), a uniform initial state and transition matrix ``a``:
    alpha-hat normalized at each step by c_t, beta-hat divided by c_{t+1}, log Z = sum log c_t."""
    s, t, k = unary.shape
    m = unary.max(-1, keepdims=True)
    e = np.exp(unary - m)
    alpha, beta, c = np.empty((s, t, k)), np.ones((s, t, k)), np.empty((s, t))
    alpha[:, 0] = e[:, 0]
    c[:, 0] = alpha[:, 0].sum(1)
    alpha[:, 0] /= c[:, 0, None]
    for i in range(1, t):
        alpha[:, i] = (alpha[:, i - 1] @ a) * e[:, i]
        c[:, i] = alpha[:, i].sum(1)
        alpha[:, i] /= c[:, i, None]
    for i in range(t - 2, -1, -1):
        beta[:, i] = (beta[:, i + 1] * e[:, i + 1]) @ a.T / c[:, i + 1, None]
    pairs = alpha[:, :-1, :, None] * a * (e[:, 1:] * beta[:, 1:] / c[:, 1:, None])[:, :, None, :]
    return alpha * beta, pairs, np.log(c).sum(1) + m.sum((1, 2))


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
    marginals, pairs, log_z = forward_backward(unary, pairwise)
    by_hand = handwritten(unary, a)
    assert np.allclose(marginals, by_hand[0], atol=1e-10) and np.allclose(pairs[:, :-1], by_hand[1], atol=1e-10)
    assert np.allclose(log_z, by_hand[2], rtol=1e-12)
    fb = best_cpu(lambda: forward_backward(unary, pairwise), args.repeat)
    anchor = best_cpu(lambda: handwritten(unary, a), args.repeat)
    print(f"forward-backward  S={s} T={t} K={k}: {fb * 1e3:.1f} ms CPU "
          f"({fb / (s * t) * 1e9:.0f} ns per step), {fb / anchor:.2f} x hand-written")
    print(f"hand-written      S={s} T={t} K={k}: {anchor * 1e3:.1f} ms CPU")

    model = vmp.models.hmm(list(x), k)
    per = best_cpu(lambda: model.fit(iterations=args.iterations, tol=0, seed=0), 1) / args.iterations
    print(f"fit               S={s} T={t} K={k}: {per * 1e3:.1f} ms CPU per iteration "
          f"({args.iterations} iterations, Gaussian emissions)")


if __name__ == "__main__":
    main()
