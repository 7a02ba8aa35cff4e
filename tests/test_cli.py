"""The ``vmp`` command line, run as ``python -m vmp.cli`` from the repository root."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import vmp
from vmp.cli import main, read_table
from vmp.models import gaussian_mixture

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
def test_demo_writes_both_reports_and_the_comparison(tmp_path):
    """The README's command, as a subprocess: a report per method and the comparison."""
    out = tmp_path / "report"
    proc = run("demo", "--report", out, "--n", 200, "--svi-iterations", 150, "--large", 5000, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "warning" not in proc.stderr.lower(), "the demo's fixed-budget race is not a convergence failure"
    assert proc.stdout.startswith("demo: 200 points in 4 Gaussian clusters (seed 0)")
    sections = [line.split(":")[0] for line in proc.stdout.splitlines() if line.startswith("== ")]
    assert sections == ["== batch", "== svi", "== svi_plus", "== a larger data set"], "each fit announced, in order"
    for label in ("batch", "svi", "svi_plus"):
        for name in (DIAGRAM, "dashboard.png", "history.json", "summary.txt", "clusters.png"):
            assert (out / label / name).stat().st_size > 0, (label, name)
        assert (out / label / "dashboard.png").read_bytes()[:4] == b"\x89PNG"
        assert str((out / label).resolve()) in proc.stdout
        if HAVE_DOT:
            ET.parse(out / label / "model.svg")
    batch = json.loads((out / "batch" / "history.json").read_text())
    assert batch["method"] == "batch" and batch["converged"] is True
    assert len(batch["elbo"]) == batch["iterations"] + 1
    svi = json.loads((out / "svi" / "history.json").read_text())
    assert svi["method"] == "stochastic" and svi["iterations"] == 150 and svi["diverged"] is False
    assert svi["history"]["evaluations"]["iteration"] == [0, 25, 50, 75, 100, 125, 150]
    assert set(svi["history"]["rho"]) == {"pi", "theta"}
    assert "converged after" in (out / "batch" / "summary.txt").read_text()
    assert "method: stochastic" in (out / "svi" / "summary.txt").read_text()
    table = (out / "comparison.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| batch") or line.startswith("| svi")]
    assert len(rows) == 3 and "clusters used" in table and "final ELBO" in table
    assert rows[2].startswith("| svi_plus |")
    assert f"{batch['final_elbo']:.6g}" in rows[0] and f"{svi['final_elbo']:.6g}" in rows[1]
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert str(out.resolve()) in proc.stdout and "| svi |" in proc.stdout
    assert "SVI pays off when one sweep over the data is expensive" in proc.stdout
    large = (out / "large.md").read_text()
    assert "5,000 points" in large and "| bound within | batch VMP | SVI |" in large
    assert "within 1.0%" in proc.stdout and "ended higher" in proc.stdout and "a larger data set: 5,000 points" in proc.stdout
    printed = [line for line in proc.stdout.splitlines() if line.startswith("final ELBO")]
    assert printed[0].startswith(f"final ELBO: {batch['final_elbo']:.6g} ")
    assert printed[1].startswith(f"final ELBO (exact): {svi['final_elbo']:.6g} ")
    assert f"converged after {batch['iterations']} iterations" in proc.stdout
    shown = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in proc.stdout.splitlines()
             if line.startswith("| batch") or line.startswith("| svi")}
    assert shown["batch"] == "4", "batch VMP finds the 4 clusters the demo draws"


def test_demo_methods_option(tmp_path, capsys):
    proc = call(capsys, "demo", "--report", tmp_path, "--n", 120, "--methods", "svi",
                "--svi-iterations", 20, "--evaluate-every", 10, "--batch-size", 500, "--large", 0)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "svi" / "dashboard.png").exists() and not (tmp_path / "batch").exists()
    svi = json.loads((tmp_path / "svi" / "history.json").read_text())
    assert svi["history"]["evaluations"]["iteration"] == [0, 10, 20]
    assert "| svi |" in (tmp_path / "comparison.md").read_text()
    assert_clean_failure(call(capsys, "demo", "--methods", "batch,svi+"), 2, "svi+", "batch, svi")


