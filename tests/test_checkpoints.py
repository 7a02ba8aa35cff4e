"""Checkpoint files: written atomically (a kill, a full disk or a signal at any moment leaves a
loadable file), their path checked before a fit, and refused when damaged or of another model or
fit (a CheckpointError saying what differs)."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import vmp
from models import gaussian_mixture
from tests.golden_fits import _blobs
from vmp.inference.checkpoint import write_atomic

ROOT = Path(__file__).resolve().parents[1]


def _mixture(n: int = 60, k: int = 3):
    return gaussian_mixture(_blobs(n), k)


def _fit(model, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        return model.fit(**{"progress": False, **options})


def _python(script: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _rewrite(path: Path, change) -> None:
    """The .npz at ``path`` with its arrays passed through ``change(arrays)`` (a valid archive)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


# ----- writing -------------------------------------------------------------------------------------
def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "fit.npz"
    path.write_bytes(b"the previous checkpoint")

    def half_then_full(fh):
        fh.write(b"half of a new one")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(vmp.CheckpointError, match="No space left on device"):
        write_atomic(path, half_then_full)
    assert path.read_bytes() == b"the previous checkpoint"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.npz"]


@pytest.mark.parametrize("where,words", [
    (lambda tmp: tmp / "missing" / "fit.npz", ["checkpoint=", "does not exist"]),
    (lambda tmp: tmp, ["checkpoint=", "not a regular file"]),
    (lambda tmp: Path("/dev/full"), ["checkpoint=", "/dev/full", "not a regular file"]),
], ids=["missing folder", "a folder", "/dev/full"])
def test_a_checkpoint_path_that_cannot_be_written_is_refused_before_any_step(tmp_path, where, words):
    steps = []
    with pytest.raises(vmp.CheckpointError) as info:
        _fit(_mixture(), iterations=3, checkpoint=where(tmp_path), callback=lambda t, fit: steps.append(t))
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert steps == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_refused_before_any_step(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(vmp.CheckpointError, match="takes no new file"):
            _fit(_mixture(), iterations=3, checkpoint=folder / "fit.npz")
    finally:
        folder.chmod(0o700)


def test_a_full_disk_keeps_the_previous_checkpoint_and_the_fit_returns(tmp_path):
    """RLIMIT_FSIZE below the checkpoint's size makes every later write fail (EFBIG): each one is
    a CheckpointWarning, the fit runs to its end, and the file is the last one written."""
    path = tmp_path / "fit.npz"
    out = _python(f"""
        import json, resource, warnings
        import vmp
        from models import gaussian_mixture
        from tests.golden_fits import _blobs
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        gaussian_mixture(_blobs(60), 3).fit(iterations=2, tol=0.0, checkpoint={str(path)!r}, progress=False)
        size = __import__("os").path.getsize({str(path)!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (size // 2, resource.RLIM_INFINITY))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            r = gaussian_mixture(_blobs(60), 3).fit(iterations=6, tol=0.0, resume={str(path)!r},
                                                   checkpoint={str(path)!r}, checkpoint_every=1, progress=False)
        print(json.dumps([r.iterations, sum(w.category is vmp.CheckpointWarning for w in seen),
                          [str(w.message) for w in seen if w.category is vmp.CheckpointWarning][-1]]))
    """)
    assert out.returncode == 0, out.stderr
    iterations, warned, last = json.loads(out.stdout.splitlines()[-1])
    assert iterations == 6 and warned == 5  # steps 3-6 and the last write
    assert "result.save" in last
    assert vmp.load(path, _mixture()).iterations == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.npz"]


def test_kill_9_during_checkpoint_writes_leaves_a_loadable_checkpoint(tmp_path):
    """A fit writing a checkpoint at every step, killed at 5 random moments: the file always
    loads into the model and resumes."""
    rng = np.random.default_rng(29)
    for trial in range(5):
        path = tmp_path / f"fit{trial}.npz"
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            import warnings
            import vmp
            from models import gaussian_mixture
            from tests.golden_fits import _blobs
            warnings.simplefilter("ignore")
            gaussian_mixture(_blobs(600), 4).fit(iterations=100000, tol=0.0, checkpoint={str(path)!r},
                                                 checkpoint_every=1, progress=False)
        """)], cwd=ROOT)
        try:
            deadline = time.monotonic() + 60
            while not path.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.4))
        finally:
            proc.kill()
            proc.wait()
        result = vmp.load(path, gaussian_mixture(_blobs(600), 4))
        assert result.iterations >= 1
    resumed = _fit(gaussian_mixture(_blobs(600), 4), resume=path, iterations=result.iterations + 1, tol=0.0)
    assert resumed.iterations == result.iterations + 1


_SIGNAL_IN_LAST_WRITE = """
    import json, os, signal, warnings
    import numpy as np
    import vmp
    from models import gaussian_mixture
    from tests.golden_fits import _blobs
    warnings.simplefilter("ignore")
    write = np.savez_compressed

    def signalled(*args, **kwargs):  # the signal arrives while the last checkpoint is written
        os.kill(os.getpid(), SIGNAL)
        return write(*args, **kwargs)

    def callback(t, fit):
        if t == 3 and FIRST is not None:
            os.kill(os.getpid(), FIRST)
        if t == 3:
            np.savez_compressed = signalled

    r = gaussian_mixture(_blobs(60), 3).fit(iterations=10, tol=0.0, checkpoint=PATH, callback=callback,
                                           progress=False)
    print(json.dumps([r.iterations, r.interrupted]))
"""


@pytest.mark.parametrize("first,second", [(None, "SIGTERM"), ("SIGINT", "SIGINT"), ("SIGTERM", "SIGTERM")],
                         ids=["SIGTERM", "double Ctrl-C", "double SIGTERM"])
def test_a_signal_during_the_last_write_returns_the_result_and_a_loadable_file(tmp_path, first, second):
    path = tmp_path / "fit.npz"
    out = _python(f"import signal\nSIGNAL = signal.{second}\nFIRST = {'None' if first is None else 'signal.' + first}"
                  f"\nPATH = {str(path)!r}\n" + textwrap.dedent(_SIGNAL_IN_LAST_WRITE))
    assert out.returncode == 0, out.stderr
    iterations, interrupted = json.loads(out.stdout.splitlines()[-1])
    assert (iterations, interrupted) == ((10, False) if first is None else (3, True))
    assert vmp.load(path, _mixture()).iterations == iterations


# ----- reading -------------------------------------------------------------------------------------
def test_a_file_of_another_model_is_refused_saying_what_differs(tmp_path):
    path = tmp_path / "k3.npz"
    _fit(_mixture(k=3), iterations=2, checkpoint=path)
    with pytest.raises(vmp.CheckpointError) as info:
        vmp.load(path, _mixture(k=4))
    assert "node 'theta' has plates (components: 3) in the file, (components: 4) in the model" in str(info.value)
    with pytest.raises(vmp.CheckpointError, match=r"resume=: .*node 'z' has plates \(data: 60\) in the file, "
                                                  r"\(data: 40\) in the model"):
        _fit(_mixture(n=40), resume=path, iterations=4)


def _pair(swapped: bool):
    """x ~ Normal(mean, precision): the mean named 'a' and the precision 'b', or the reverse."""
    with vmp.Model("pair") as model:
        mean = vmp.Normal("b" if swapped else "a", 0.0, 1.0)
        precision = vmp.Gamma("a" if swapped else "b", 1.0, 1.0)
        with vmp.Plate("data", 5):
            vmp.Normal("x", mean, precision, observed=np.arange(5.0))
    return model


def test_a_file_whose_nodes_have_other_families_is_refused(tmp_path):
    path = tmp_path / "pair.npz"
    _fit(_pair(False), iterations=2, checkpoint=path)
    with pytest.raises(vmp.CheckpointError, match="node 'a' is a Normal in the file, a Gamma in the model"):
        vmp.load(path, _pair(True))
    with pytest.raises(vmp.CheckpointError, match="node 'b' is a Gamma in the file, a Normal in the model"):
        _fit(_pair(True), resume=path, iterations=4)


@pytest.mark.parametrize("fitted,resumed,words", [
    (dict(), dict(method="stochastic", subsample=vmp.Minibatch("data", 10)), ["a batch fit", "stochastic"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 10)), dict(), ["a stochastic fit", "batch"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 10)),
     dict(method="stochastic", subsample=vmp.PerNode(children=3)), ["subsampling 'Minibatch'", "'PerNode'"]),
    (dict(method="stochastic", subsample=vmp.Minibatch("data", 10), policies=[vmp.SVIPlus(effective=5)]),
     dict(method="stochastic", subsample=vmp.Minibatch("data", 10)), ["policies ['SVIPlus']", "[]"]),
], ids=["batch to stochastic", "stochastic to batch", "subsampling", "policies"])
def test_a_file_of_another_kind_of_fit_is_refused(tmp_path, fitted, resumed, words):
    path = tmp_path / "fit.npz"
    _fit(_mixture(), iterations=2, checkpoint=path, **fitted)
    with pytest.raises(vmp.CheckpointError) as info:
        _fit(_mixture(), resume=path, iterations=4, **resumed)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def _damage(kind: str):
    def truncate(path):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    def flip(path):  # one byte inside the compressed data: the archive's CRC no longer matches
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 3] ^= 0xFF
        path.write_bytes(bytes(raw))

    def no_meta(arrays):
        del arrays["__meta__"]

    def bad_json(arrays):
        arrays["__meta__"] = np.array(str(arrays["__meta__"])[:-7])

    def wrong_shape(arrays):
        key = next(k for k in arrays if k.startswith("natural/theta/"))
        arrays[key] = arrays[key][:2]

    def not_positive(arrays):  # a Wishart's precision part that is no precision
        for key in [k for k in arrays if k.startswith(("natural/theta/", "documents/"))]:
            if arrays[key].ndim == 3 and arrays[key].shape[-2:] == (2, 2):
                arrays[key] = -arrays[key]

    return {"empty": lambda p: p.write_bytes(b""), "text": lambda p: p.write_text("a,b\n1,2\n"),
            "truncated": truncate, "flipped byte": flip}.get(kind) or (
        lambda p: _rewrite(p, {"no meta": no_meta, "bad json": bad_json, "wrong shape": wrong_shape,
                               "not positive": not_positive}[kind]))


@pytest.mark.parametrize("kind", ["empty", "text", "truncated", "flipped byte", "no meta", "bad json", "wrong shape",
                                  "not positive"])
def test_a_damaged_file_is_a_checkpoint_error_on_load_and_resume(tmp_path, kind):
    path = tmp_path / "fit.npz"
    _fit(_mixture(), iterations=2, checkpoint=path)
    _damage(kind)(path)
    with pytest.raises(vmp.CheckpointError, match=str(path)):
        vmp.load(path, _mixture())
    with pytest.raises(vmp.CheckpointError, match=str(path)):
        _fit(_mixture(), resume=path, iterations=4)


def test_a_resumed_fit_reports_itself_and_a_resume_with_no_steps_left_says_so(tmp_path):
    path = tmp_path / "fit.npz"
    stopped = _fit(_mixture(), iterations=8, tol=0.0, checkpoint=path, callback=lambda t, fit: t < 3)
    assert stopped.message == "stopped by the callback at iteration 3"
    resumed = _fit(_mixture(), resume=path, iterations=5, tol=0.0)
    assert resumed.iterations == 5 and resumed.message == "reached the iteration limit"
    for iterations in (2, 3):
        with pytest.raises(vmp.OptionError, match=f"has run 3 steps, and iterations={iterations}"):
            _fit(_mixture(), resume=path, iterations=iterations)


def test_a_file_whose_q_lies_outside_its_domain_is_refused(tmp_path):
    """A Gamma with a negative shape reads as NaN moments without a check."""
    path = tmp_path / "pair.npz"
    _fit(_pair(False), iterations=2, checkpoint=path)
    _rewrite(path, lambda arrays: arrays.update({k: -np.abs(v) - 1.0 for k, v in arrays.items()
                                                 if k.startswith("natural/b/")}))
    with pytest.raises(vmp.CheckpointError, match="node 'b': its q lies outside the valid Gamma domain"):
        _fit(_pair(False), resume=path, iterations=4)


_KILLED_WRITER = """
    import os, signal, sys
    from vmp.inference.checkpoint import write_atomic

    def write(fh):
        fh.write(b"half a checkpoint")
        fh.flush()
        if sys.argv[2] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        print("writing", flush=True)
        sys.stdin.read()  # blocked mid-write until the test closes stdin or kills it

    write_atomic(sys.argv[1], write)
"""


def _temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_killed_writers_temporary_file_is_removed_by_the_next_save_or_load(tmp_path):
    """kill -9 during a write leaves a hidden .NAME.PID.*.tmp beside the checkpoint; the next
    load (and the next save) of that checkpoint removes it, and only it: a live writer's
    temporary file, another checkpoint's and a file named otherwise are left."""
    path = tmp_path / "fit.npz"
    model = _mixture()
    result = _fit(model, iterations=2, checkpoint=path)
    live = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), str(path), "wait"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline() == "writing\n"
        killed = subprocess.run([sys.executable, "-c", textwrap.dedent(_KILLED_WRITER), str(path), "kill"], cwd=ROOT)
        assert killed.returncode == -9
        others = [".other.npz.1.abcdefgh.tmp", ".fit.npz.abcdefgh.tmp", "fit.npz.tmp"]
        for name in others:
            (tmp_path / name).write_bytes(b"not ours")
        before = _temporaries(tmp_path)
        (dead,) = [n for n in before if n.startswith(".fit.npz.") and n not in others and f".{live.pid}." not in n]
        assert len(before) == 5
        vmp.load(path, _mixture())
        assert _temporaries(tmp_path) == sorted(set(before) - {dead})
    finally:
        live.kill()
        live.wait()
    result.save(path)  # the writer killed now: its file goes with the next save
    assert _temporaries(tmp_path) == sorted(n for n in others if n.endswith(".tmp"))
