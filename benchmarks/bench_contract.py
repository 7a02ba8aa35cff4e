"""Benchmark: the mixture's recurring contractions through vmp's ``contract`` against numpy's
greedy einsum and, when installed, opt_einsum (``pip install opt_einsum``).

N = 100,000 observed x (D = 2 and 8), K = 10 components: x^T E[Lambda_k] x for every n, k
(``Bab,Aa,Ab->AB``), sum_n r_nk x x^T (``Aa,Ab,AB->Bab``), x^T E[Lambda_k mu_k]
(``Bab,Aa,Bb->AB``) and the full bound term (``Bab,Aa,Ab,AB->``). x is passed twice as one array,
as the compiled factor does, so ``contract`` may use its unique pairs. Prints CPU time (fastest
of --repeat) and the anchors' time over vmp's (> 1: vmp is faster); BLAS on --threads threads.

    python benchmarks/bench_contract.py [--n 100000] [--dims 2 8]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _bench import best_cpu, limit_threads, mixture_arguments  # noqa: E402

CONTRACTIONS = ("Aa,Ab,AB->Bab", "Bab,Aa,Ab->AB", "Bab,Aa,Bb->AB", "Bab,Aa,Ab,AB->")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mixture_arguments(p)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (threadpoolctl)")
    args = p.parse_args(argv)
    limit_threads(args.threads)
    try:
        import opt_einsum
    except ImportError:
        opt_einsum = None
    from vmp.factors import terms

    print(f"N={args.n}, K={args.k}; numpy {np.__version__}, opt_einsum "
          f"{opt_einsum.__version__ if opt_einsum else 'not installed'}; BLAS threads {args.threads}; "
          f"load average {os.getloadavg()[0]:.2f}; CPU ms, fastest of {args.repeat}")
    rng = np.random.default_rng(0)
    for d in args.dims:
        x = rng.normal(size=(args.n, d))
        arrays = {"Aa": x, "Ab": x, "AB": rng.random((args.n, args.k)), "Bab": rng.normal(size=(args.k, d, d)),
                  "Bb": rng.normal(size=(args.k, d))}
        for subs in CONTRACTIONS:
            ops = [arrays[s] for s in subs.split("->")[0].split(",")]
            expected = np.einsum(subs, *ops, optimize="greedy")
            np.testing.assert_allclose(terms.contract(subs, *ops), expected, rtol=1e-10, atol=1e-8)
            ours = best_cpu(lambda: terms.contract(subs, *ops), args.repeat)
            greedy = best_cpu(lambda: np.einsum(subs, *ops, optimize="greedy"), args.repeat)
            line = (f"D={d} {subs:<16} vmp {ours * 1e3:8.2f}  numpy greedy {greedy * 1e3:8.2f} "
                    f"({greedy / ours:5.1f}x)")
            if opt_einsum is not None:
                expr = opt_einsum.contract_expression(subs, *[o.shape for o in ops])
                oe = best_cpu(lambda: expr(*ops), args.repeat)
                line += f"  opt_einsum {oe * 1e3:8.2f} ({oe / ours:5.1f}x)"
            print(line)


if __name__ == "__main__":
    main()
