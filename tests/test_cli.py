"""The ``vmp`` command line, run as ``python -m vmp.cli`` from the repository root."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from vmp.cli import main, read_table

ROOT = Path(__file__).resolve().parents[1]
HAVE_DOT = shutil.which("dot") is not None
DIAGRAM = "model.svg" if HAVE_DOT else "model.dot"


def run(*args, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "vmp.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    return proc


def call(capsys, *args):
    """main() in-process, like run()."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def assert_clean_failure(proc, code, *words):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


@pytest.fixture
def points_csv(tmp_path):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(c, 0.3, size=(30, 2)) for c in [(0, 0), (3, 0)]])
    path = tmp_path / "points.csv"
    path.write_text("a,b\n" + "\n".join(f"{u:.5f},{v:.5f}" for u, v in x) + "\n")
    return path


# ----- success --------------------------------------------------------------------------------
def test_demo_writes_the_report_within_a_minute(tmp_path):
    out = tmp_path / "report"
    start = time.perf_counter()
    proc = run("demo", "--report", out, "--n", 300, timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 60
    for name in (DIAGRAM, "dashboard.png", "history.json", "summary.txt"):
        assert (out / name).stat().st_size > 0, name
    assert str(out.resolve()) in proc.stdout
    history = json.loads((out / "history.json").read_text())
    assert history["converged"] is True and len(history["elbo"]) == history["iterations"] + 1
    assert "converged after" in (out / "summary.txt").read_text()
    assert (out / "dashboard.png").read_bytes()[:4] == b"\x89PNG"
    if HAVE_DOT:
        ET.parse(out / "model.svg")


def test_render_writes_the_diagram(tmp_path):
    out = tmp_path / "mf.svg"
    proc = run("render", "matrix_factorization", "--factorized", "-o", out)
    assert proc.returncode == 0, proc.stderr
    written = out if HAVE_DOT else out.with_suffix(".dot")
    assert written.exists() and str(written) in proc.stdout
    if HAVE_DOT:
        assert ET.parse(out).getroot().tag.endswith("svg")
    else:
        assert "install Graphviz" in proc.stderr


def test_render_prints_dot_source_without_output(capsys):
    proc = call(capsys, "render", "lda")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("digraph lda") and "cluster_topics" in proc.stdout


def test_fit_gaussian_mixture_on_a_csv(points_csv, tmp_path):
    report = tmp_path / "rep"
    proc = run("fit", "gaussian_mixture", points_csv, "--components", 3, "--iterations", 100,
               "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "gaussian_mixture" in proc.stdout and "final ELBO" in proc.stdout
    assert "mu" in proc.stdout and "data=60" in proc.stdout
    assert {p.name for p in report.iterdir()} >= {DIAGRAM, "dashboard.png", "history.json", "summary.txt"}


def test_fit_matrix_factorization_and_lda_csvs(tmp_path):
    mf = tmp_path / "ratings.csv"
    mf.write_text("user,item,rating\n0,0,4\n0,1,3.5\n1,0,2\n1,2,5\n2,1,1\n2,2,3\n")
    proc = run("fit", "matrix_factorization", mf, "--factors", 2, "--iterations", 20)
    assert proc.returncode == 0, proc.stderr
    assert "users=3" in proc.stdout and "tau" in proc.stdout
    lda = tmp_path / "counts.tsv"
    lda.write_text("0\t0\t2\n0\t1\t1\n1\t2\t3\n1\t0\t1\n")
    proc = run("fit", "lda", lda, "--topics", 2, "--iterations", 20)
    assert proc.returncode == 0, proc.stderr
    assert "theta" in proc.stdout and "documents=2" in proc.stdout


def test_fit_a_model_file(tmp_path, points_csv):
    source = tmp_path / "mymodel.py"
    source.write_text(
        "import numpy as np\nimport vmp\n\n"
        "def build(data=None, scale=1.0):\n"
        "    y = np.array([0.1, -0.3, 0.5]) if data is None else data[:, 0]\n"
        "    with vmp.Model('toy') as m:\n"
        "        tau = vmp.Gamma('tau', 1.0, scale)\n"
        "        with vmp.Plate('obs', len(y)):\n"
        "            vmp.Normal('y', 0.0, tau, observed=y)\n"
        "    return m\n")
    proc = run("fit", source, "--option", "scale=2")
    assert proc.returncode == 0, proc.stderr
    assert "toy" in proc.stdout and "tau" in proc.stdout and "obs=3" in proc.stdout
    proc = run("fit", source, points_csv)
    assert proc.returncode == 0, proc.stderr
    assert "obs=60" in proc.stdout


# ----- failures: a clear message, a non-zero status, no traceback -----------------------------
# One subprocess per kind of failure; the variants run in-process through main() (same code).
def test_missing_data_file(tmp_path):
    missing = tmp_path / "nothere.csv"
    assert_clean_failure(run("fit", "gaussian_mixture", missing), 1, "nothere.csv", "not found")


def test_bad_option(capsys):
    assert_clean_failure(run("fit", "gaussian_mixture", "--bogus"), 2, "--bogus")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", "--components", "zero"), 2,
                         "--components", "positive integer")
    assert_clean_failure(call(capsys, "demo", "--iterations", "-3"), 2, "--iterations")
    assert_clean_failure(call(capsys), 2, "COMMAND")
    assert_clean_failure(call(capsys, "fit", "lda", "--factorized"), 2, "--factorized")


def test_malformed_data(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n3,abc\n")
    assert_clean_failure(run("fit", "gaussian_mixture", bad), 1, "bad.csv", "line 3", "'abc' is not a number")
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("1 2\n3 4 5\n")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", ragged), 1, "ragged.txt", "line 2", "column")
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("user,item,rating\n0,1,3\n-1,0,2\n")
    assert_clean_failure(call(capsys, "fit", "matrix_factorization", ratings), 1, "line 3", "user",
                         "non-negative")
    binary = tmp_path / "data.bin"
    binary.write_bytes(bytes(range(256)))
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", binary), 1, "data.bin", "not a text file")
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing\n\n")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", empty), 1, "empty.csv", "no data rows")