def test_demo_fits_are_listed_for_new_methods():
    from vmp.cli import DEMO_FITS

    assert [f.label for f in DEMO_FITS] == ["batch", "svi", "svi_plus"]
    assert all(callable(f.fit) and f.title for f in DEMO_FITS)


def test_render_writes_the_diagram(tmp_path, capsys):
    out = tmp_path / "mf.svg"
    proc = call(capsys, "render", "matrix_factorization", "--factorized", "-o", out)
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


def test_fit_gaussian_mixture_on_a_csv(points_csv, tmp_path, capsys):
    report = tmp_path / "rep"
    proc = call(capsys, "fit", "gaussian_mixture", points_csv, "--components", 3, "--iterations", 100,
               "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "gaussian_mixture" in proc.stdout and "final ELBO" in proc.stdout
    assert "theta" in proc.stdout and "data=60" in proc.stdout
    assert {p.name for p in report.iterdir()} >= {DIAGRAM, "dashboard.png", "history.json", "summary.txt"}
    assert json.loads((report / "history.json").read_text())["method"] == "batch"


def test_fit_stochastic_stops_at_tol(points_csv, capsys):
    """--tol ends a stochastic fit by the patience rule (vmp.inference.stopping) before
    --iterations, and says so."""
    proc = call(capsys, "fit", "gaussian_mixture", points_csv, "-k", 3, "--method", "stochastic",
                "--minibatch", "data:20", "--iterations", 400, "--evaluate-every", 5, "--tol", 0.05)
    assert proc.returncode == 0, proc.stderr
    assert "has not improved by more than tol=0.05" in proc.stdout and "converged after" in proc.stdout
    steps = int(proc.stdout.split("converged after ")[1].split()[0])
    assert 25 <= steps < 400


def test_fit_n_init_keeps_the_best_of_the_seeds(tmp_path, capsys):
    """--n-init N fits from seeds SEED..SEED+N-1 and keeps the best final bound: the same fits
    made one by one through the API, and the summary lists every start's bound."""
    from vmp.cli import blobs

    x, _ = blobs(200, 0)
    data = tmp_path / "points.csv"
    data.write_text("a,b\n" + "\n".join(f"{u:.17g},{v:.17g}" for u, v in x) + "\n")
    report = tmp_path / "rep"
    proc = call(capsys, "fit", "gaussian_mixture", data, "-k", 4, "--seed", 1, "--n-init", 3,
                "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "best of 3 starts (seeds 1 to 3)" in proc.stdout
    finals = [gaussian_mixture(x, 4).fit(tol=1e-6, seed=s).final_elbo for s in (1, 2, 3)]
    assert len({round(b, 6) for b in finals}) > 1, "the seeds should reach different optima here"
    listed = proc.stdout.split("their final ELBOs: ")[1].splitlines()[0].split(", ")
    assert [float(b) for b in listed] == pytest.approx(finals, rel=1e-5)
    h = json.loads((report / "history.json").read_text())
    assert h["final_elbo"] == pytest.approx(max(finals), rel=1e-12)


def _adaptive_fit(flag, points_csv, tmp_path, capsys):
    """``vmp fit`` with ``flag`` on a mixture by minibatches: (the process, its recorded history)."""
    report = tmp_path / "rep"
    proc = call(capsys, "fit", "gaussian_mixture", points_csv, "-k", 3, "--method", "stochastic",
                "--minibatch", "data:20", flag, "--iterations", 30, "--report", report)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((report / "history.json").read_text())["history"]


def _api_rates(points_csv, step) -> list:
    """mu's step sizes in the same fit made through the API with ``step``."""
    from vmp.cli import read_table

    x = np.asarray(read_table(points_csv).values, float)
    fit = gaussian_mixture(x, 3).fit(method="stochastic", subsample=vmp.Minibatch("data", 20), step=step,
                                     iterations=30, evaluate_every=10, seed=0)
    return list(fit.history["rho"]["theta"])


def test_fit_stochastic_adaptive_steps(points_csv, tmp_path, capsys):
    """--adaptive passes vmp.Adaptive(): the recorded step sizes are the ones an API fit with
    step=vmp.Adaptive() takes, not a Robbins-Monro schedule's."""
    proc, h = _adaptive_fit("--adaptive", points_csv, tmp_path, capsys)
    assert "adaptive steps" in proc.stdout
    assert h["rho"]["theta"] == pytest.approx(_api_rates(points_csv, vmp.Adaptive()), rel=1e-12)
    rm = vmp.RobbinsMonro(tau=1.0, kappa=0.6)
    assert h["rho"]["theta"] != pytest.approx([rm(t) for t in range(1, 31)])
    sto = ("fit", "gaussian_mixture", points_csv, "-k", 2, "--iterations", 5)
    assert_clean_failure(call(capsys, *sto, "--method", "stochastic", "--minibatch", "data:5", "--adaptive",
                              "--kappa", 0.7), 2, "--adaptive", "--kappa")
    assert_clean_failure(call(capsys, *sto, "--adaptive"), 2, "--adaptive applies to --method stochastic")
    assert_clean_failure(call(capsys, *sto, "--n-init", 2, "--checkpoint", tmp_path / "c.npz"), 2,
                         "--n-init", "--checkpoint")


def test_fit_stochastic_adaptive_rule(points_csv, tmp_path, capsys):
    """--adaptive-rule passes vmp.Adaptive(coupled=False): its recorded step sizes are that
    API fit's, not the coupled default's; it is refused beside --adaptive."""
    proc, h = _adaptive_fit("--adaptive-rule", points_csv, tmp_path, capsys)
    assert "adaptive steps (the rule alone)" in proc.stdout
    assert h["rho"]["theta"] == pytest.approx(_api_rates(points_csv, vmp.Adaptive(coupled=False)), rel=1e-12)
    assert h["rho"]["theta"] != pytest.approx(_api_rates(points_csv, vmp.Adaptive(coupled=True)), rel=1e-12)
    assert "adaptive_factor" not in h
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", points_csv, "-k", 3, "--method", "stochastic",
                              "--minibatch", "data:20", "--adaptive-rule", "--adaptive"), 2,
                         "--adaptive-rule", "--adaptive")


