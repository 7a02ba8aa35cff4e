"""docs/benchmarks.md: the table of the benchmarks in _registry.py, from each one's latest record.

``--run`` runs the named benchmarks (all when none is named) with their table arguments, each in
a fresh process, and writes each one's record (its command, figure, ratio to its anchor, the load
average before and after, the machine and the commit) to ``benchmarks/records/NAME.json``; then,
or without ``--run``, the page is written from the records. ``--check`` writes nothing and exits 1
when the page differs from what the records give.

    python benchmarks/table.py [--run [bench_mixture bench_hmm ...]] [--quick] [--check]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from _registry import BENCHMARKS, ROOT, run, select  # noqa: E402

RECORDS = ROOT / "benchmarks" / "records"
PAGE = ROOT / "docs" / "benchmarks.md"

HEAD = """# Benchmarks

Each benchmark prints its figure and the ratio to an anchor measured in the same run, on the same
data (a peer library or a hand-written computation). The table is written by
`python benchmarks/table.py` from each benchmark's latest record (`benchmarks/records/`);
`python benchmarks/table.py --run bench_hmm` runs one again and rewrites its row. A ratio below 1
means vmp takes less time than the anchor. The machine column gives the cores and the load average
(before and after the run): other processes shared the cores, so a figure is an upper bound of what
the code costs on a quiet machine; the ratio, from one run, is the steadier number.

To compare two revisions of the code (for example before and after a change of the engine),
`python benchmarks/compare_revisions.py BASE OTHER` runs the same benchmarks on both, alternately,
and prints both figures and their ratio.

| benchmark | what | command | figure | anchor | figure / anchor | machine |
|---|---|---|---|---|---|---|
"""

FOOT = """
Other scripts in `benchmarks/` measure one thing each and print their own tables: `bench_bayespy.py`
(the mixture against BayesPy's VB, same priors and start), `bench_chunked.py` (batch VMP streamed from
HDF5, zarr or a memmap), `bench_contract.py` (the mixture's contractions against `numpy.einsum`),
`bench_linalg.py` (the batched positive-definite algebra against `numpy.linalg`: where the vectorized
path's thresholds come from), `bench_overhead.py` (a sweep's Python overhead on a small problem),
`bench_svi_scaling.py` (a stochastic step's time at N = 10^4 to 10^6), and the paper reproductions
`paquet_fig2.py`, `paisley_gmm.py`, `tempering_table.py`, `tempering_fmm.py`, `tempering_lda.py`,
`adaptive_mixture.py` and `adaptive_models.py`, whose results are on the pages of the methods they
measure (stochastic VMP, policies).
"""


def machine() -> str:
    return f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"


def commit() -> str:
    git = ["git", "-C", str(ROOT)]
    rev = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    return rev + ("+" if dirty.strip() else "")


def row(record: dict | None, name: str, what: str) -> str:
    if record is None:
        return f"| `{name}` | {what} | not run yet | | | | |"
    figure = "failed" if record.get("error") else f"{record['figure']:g} {record['unit']}"
    ratio = "" if record.get("ratio") is None else f"{record['ratio']:g}"
    where = (f"{record['machine']}, load {record['load_before']:g}-{record['load_after']:g}, "
             f"{record['date']}, {record['commit']}")
    return f"| `{name}` | {what} | `{record['command']}` | {figure} | {record['anchor']} | {ratio} | {where} |"


def render() -> str:
    rows = []
    for bench in BENCHMARKS:
        path = RECORDS / f"{bench.name}.json"
        rows.append(row(json.loads(path.read_text()) if path.is_file() else None, bench.name, bench.what))
    return HEAD + "\n".join(rows) + "\n" + FOOT


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", nargs="*", help="run these benchmarks first (none named: all)")
    ap.add_argument("--quick", action="store_true", help="with --run: the quick arguments")
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/benchmarks.md is not what the records give")
    args = ap.parse_args(argv)
    if args.check:
        if PAGE.read_text() != render():
            print(f"{PAGE} differs from the records: run python benchmarks/table.py", file=sys.stderr)
            return 1
        return 0
    if args.run is not None:
        RECORDS.mkdir(exist_ok=True)
        for bench in select(args.run):
            record = run(bench, quick=args.quick)
            record.update(machine=machine(), date=time.strftime("%Y-%m-%d", time.gmtime()), commit=commit())
            (RECORDS / f"{bench.name}.json").write_text(json.dumps(record, indent=1) + "\n")
            print(row(record, bench.name, bench.what))
    PAGE.write_text(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
