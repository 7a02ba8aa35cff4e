"""``vmp fit MODEL DATA --stream ROWS``: the command line's stream is the Python API's on the
same chunks (the bits of the saved state), resumes from its checkpoint with more data, and
refuses flags that mean nothing to a stream."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_cli import call as _call
from vmp.inference.state import State
from vmp.models import gaussian_mixture


@pytest.fixture
def points(tmp_path):
    rng = np.random.default_rng(0)
    z = rng.integers(0, 3, 1500)
    x = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])[z] + rng.normal(size=(1500, 2))
    for n in (1000, 1500):
        np.savetxt(tmp_path / f"x{n}.csv", x[:n], delimiter=",", header="a,b", comments="")
    return x


def test_the_command_line_stream_is_the_api_stream(capsys, tmp_path, points):
    out = _call(capsys, "fit", "gaussian_mixture", tmp_path / "x1000.csv", "-k", 3, "--stream", 500,
                "--forget", 0.8, "--checkpoint", tmp_path / "s.npz", "--report", tmp_path / "report")
    assert out.returncode == 0, out.stderr
    assert "streaming VB, forget 0.8 in chunks of 500 rows" in out.stdout
    assert "chunk 2: 500 rows, bound per element" in out.stdout
    assert len(json.loads((tmp_path / "report" / "stream.json").read_text())) == 2
    model = gaussian_mixture(points[:500], 3)  # built from the first chunk, the file read a chunk at a time
    stream = model.stream("data", forget=0.8)
    for lo in (0, 500):
        stream.update({"x": points[lo:lo + 500]})
    saved, _ = State.load(tmp_path / "s.npz")
    for name in ("pi", "theta"):
        assert all(np.array_equal(a, b) for a, b in zip(saved.natural[name], stream.posterior[name]))
    # more rows arrive: the resumed stream fits only the third chunk
    out = _call(capsys, "fit", "gaussian_mixture", tmp_path / "x1500.csv", "-k", 3, "--stream", 500,
                "--forget", 0.8, "--resume", tmp_path / "s.npz", "--checkpoint", tmp_path / "s.npz")
    assert out.returncode == 0, out.stderr
    assert "chunk 3: 500 rows" in out.stdout and "chunk 2:" not in out.stdout
    stream.update({"x": points[1000:]})
    saved, _ = State.load(tmp_path / "s.npz")
    for name in ("pi", "theta"):
        assert all(np.array_equal(a, b) for a, b in zip(saved.natural[name], stream.posterior[name]))


@pytest.mark.parametrize("flags, words", [
    (["--forget", "0.5"], "--forget applies to --stream ROWS"),
    (["--stream", "100", "--n-init", "2"], "--n-init cannot be used"),
    (["--stream", "100", "--minibatch", "data:10"], "--minibatch cannot be used"),
    (["--stream", "100", "--forget", "0.5", "--population", "100"], "--forget with --population"),
    (["--stream", "0"], "expected a positive number of rows"),
    (["--stream", "100", "--forget", "1.5"], "expected a number in (0, 1]"),
    (["--stream", "100", "--population", "-2"], "expected a positive population size"),
])
def test_flags_a_stream_refuses(capsys, flags, words):
    out = _call(capsys, "fit", "gaussian_mixture", *flags)
    assert out.returncode == 2 and words in out.stderr, (out.returncode, out.stderr)


def test_the_data_file_is_read_a_block_at_a_time(capsys, tmp_path, points):
    """A bad line past the first chunk is found only when its chunk is read: chunk 1 is fitted first."""
    lines = (tmp_path / "x1000.csv").read_text().splitlines()
    lines[800] = "1.0,oops"
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    out = _call(capsys, "fit", "gaussian_mixture", tmp_path / "bad.csv", "-k", 3, "--stream", 500)
    assert out.returncode == 1
    assert "chunk 1: 500 rows" in out.stdout and "chunk 2" not in out.stdout
    assert "line 801" in out.stderr and "oops" in out.stderr


def test_a_parquet_file_streams_as_the_csv_does(capsys, tmp_path, points):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": points[:1000, 0], "b": points[:1000, 1]}), tmp_path / "x.parquet", row_group_size=300)
    for name in ("x.parquet", "x1000.csv"):
        out = _call(capsys, "fit", "gaussian_mixture", tmp_path / name, "-k", 3, "--stream", 400,
                    "--checkpoint", tmp_path / f"{name}.npz")
        assert out.returncode == 0, out.stderr
        assert "chunk 3: 200 rows" in out.stdout
    a, _ = State.load(tmp_path / "x.parquet.npz")
    b, _ = State.load(tmp_path / "x1000.csv.npz")
    for name in ("pi", "theta"):
        assert all(np.array_equal(x, y) for x, y in zip(a.natural[name], b.natural[name]))


def test_lda_streams_whole_documents(capsys, tmp_path):
    from vmp.models import lda

    rng = np.random.default_rng(0)
    table = np.stack([rng.multinomial(20, p) for p in rng.dirichlet(np.ones(3), size=25) @
                      rng.dirichlet(np.full(12, 0.2), size=3)])
    doc, word = np.nonzero(table)
    np.savetxt(tmp_path / "docs.csv", np.column_stack([doc, word, table[doc, word]]), fmt="%d", delimiter=",",
               header="doc,word,count", comments="")
    out = _call(capsys, "fit", "lda", tmp_path / "docs.csv", "-k", 3, "--stream", 10, "--checkpoint",
                tmp_path / "s.npz")
    assert out.returncode == 0, out.stderr
    assert "chunk 1: 10 rows" in out.stdout and "chunk 3: 5 rows" in out.stdout
    stream = lda(doc, word, table[doc, word].astype(float), 3).stream("documents")
    for lo in (0, 10, 20):
        on = (doc >= lo) & (doc < lo + 10)
        stream.update({"w": word[on], "document": doc[on], "counts": table[doc, word][on].astype(float)})
    saved, _ = State.load(tmp_path / "s.npz")
    assert all(np.array_equal(x, y) for x, y in zip(saved.natural["beta"], stream.posterior["beta"]))


def test_a_model_file_whose_documents_hold_no_data_is_not_streamed_by_blocks(capsys, tmp_path):
    (tmp_path / "topics.py").write_text(
        "import numpy as np\nfrom vmp.models import lda\n\n"
        "def build(data=None):\n"
        "    d, w = data[:, 0].astype(int), data[:, 1].astype(int)\n"
        "    return lda(d, w, data[:, 2], 2, n_words=5)\n")
    rows = np.array([[d, w, 1] for d in range(6) for w in range(3)])
    np.savetxt(tmp_path / "docs.csv", rows, fmt="%d", delimiter=",", header="doc,word,count", comments="")
    out = _call(capsys, "fit", tmp_path / "topics.py", tmp_path / "docs.csv", "--stream", 4)
    assert out.returncode == 1 and "may split one of its elements" in out.stderr and "documents" in out.stderr