def test_unknown_model_name():
    proc = run("fit", "no_such_model")
    assert_clean_failure(proc, 2, "unknown model 'no_such_model'", "gaussian_mixture")


def test_broken_model_files(tmp_path, capsys):
    crash = tmp_path / "crash.py"
    crash.write_text("def build(data=None):\n    return 1 / 0\n")
    assert_clean_failure(run("fit", crash), 1, "crash.py", "line 2", "ZeroDivisionError")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def build(:\n")
    assert_clean_failure(call(capsys, "render", syntax), 1, "syntax.py", "SyntaxError")
    nothing = tmp_path / "nothing.py"
    nothing.write_text("x = 1\n")
    assert_clean_failure(call(capsys, "render", nothing), 1, "neither build(data=None) nor model")
    assert_clean_failure(call(capsys, "render", tmp_path / "absent.py"), 1, "absent.py", "not found")


def test_model_errors_and_bad_output(tmp_path, points_csv, capsys):
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", points_csv, "-O", "alpha=-1"), 1, "alpha")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", points_csv, "-O", "nope=1"), 2, "nope")
    assert_clean_failure(call(capsys, "render", "lda", "-o", tmp_path / "lda.txt"), 2, "lda.txt", ".svg")


# ----- in-process ----------------------------------------------------------------------------
def test_main_returns_status_codes(capsys, tmp_path):
    assert main(["fit", "no_such_model"]) == 2
    assert "unknown model" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "demo" in capsys.readouterr().out
    assert main(["render", "gaussian_mixture", "-k", "4", "-o", str(tmp_path / "g.dot")]) == 0
    assert "components = 4" in (tmp_path / "g.dot").read_text()


def test_read_table_sniffs_delimiters_and_headers(tmp_path):
    for text in ("1,2\n3,4\n", "# comment\n1;2\n\n3;4\n", "a\tb\n1\t2\n3\t4\n", "  1  2\n3 4\n"):
        p = tmp_path / "t.txt"
        p.write_text(text)
        assert read_table(p).values.tolist() == [[1.0, 2.0], [3.0, 4.0]], text
    p.write_text("user,item,rating\n0,1,2.5\n")
    t = read_table(p)
    assert t.header == ["user", "item", "rating"] and t.lines == [2]