def test_fit_stochastic_minibatch(points_csv, tmp_path, capsys):
    report = tmp_path / "rep"
    proc = call(capsys, "fit", "gaussian_mixture", points_csv, "-k", 3, "--method", "stochastic",
                "--minibatch", "data:20", "--kappa", 0.7, "--tau", 2, "--rho1", 0.9,
                "--iterations", 40, "--evaluate-every", 10, "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "stochastic VMP (minibatches of 20 (data plate), per-node update)" in proc.stdout
    assert "method: stochastic, update per-node" in proc.stdout and "last step size rho" in proc.stdout
    h = json.loads((report / "history.json").read_text())
    assert h["method"] == "stochastic" and h["iterations"] == 40
    assert h["history"]["evaluations"]["iteration"] == [0, 10, 20, 30, 40]
    rho = vmp.RobbinsMonro(tau=2, kappa=0.7, rho1=0.9)
    assert h["history"]["rho"]["theta"] == pytest.approx([rho(t) for t in range(1, 41)])
    assert h["history"]["accesses"][-1] > 0
    assert (report / "dashboard.png").read_bytes()[:4] == b"\x89PNG"


def test_fit_stochastic_per_node_global(capsys):
    proc = call(capsys, "fit", "lda", "--n", 100, "--method", "stochastic", "--per-node", 5,
                "--update", "global", "--iterations", 15)
    assert proc.returncode == 0, proc.stderr
    assert "5 children per node, global update" in proc.stdout
    assert "method: stochastic, update global" in proc.stdout
    proc = call(capsys, "fit", "lda", "--n", 100, "--method", "stochastic", "--minibatch",
                "documents:2", "--iterations", 10)
    assert proc.returncode == 0, proc.stderr          # a plate linked to the data by a gather


def test_fit_matrix_factorization_and_lda_csvs(tmp_path, capsys):
    mf = tmp_path / "ratings.csv"
    mf.write_text("user,item,rating\n0,0,4\n0,1,3.5\n1,0,2\n1,2,5\n2,1,1\n2,2,3\n")
    proc = call(capsys, "fit", "matrix_factorization", mf, "--factors", 2, "--iterations", 20)
    assert proc.returncode == 0, proc.stderr
    assert "users=3" in proc.stdout and "tau" in proc.stdout
    lda = tmp_path / "counts.tsv"
    lda.write_text("0\t0\t2\n0\t1\t1\n1\t2\t3\n1\t0\t1\n")
    proc = call(capsys, "fit", "lda", lda, "--topics", 2, "--iterations", 20)
    assert proc.returncode == 0, proc.stderr
    assert "theta" in proc.stdout and "documents=2" in proc.stdout


def test_fit_a_model_file(tmp_path, points_csv, capsys):
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
    proc = call(capsys, "fit", source, "--option", "scale=2")
    assert proc.returncode == 0, proc.stderr
    assert "toy" in proc.stdout and "tau" in proc.stdout and "obs=3" in proc.stdout
    assert "to the data of mymodel.py's build(data=None)" in proc.stdout and "synthetic" not in proc.stdout
    proc = call(capsys, "fit", source, points_csv)
    assert proc.returncode == 0, proc.stderr
    assert "obs=60" in proc.stdout


# ----- failures: a clear message, a non-zero status, no traceback -----------------------------
# A subprocess takes ~2 s to import numpy and matplotlib: a few check the real entry point (exit
# status, stderr, no traceback), the other cases run in-process through main() (the same code).
def test_missing_data_file(tmp_path, capsys):
    missing = tmp_path / "nothere.csv"
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", missing), 1, "nothere.csv", "not found")


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
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", bad), 1, "bad.csv", "line 3",
                         "'abc' is not a number")
    ragged = tmp_path / "ragged.txt"
    ragged.write_text("1 2\n3 4 5\n")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", ragged), 1, "ragged.txt", "line 2", "column")
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("user,item,rating\n0,1,3\n1.5,0,2\n")
    assert_clean_failure(call(capsys, "fit", "matrix_factorization", ratings), 1, "line 3", "user",
                         "integer ids", "1.5")
    binary = tmp_path / "data.bin"
    binary.write_bytes(bytes(range(256)))
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", binary), 1, "data.bin", "not a text file")
    empty = tmp_path / "empty.csv"
    empty.write_text("# nothing\n\n")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", empty), 1, "empty.csv", "no data rows")


