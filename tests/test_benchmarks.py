"""The benchmark table and the comparison of two revisions (benchmarks/table.py,
benchmarks/compare_revisions.py, their registry benchmarks/_registry.py)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _registry  # noqa: E402
import table  # noqa: E402


def test_the_page_is_what_its_script_writes_from_the_records():
    assert (ROOT / "docs" / "benchmarks.md").read_text() == table.render(), "run python benchmarks/table.py"
    assert len(table.render().splitlines()) < 300


def test_every_registered_benchmark_has_a_script_and_a_row():
    page = table.render()
    for bench in _registry.BENCHMARKS:
        assert bench.script(ROOT).is_file()
        assert f"| `{bench.name}` |" in page


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout: it compares two revisions")
def test_compare_revisions_runs_a_benchmark_on_both_and_prints_the_ratio():
    """HEAD against HEAD, one round of bench_hmm's quick run: both figures read off the script's
    output, the ratio their quotient, and no worktree left behind."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare_revisions.py"), "HEAD", "HEAD",
                          "--only", "bench_hmm", "--rounds", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    (row,) = [line for line in out.stdout.splitlines() if line.startswith("| bench_hmm |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    base, other, ratio = float(cells[4]), float(cells[5]), float(cells[6])
    assert base > 0 and other > 0 and ratio == pytest.approx(other / base, abs=1e-3)
    assert re.search(r"round 1: bench_hmm on HEAD: [\d.]+ ms", out.stderr)
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert "vmp-compare-" not in listed


def test_a_benchmark_that_fails_on_one_revision_is_a_row_that_says_so():
    """An older revision whose script takes other arguments: its row names the revision, the
    other benchmarks keep their figures and ratio."""
    import argparse

    import compare_revisions
    hmm, lda = _registry.select(["bench_hmm", "bench_lda"])
    figures = {("bench_hmm", "base"): [2.0], ("bench_hmm", "other"): [3.0],
               ("bench_lda", "base"): [], ("bench_lda", "other"): []}
    text = compare_revisions.report([hmm, lda], figures, {"base": "old", "other": "new"}, [0.5],
                                    argparse.Namespace(rounds=1, full=False), {"bench_lda": "old"})
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| bench_")}
    assert "failed on old" in rows["bench_lda"]
    assert rows["bench_hmm"].rstrip(" |").endswith("1.500")
