"""What a user gets from the package: the builders import as ``vmp.models``, and installing
vmp puts no top-level ``models`` package on the path (a user's own models.py keeps winning)."""
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_builders_import_as_vmp_models():
    import vmp.models
    from vmp.models import gaussian_mixture, lda, matrix_factorization

    assert set(vmp.models.MODELS) >= {"gaussian_mixture", "lda", "matrix_factorization"}
    assert vmp.models.MODELS["lda"] is lda
    assert callable(gaussian_mixture) and callable(matrix_factorization)


def test_a_users_own_models_module_is_not_shadowed(tmp_path):
    (tmp_path / "models.py").write_text("WHO = 'the user'\n")
    out = _python("import vmp.models, models; print(models.WHO, sorted(vmp.models.MODELS)[0])",
                  tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["the", "user", "gaussian_mixture"]


def test_the_wheel_installs_vmp_models_and_no_top_level_models(tmp_path):
    source = tmp_path / "src"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o",
                    str(tmp_path / "src.tar"), "HEAD"], check=True)
    source.mkdir()
    subprocess.run(["tar", "-xf", str(tmp_path / "src.tar"), "-C", str(source)], check=True)
    for name in ("pyproject.toml", "setup.py"):  # the working copy's packaging, committed or not
        (source / name).write_bytes((ROOT / name).read_bytes())
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                          str(tmp_path / "dist"), str(source)], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0 and ("No matching distribution" in out.stderr
                                or "Could not find a version" in out.stderr):
        pytest.skip(f"cannot fetch the build backend: {out.stderr.strip().splitlines()[-1]}")
    assert out.returncode == 0, out.stderr
    (wheel,) = (tmp_path / "dist").glob("vmp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"vmp"}
    assert "vmp/models/__init__.py" in names and "vmp/models/gaussian_mixture.py" in names
    (top_level,) = [n for n in names if n.endswith("top_level.txt")] or [None]
    if top_level:
        assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["vmp"]


def test_import_vmp_leaves_the_heavy_libraries_for_later(tmp_path):
    """scipy.stats, matplotlib, networkx, graphviz and pandas load when first used (to_scipy,
    plots, the graph, rendering), not at ``import vmp``: that keeps the import under half a second."""
    heavy = ["scipy.stats", "matplotlib", "networkx", "graphviz", "pandas"]
    out = _python(f"import sys, vmp; print([m for m in {heavy!r} if m in sys.modules])", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


SIDE_EFFECTS = """
import ctypes, sys
calls = []
real = ctypes.CDLL


def recording(name, *args, **kwargs):  # a C library opened through ctypes (glibc's mallopt, malloc)
    calls.append(str(name))
    return real(name, *args, **kwargs)


ctypes.CDLL = recording
finders = list(sys.meta_path)
import numpy as np
import vmp

with vmp.Model("m") as model:
    mu = vmp.Normal("mu", 0.0, 1.0)
    with vmp.Plate("data", 20):
        vmp.Normal("y", mu, 1.0, observed=np.linspace(-1.0, 1.0, 20))
model.fit(iterations=3)
model.fit(subsample=vmp.Minibatch("data", 5), iterations=3)
readers = [getattr(vmp.FitResult, name).__qualname__ for name in ("plot", "summary", "to_dataframe", "to_arviz")]
print(calls, sys.meta_path == finders, [m for m in sys.modules if m.startswith("vmp") and "heap" in m], readers)
"""


def test_importing_vmp_and_fitting_change_nothing_in_the_process(tmp_path):
    """``import vmp`` and a fit install no import hook (sys.meta_path as it was), open no C
    library to tune the allocator and load no module that does (``vmp.inference.heap`` is an
    opt-in), and FitResult's readers are its own methods, not attached by ``import vmp``."""
    out = _python(SIDE_EFFECTS, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("[] True [] ['FitResult.plot', 'FitResult.summary', 'FitResult.to_dataframe', "
                                  "'FitResult.to_arviz']")