def test_unknown_model_name(capsys):
    proc = call(capsys, "fit", "no_such_model")
    assert_clean_failure(proc, 2, "unknown model 'no_such_model'", "gaussian_mixture")


def test_broken_model_files(tmp_path, capsys):
    crash = tmp_path / "crash.py"
    crash.write_text("def build(data=None):\n    return 1 / 0\n")
    assert_clean_failure(run("fit", crash), 1, "crash.py", "line 2", "ZeroDivisionError")  # real entry
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


def test_stochastic_option_errors(capsys, points_csv):
    base = ("fit", "gaussian_mixture", points_csv, "-k", 2, "--iterations", 5)
    sto = base + ("--method", "stochastic")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "rows:10"), 2, "no plate named 'rows'",
                         "components, data", "data plates: data")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "components:1"), 2,
                         "plate 'components' holds no observed node", "(data)")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "data:1000"), 2, "size 1000", "60 elements")
    assert_clean_failure(call(capsys, *sto), 2, "--minibatch PLATE:SIZE", "--per-node C")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "data:5", "--per-node", 2), 2, "not both")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "data"), 2, "PLATE:SIZE", "data:50")
    assert_clean_failure(call(capsys, *sto, "--minibatch", "data:zero"), 2, "--minibatch")
    assert_clean_failure(call(capsys, *sto, "--per-node", 0), 2, "--per-node")
    assert_clean_failure(call(capsys, *sto, "--per-node", 2, "--kappa", 1.5), 2, "--kappa", "kappa=1.5")
    assert_clean_failure(call(capsys, *sto, "--per-node", 2, "--rho1", 0), 2, "--rho1")
    assert_clean_failure(call(capsys, *sto, "--per-node", 2, "--tau", -1), 2, "--tau >= 0")
    assert_clean_failure(call(capsys, *sto, "--per-node", 2, "--update", "sideways"), 2, "--update")
    assert_clean_failure(call(capsys, *sto, "--per-node", 2, "--tol", 1e-3, "--evaluate-every", 0), 2,
                         "--tol", "--evaluate-every")
    assert_clean_failure(call(capsys, *base, "--method", "batch", "--minibatch", "data:5", "--kappa", 0.7), 2,
                         "--minibatch, --kappa apply to --method stochastic")
    assert_clean_failure(call(capsys, *base, "--method", "svi"), 2, "--method")


