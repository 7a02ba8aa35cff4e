"""Rendering never hangs: large diagrams get the fast layout and say so; every Graphviz layout
runs under a time limit, past which the DOT source is written with a warning (issue 15: an HMM
unrolled by hand over 80 steps did not return in minutes)."""
from __future__ import annotations

import os
import stat
import warnings

import numpy as np
import pytest

import vmp
import vmp.render
from vmp.render import LARGE, LayoutTimeoutWarning, diagram


def unrolled_hmm(steps: int, states: int = 3):
    """An HMM declared one node per time step (no plate over time): 5 graph nodes a step."""
    x = np.random.default_rng(0).normal(size=(steps, 2))
    with vmp.Model(f"hmm{steps}") as model:
        start = vmp.Dirichlet("start", alpha=np.ones(states))
        with vmp.Plate("states", states):
            A = vmp.Dirichlet("A", alpha=np.ones(states))
            mu = vmp.Gaussian("mu", mean=np.zeros(2), precision=0.01 * np.eye(2))
            lam = vmp.Wishart("Lambda", dof=3, scale=np.eye(2))
        z = vmp.Categorical("z0", start)
        for t in range(steps):
            if t:
                z = vmp.Categorical(f"z{t}", A[z])
            vmp.Gaussian(f"x{t}", mean=mu[z], precision=lam[z], observed=x[t])
    return model


def test_a_large_diagram_gets_the_fast_layout_and_says_so():
    model = unrolled_hmm(80)
    assert model.graph.number_of_nodes() > LARGE
    source = diagram(model).source
    assert "splines=false" in source and "nslimit=1" in source and 'size="30,30"' in source
    assert f"{model.graph.number_of_nodes()} nodes: fast layout, straight edges" in source
    small = diagram(unrolled_hmm(3)).source
    assert "splines" not in small and "fast layout" not in small


@pytest.fixture
def slow_dot(tmp_path, monkeypatch):
    """A 'dot' on PATH that never finishes its layout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text("#!/bin/sh\nexec sleep 600\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")


def test_a_layout_past_the_time_limit_writes_the_dot_source_and_warns(slow_dot, tmp_path):
    model = unrolled_hmm(4)
    with pytest.warns(LayoutTimeoutWarning) as caught:
        model.render(tmp_path / "hmm.svg", timeout=0.5)
    assert not (tmp_path / "hmm.svg").exists()
    assert (tmp_path / "hmm.dot").read_text().startswith("digraph hmm4")
    message = str(caught[0].message)
    assert "did not finish the layout" in message and "nodes" in message and "hmm.dot" in message
    assert "timeout=None" in message


def test_jupyter_display_past_the_time_limit_shows_the_source(slow_dot, monkeypatch):
    monkeypatch.setattr(vmp.render, "LAYOUT_SECONDS", 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bundle = unrolled_hmm(2)._repr_mimebundle_()
    assert list(bundle) == ["text/plain"]
    assert "did not finish the layout" in bundle["text/plain"] and "digraph hmm2" in bundle["text/plain"]
