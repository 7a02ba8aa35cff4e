"""A/B: a Gaussian's moments from its precision stack, this tree's vmp/families/_linalg.py
against another version of that file (an older commit's, saved with ``git show REV:path``).

Times ``Cholesky(eta_2, scale=-2).inv_outer(eta_1)`` (the factorization, the Takahashi inverse
and E[x], E[xx^T]: what ``Gaussian.moments`` runs on a stack the column loop serves) for B
matrices of order D, the two versions alternated --rounds times, with an 8 MB pass between
calls so that each starts from a cold cache, as inside a fit (whose state keeps the last
moments alive: so does this loop, which keeps the allocator from returning and refaulting the
pages of every result). Prints the medians (CPU time)
and whether both give the same bits. This tree's version is given the stack marked exactly
symmetric (``exact=True``) where it takes that argument.

    git show d23016d:vmp/families/_linalg.py > /tmp/old_linalg.py
    python benchmarks/ab_linalg.py /tmp/old_linalg.py [--d 5] [--b 9724] [--rounds 300]
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import pathlib
import resource
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _moments(linalg, eta2: np.ndarray, eta1: np.ndarray):
    exact = {"exact": True} if "exact" in inspect.signature(linalg.Cholesky).parameters else {}
    return linalg.Cholesky(eta2, scale=-2.0, **exact).inv_outer(eta1)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("other", type=pathlib.Path, help="the other version of _linalg.py")
    p.add_argument("--d", type=int, default=5)
    p.add_argument("--b", type=int, default=9724)
    p.add_argument("--rounds", type=int, default=300)
    args = p.parse_args(argv)
    versions = {"other": _load(args.other, "other_linalg"),
                "this": _load(ROOT / "vmp" / "families" / "_linalg.py", "this_linalg")}
    rng = np.random.default_rng(0)
    q = rng.normal(size=(args.b, args.d, args.d))
    eta2 = -0.5 * (q @ np.swapaxes(q, -1, -2) + 0.1 * np.eye(args.d))
    eta2 = 0.5 * (eta2 + np.swapaxes(eta2, -1, -2))
    eta1 = rng.normal(size=(args.b, args.d))
    flush = np.ones(2**20)
    spent: dict = {k: [] for k in versions}
    faults = dict.fromkeys(versions, 0)
    kept: dict = {}  # each version's last moments stay alive, as a fit's state keeps them
    for _ in range(args.rounds):
        for name, linalg in versions.items():
            flush += 1.0
            f0, c0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
            kept[name] = _moments(linalg, eta2, eta1)
            spent[name].append(time.process_time() - c0)
            faults[name] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    other, this = (np.array(spent[k]) * 1e3 for k in ("other", "this"))
    same = all(np.array_equal(a, b) for a, b in zip(*(_moments(m, eta2, eta1) for m in versions.values())))
    print(f"B={args.b}, D={args.d}, {args.rounds} alternated rounds, CPU ms (median, least): other "
          f"{np.median(other):.3f}, {other.min():.3f}; this {np.median(this):.3f}, {this.min():.3f}; median paired "
          f"difference {np.median(other - this):.3f}; page faults per call: other {faults['other'] / args.rounds:.0f}, "
          f"this {faults['this'] / args.rounds:.0f}; same bits: {same}")


if __name__ == "__main__":
    main()
