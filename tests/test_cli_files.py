"""``vmp fit`` on real data files: id columns renumbered (and mapped back in the report),
``--columns``, Parquet, warnings about what was left out, the report directory checked before the
fit, ``--version`` and the help of a bare ``vmp``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vmp.cli import main

ROOT = Path(__file__).resolve().parents[1]


def call(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture
def movielens_like(tmp_path):
    """Ratings with MovieLens's layout: 1-based user ids, sparse movie ids, a timestamp column."""
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(1, 13), 5)                          # 12 users, ids 1..12
    movie_ids = np.array([1, 3, 7, 50, 1200, 193609, 8, 99])        # 8 movies, sparse ids
    movies = rng.choice(movie_ids, size=users.size)
    movies[:8] = movie_ids                                          # every movie rated
    lines = ["userId,movieId,rating,timestamp"]
    lines += [f"{u},{m},{rng.integers(1, 6)}.0,{964982703 + i}" for i, (u, m) in enumerate(zip(users, movies))]
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, users, movies


def test_ids_are_renumbered_and_mapped_back(movielens_like, tmp_path, capsys):
    path, users, movies = movielens_like
    report = tmp_path / "out"
    proc = call(capsys, "fit", "matrix_factorization", path, "--iterations", 10, "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert f"{users.size} ratings of 8 items by 12 users" in proc.stdout
    assert "users=12 " in proc.stdout and "items=8 " in proc.stdout
    assert "'timestamp' not used" in proc.stderr
    assert "'userId': 12 distinct ids from 1 to 12 renumbered 0 to 11" in proc.stderr
    assert "'movieId': 8 distinct ids from 1 to 193,609 renumbered 0 to 7" in proc.stderr
    ids = json.loads((report / "ids.json").read_text())
    assert ids["users"] == {"column": "userId", "ids": list(range(1, 13))}
    assert ids["items"]["column"] == "movieId" and ids["items"]["ids"] == sorted(set(movies.tolist()))
    assert "ids.json" in proc.stdout


def test_contiguous_zero_based_ids_are_kept_without_a_warning(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("user,item,rating\n0,0,4\n0,1,3\n1,0,2\n1,2,5\n2,1,1\n2,2,3\n")
    proc = call(capsys, "fit", "matrix_factorization", path, "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert "renumbered" not in proc.stderr and "users=3 " in proc.stdout


def test_columns_choose_and_order_the_columns(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("stars,who,what,when\n4,10,7,0\n3,10,9,0\n2,11,7,0\n5,12,9,0\n")
    proc = call(capsys, "fit", "matrix_factorization", path, "--columns", "who,what,stars",
                "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert "4 ratings of 2 items by 3 users" in proc.stdout
    assert "'when' not used" in proc.stderr
    proc = call(capsys, "fit", "matrix_factorization", path, "--columns", "2,3,1", "--iterations", 5)
    assert proc.returncode == 0 and "4 ratings of 2 items by 3 users" in proc.stdout
    proc = call(capsys, "fit", "matrix_factorization", path, "--columns", "who,nope,stars")
    assert proc.returncode == 1 and "no column 'nope'" in proc.stderr and "'stars', 'who'" in proc.stderr
    proc = call(capsys, "fit", "matrix_factorization", path, "--columns", "who,stars")
    assert proc.returncode == 1 and "reads 3 columns" in proc.stderr
    proc = call(capsys, "fit", "gaussian_mixture", "--columns", "a,b")
    assert proc.returncode == 2 and "give a data file" in proc.stderr


def test_a_string_column_is_fine_when_not_used(tmp_path, capsys):
    path = tmp_path / "points.csv"
    rng = np.random.default_rng(1)
    path.write_text("name,x,y\n" + "".join(f"p{i},{a:.3f},{b:.3f}\n" for i, (a, b) in
                                          enumerate(rng.normal(size=(30, 2)))))
    proc = call(capsys, "fit", "gaussian_mixture", path, "--columns", "x,y", "-k", 2, "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert "30 points in 2 dimensions (x, y)" in proc.stdout and "'name' not used" in proc.stderr
    proc = call(capsys, "fit", "gaussian_mixture", path, "-k", 2)
    assert proc.returncode == 1 and "line 2, column 1: 'p0' is not a number" in proc.stderr


def test_an_id_column_of_a_mixture_file_is_left_out_with_a_warning(tmp_path, capsys):
    rng = np.random.default_rng(2)
    path = tmp_path / "points.csv"
    path.write_text("id,x,y\n" + "".join(f"{i + 1},{a:.3f},{b:.3f}\n" for i, (a, b) in
                                         enumerate(rng.normal(size=(30, 2)))))
    proc = call(capsys, "fit", "gaussian_mixture", path, "-k", 2, "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert "'id' look like ids and are left out" in proc.stderr
    assert "30 points in 2 dimensions (x, y)" in proc.stdout
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text("".join(f"{i + 1},{a:.3f},{b:.3f}\n" for i, (a, b) in
                               enumerate(rng.normal(size=(30, 2)))))
    proc = call(capsys, "fit", "gaussian_mixture", unnamed, "-k", 2, "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert "column 'column 1' counts the rows" in proc.stderr and "3 dimensions" in proc.stdout


def _frame(path: Path):
    pd = pytest.importorskip("pandas")
    lines = path.read_text().splitlines()
    rows = [list(map(float, line.split(","))) for line in lines[1:]]
    return pd.DataFrame(rows, columns=lines[0].split(","))


def test_parquet_files_are_read_through_pandas(movielens_like, tmp_path, capsys, monkeypatch):
    pd = pytest.importorskip("pandas")
    path, users, _ = movielens_like
    frame = _frame(path)
    parquet = tmp_path / "ratings.parquet"
    try:
        frame.to_parquet(parquet)
    except ImportError:  # no pyarrow / fastparquet here: pandas' reader stands in
        parquet.write_bytes(b"PAR1")
        monkeypatch.setattr(pd, "read_parquet", lambda p, *a, **k: frame)
    proc = call(capsys, "fit", "matrix_factorization", parquet, "--iterations", 5)
    assert proc.returncode == 0, proc.stderr
    assert f"{users.size} ratings of 8 items by 12 users" in proc.stdout
    assert "'timestamp' not used" in proc.stderr


def test_parquet_without_its_reader_says_what_to_install(tmp_path, capsys, monkeypatch):
    pd = pytest.importorskip("pandas")

    def missing(*args, **kwargs):
        raise ImportError("Unable to find a usable engine; tried using: 'pyarrow', 'fastparquet'.")

    monkeypatch.setattr(pd, "read_parquet", missing)
    parquet = tmp_path / "r.parquet"
    parquet.write_bytes(b"PAR1")
    proc = call(capsys, "fit", "matrix_factorization", parquet)
    assert proc.returncode == 1 and "needs pandas and pyarrow" in proc.stderr
    assert "vmp[parquet]" in proc.stderr and "Traceback" not in proc.stderr


def test_the_report_directory_is_checked_before_the_fit(movielens_like, tmp_path, capsys):
    path, _, _ = movielens_like
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for report in (blocker, blocker / "below"):
        proc = call(capsys, "fit", "matrix_factorization", path, "--report", report)
        assert proc.returncode == 1 and "--report" in proc.stderr, proc.stderr
        assert "fitting" not in proc.stdout  # refused before any fitting
    proc = call(capsys, "demo", "--report", blocker)
    assert proc.returncode == 1 and "--report" in proc.stderr and "fitting" not in proc.stdout


def test_warnings_are_printed_before_the_fit(movielens_like):
    path, _, _ = movielens_like
    proc = subprocess.run([sys.executable, "-m", "vmp.cli", "fit", "matrix_factorization", str(path),
                           "--iterations", "5"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    warning = next(i for i, line in enumerate(lines) if "'timestamp' not used" in line)
    summary = next(i for i, line in enumerate(lines) if line.startswith("fit: "))
    assert lines[warning].startswith("vmp: warning: ") and warning < summary


def test_version_and_bare_command(capsys):
    import vmp

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"vmp {vmp.__version__}"
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: vmp" in err and "demo" in err and "render" in err and "fit" in err
