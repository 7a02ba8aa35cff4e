"""Run benchmarks on two git revisions alternately, in one run, and print both figures and their ratio.

Each revision is checked out in a git worktree under a temporary directory and run with this
Python (its own vmp and models first on the path; the run stops before any benchmark if vmp or
vmp.models would be imported from elsewhere). For every round the benchmarks run on both revisions, the
order of the two swapped from one round to the next, so that both see the same load. Printed per
benchmark: each revision's figures (the script's own, ``_registry.py``), their medians and the
ratio OTHER / BASE (below 1: OTHER is faster), with the load average over the run.

    python benchmarks/compare_revisions.py BASE [OTHER] [--only bench_mixture bench_hmm] [--rounds 3] [--full]

OTHER defaults to HEAD; a revision is anything ``git worktree add`` takes (a commit, a branch).
Without ``--full`` each benchmark runs its quick arguments (a few seconds to a minute each);
with it, the table's. Needs MovieLens for bench_bmf_movielens ($VMP_MOVIELENS or ../shared).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _registry import ROOT, run, select  # noqa: E402

CHECK = "import vmp, vmp.models; print(vmp.__file__); print(vmp.models.__file__)"


def checkout(revision: str, where: pathlib.Path) -> pathlib.Path:
    """A detached worktree of revision; vmp.models resolves to its models/ folder (as installed)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(where), revision], check=True)
    if (where / "models").is_dir() and not (where / "vmp" / "models").exists():
        (where / "vmp" / "models").symlink_to(where / "models", target_is_directory=True)
    found = subprocess.run([sys.executable, "-c", CHECK], cwd=where, env=dict(os.environ, PYTHONPATH=str(where)),
                           capture_output=True, text=True, check=True).stdout.split()
    if not all(pathlib.Path(f).resolve().is_relative_to(where.resolve()) for f in found):
        raise SystemExit(f"{revision}: vmp imported from {found}, not from its worktree {where}")
    return where


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("other", nargs="?", default="HEAD")
    ap.add_argument("--only", nargs="+", help="benchmarks of _registry.py (default: all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="the table's arguments instead of the quick ones")
    args = ap.parse_args(argv)
    benches = select(args.only)
    labels = {"base": args.base, "other": args.other}
    with tempfile.TemporaryDirectory(prefix="vmp-compare-") as tmp:
        trees = {}
        try:
            for key, rev in labels.items():
                trees[key] = checkout(rev, pathlib.Path(tmp) / key)
            figures = {(b.name, key): [] for b in benches for key in labels}
            failed: dict[str, str] = {}
            loads = [os.getloadavg()[0]]
            for r in range(args.rounds):
                order = ("base", "other") if r % 2 == 0 else ("other", "base")
                for bench in benches:
                    for key in order:
                        if bench.name in failed:
                            continue
                        record = run(bench, trees[key], quick=not args.full)
                        if record.get("error"):
                            failed[bench.name] = labels[key]
                            print(f"{bench.name} on {labels[key]} failed (left out of the later rounds):\n"
                                  + "\n".join(record["error"]), file=sys.stderr, flush=True)
                            continue
                        figures[bench.name, key].append(record["figure"])
                        print(f"round {r + 1}: {bench.name} on {labels[key]}: {record['figure']} {bench.unit}",
                              file=sys.stderr, flush=True)
                loads.append(os.getloadavg()[0])
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(report(benches, figures, labels, loads, args, failed))
    return 1 if failed else 0


def report(benches, figures: dict, labels: dict, loads: list[float], args, failed: dict | None = None) -> str:
    """The comparison as a Markdown table; a benchmark that failed on a revision says so in its row."""
    lines = [f"{args.rounds} rounds, {'full' if args.full else 'quick'} arguments, {os.cpu_count()} cores, load average "
             f"{min(loads):.1f}-{max(loads):.1f}; BASE = {labels['base']}, OTHER = {labels['other']}", "",
             "| benchmark | unit | BASE | OTHER | BASE median | OTHER median | OTHER / BASE |", "|---|---|---|---|---|---|---|"]
    for b in benches:
        if b.name in (failed or {}):
            lines.append(f"| {b.name} | {b.unit} | failed on {failed[b.name]} | | | | |")
            continue
        base, other = figures[b.name, "base"], figures[b.name, "other"]
        mb, mo = statistics.median(base), statistics.median(other)
        lines.append(f"| {b.name} | {b.unit} | {' '.join(f'{v:g}' for v in base)} | {' '.join(f'{v:g}' for v in other)} "
                     f"| {mb:g} | {mo:g} | {mo / mb:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