# ----- in-process ----------------------------------------------------------------------------
def test_main_returns_status_codes(capsys, tmp_path):
    assert main(["fit", "no_such_model"]) == 2
    assert "unknown model" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "demo" in capsys.readouterr().out
    assert main(["render", "gaussian_mixture", "-k", "4", "-o", str(tmp_path / "g.dot")]) == 0
    assert "components = 4" in (tmp_path / "g.dot").read_text()


def test_demo_help_names_every_fit_and_the_race(capsys):
    assert main(["demo", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in ("batch VMP", "SVI,", "SVI+", "--large", "large.md")), text


def test_read_table_sniffs_delimiters_and_headers(tmp_path):
    for text in ("1,2\n3,4\n", "# comment\n1;2\n\n3;4\n", "a\tb\n1\t2\n3\t4\n", "  1  2\n3 4\n"):
        p = tmp_path / "t.txt"
        p.write_text(text)
        assert read_table(p).values.tolist() == [[1.0, 2.0], [3.0, 4.0]], text
    p.write_text("user,item,rating\n0,1,2.5\n")
    t = read_table(p)
    assert t.header == ["user", "item", "rating"] and t.lines == [2]


def test_checkpoint_and_resume_continue_the_same_fit(capsys, tmp_path):
    """vmp fit --checkpoint for 20 steps, then --resume to 40, reports the bounds of one 40-step fit."""
    common = ["fit", "gaussian_mixture", "--method", "stochastic", "--minibatch", "data:20", "--n", 120]
    ckpt = tmp_path / "fit.npz"
    first = call(capsys, *common, "--iterations", 20, "--checkpoint", ckpt)
    assert first.returncode == 0 and "--resume" in first.stdout and ckpt.is_file()
    resumed = call(capsys, *common, "--iterations", 40, "--resume", ckpt, "--report", tmp_path / "a")
    whole = call(capsys, *common, "--iterations", 40, "--report", tmp_path / "b")
    assert resumed.returncode == whole.returncode == 0
    a = json.loads((tmp_path / "a" / "history.json").read_text())
    b = json.loads((tmp_path / "b" / "history.json").read_text())
    assert a["history"]["evaluations"] == b["history"]["evaluations"] and a["iterations"] == 40
    missing = call(capsys, *common, "--resume", tmp_path / "nothing.npz")
    assert_clean_failure(missing, 2, "--resume")


def test_fit_gaussian_mixture_reads_empty_cells_and_na_as_missing(tmp_path, capsys):
    """Empty cells and NA in a gaussian_mixture table are missing coordinates: the CLI's fit is
    the Python fit of the same array with NaN there; other text, inf, and an empty rating of a
    matrix factorization are still refused."""
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, (40, 3)), rng.normal(5, 1, (40, 3))]
    gone = rng.random(x.shape) < 0.1
    gone[0] = True  # one row with nothing observed
    cells = [[("NA" if (i + j) % 2 else "") if g else repr(float(v)) for j, (v, g) in enumerate(zip(row, miss))]
             for i, (row, miss) in enumerate(zip(x, gone))]
    data = tmp_path / "gaps.csv"
    data.write_text("a,b,c\n" + "\n".join(",".join(r) for r in cells) + "\n")
    proc = call(capsys, "fit", "gaussian_mixture", data, "-k", 2, "--iterations", 50, "--report", tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    assert f"{int(gone.sum())} missing values, inferred as latent coordinates" in proc.stdout
    assert "1 of them partially observed" in proc.stdout

    model = gaussian_mixture(np.where(gone, np.nan, x), 2)
    expected = model.fit(iterations=50, seed=0)
    got = json.loads((tmp_path / "r" / "history.json").read_text())
    assert np.isclose(got["elbo"][-1], expected.final_elbo, rtol=1e-12, atol=0)
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n3,inf\n")
    assert_clean_failure(call(capsys, "fit", "gaussian_mixture", bad), 1, "line 3", "'inf' is not a finite number")
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("user,item,rating\n0,1,3\n1,0,\n")
    assert_clean_failure(call(capsys, "fit", "matrix_factorization", ratings), 1, "line 3", "'' is not a number")


def test_fit_without_method_is_stochastic_given_a_subsample(points_csv, tmp_path, capsys):
    """--minibatch (or --per-node) without --method runs the stochastic fit, as fit(subsample=...)
    does: the same history as with --method stochastic."""
    common = ("fit", "gaussian_mixture", points_csv, "-k", 2, "--iterations", 20, "--minibatch", "data:10")
    a = call(capsys, *common, "--report", tmp_path / "a")
    b = call(capsys, *common, "--method", "stochastic", "--report", tmp_path / "b")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ha, hb = (json.loads((tmp_path / r / "history.json").read_text()) for r in "ab")
    assert ha["method"] == "stochastic" and ha["history"]["evaluations"] == hb["history"]["evaluations"]
    c = call(capsys, "fit", "gaussian_mixture", points_csv, "-k", 2, "--iterations", 5, "--per-node", 3)
    assert c.returncode == 0 and "stochastic" in c.stdout, c.stderr


def test_the_model_file_example_of_the_help_is_the_docs_and_runs(tmp_path, capsys):
    """``vmp fit --help`` shows a complete model file; docs/getting-started.md has the same one;
    it fits (its own data, and a table's columns with an --option) and renders."""
    from vmp.cli import MODEL_FILE_EXAMPLE as code
    docs = (Path(__file__).resolve().parents[1] / "docs" / "getting-started.md").read_text()
    assert f"```python\n{code}```" in docs
    shown = call(capsys, "fit", "--help").stdout
    assert "A model file is a Python file that defines build(data=None)" in shown
    assert textwrap.indent(code, "    ") in shown
    source = tmp_path / "mixture.py"
    source.write_text(code)
    proc = call(capsys, "fit", source, "--iterations", "5")
    assert proc.returncode == 0, proc.stderr
    assert "mixture" in proc.stdout and "data=300" in proc.stdout
    table = tmp_path / "points.csv"
    rng = np.random.default_rng(1)
    table.write_text("id,x,y\n" + "\n".join(f"{i},{a:.4f},{b:.4f}" for i, (a, b) in enumerate(rng.normal(size=(40, 2)))))
    proc = call(capsys, "fit", source, table, "--columns", "x,y", "-O", "k=4", "--iterations", "5")
    assert proc.returncode == 0, proc.stderr
    assert "data=40" in proc.stdout and "components=4" in proc.stdout
    assert call(capsys, "render", source).returncode == 0
