"""vmp.diagnostics: the dashboard, the text summary, the JSON history, the report directory."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from matplotlib.figure import Figure

import models
import vmp
import vmp.render
from vmp.diagnostics import history_dict, plot, summary, write_report
from vmp.inference import FitResult

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(c, 0.4, size=(60, 2)) for c in [(0, 0), (3, 3), (-3, 3)]])
    model = models.gaussian_mixture(x, 3)
    result = model.fit(iterations=200)
    return model, result


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def test_plot_returns_a_figure_and_writes_png(fitted, tmp_path):
    _, result = fitted
    out = tmp_path / "dash" / "dashboard.png"
    fig = plot(result, out)
    assert isinstance(fig, Figure)
    assert out.read_bytes()[:8] == PNG
    axes = visible_axes(fig)
    assert len(axes) == 2
    elbo_ax, inc_ax = axes
    assert elbo_ax.get_xlabel() == "iteration" and elbo_ax.get_ylabel() == "ELBO"
    assert inc_ax.get_yscale() == "log"
    x, y = elbo_ax.lines[0].get_data()
    assert len(x) == len(result.elbo) == result.iterations + 1 and x[0] == 0
    assert "converged" in fig._suptitle.get_text()


def test_result_plot_and_summary_delegate(fitted):
    model, result = fitted
    assert isinstance(result.plot(), Figure)
    assert result.summary(model) == summary(result, model)


def test_plot_is_data_driven(tmp_path):
    elbo = np.array([-100.0, -50.0, -40.0, -41.0, -39.0])
    result = FitResult(elbo, False, 4, "stopped", extra={"accesses": np.arange(5) * 10.0,
                                                         "heldout": np.linspace(0, 1, 5),
                                                         "unrelated": "text"})
    fig = plot(result, tmp_path / "d.svg")
    xlabels = [ax.get_xlabel() for ax in visible_axes(fig)]
    assert xlabels.count("accesses") == 1           # ELBO against accesses
    assert any(ax.get_ylabel() == "heldout" for ax in visible_axes(fig))
    assert len(visible_axes(fig)) == 4
    inc = [ax for ax in visible_axes(fig) if "increment" in ax.get_title()][0]
    assert len(inc.collections) == 2                  # increases and the one decrease
    assert (tmp_path / "d.svg").read_text().lstrip().startswith("<?xml")


@pytest.mark.parametrize("elbo", [np.array([-3.0]), np.array([]), np.array([-5.0, np.nan]),
                                  np.array([-5.0, -5.0, -5.0])])
def test_plot_degenerate_histories(elbo, tmp_path):
    result = FitResult(elbo, False, max(len(elbo) - 1, 0), "odd")
    assert isinstance(plot(result, tmp_path / "x.png"), Figure)
    assert (tmp_path / "x.png").read_bytes()[:8] == PNG


def test_summary_names_nodes_and_convergence(fitted):
    model, result = fitted
    text = summary(result, model)
    assert f"converged after {result.iterations} iterations" in text
    assert result.message in text and "final ELBO" in text and f"{result.final_elbo:.6g}" in text
    for name in ("pi", "mu", "Lambda", "z"):
        assert any(line.split()[:1] == [name] for line in text.splitlines()), name
    assert "Dirichlet" in text and "Wishart" in text and "components=3" in text
    assert "observed: x (Gaussian, data=180)" in text
    assert "most probable category counts" in text      # z is large: a short description
    short = summary(result)
    assert "converged" in short and "pi" not in short


def test_summary_of_an_unconverged_fit_and_an_unfitted_model():
    with vmp.Model("toy") as model:
        vmp.Gamma("tau", 2.0, 1.0)
    result = FitResult(np.array([-2.0, -1.5]), False, 1, "reached the iteration limit",
                       decrease={"node": "tau", "amount": 0.25})
    text = summary(result, model)
    assert "NOT converged after 1 iteration " in text
    assert "tau" in text and "not fitted" in text and "lowered it by 0.25" in text


def test_history_dict_round_trips_through_json(fitted):
    _, result = fitted
    h = history_dict(result)
    assert json.loads(json.dumps(h, allow_nan=False)) == h
    assert h["elbo"] == pytest.approx(list(result.elbo))
    assert h["iterations"] == result.iterations and h["converged"] is True
    assert h["message"] == result.message and h["final_elbo"] == pytest.approx(result.final_elbo)


def test_history_dict_is_strict_json_with_odd_values():
    result = FitResult(np.array([-1.0, np.nan, -np.inf]), np.bool_(False), np.int64(2), "x",
                       decrease={"node": "a", "amount": np.float64(1.5)},
                       extra={"accesses": np.array([0, 5, 10])})
    h = history_dict(result)
    text = json.dumps(h, allow_nan=False)
    assert json.loads(text) == h
    assert h["elbo"] == [-1.0, None, None] and h["accesses"] == [0.0, 5.0, 10.0]
    assert h["decrease"] == {"node": "a", "amount": 1.5}


def test_write_report(fitted, tmp_path):
    model, result = fitted
    paths = write_report(model, result, tmp_path / "report")
    names = [p.name for p in paths]
    diagram = "model.svg" if shutil.which("dot") else "model.dot"
    assert names[:4] == [diagram, "dashboard.png", "history.json", "summary.txt"]
    assert "clusters.png" in names                      # a 2-D mixture also gets its picture
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
    assert json.loads((tmp_path / "report" / "history.json").read_text())["converged"] is True
    assert "Lambda" in (tmp_path / "report" / "summary.txt").read_text()
    assert (tmp_path / "report" / "clusters.png").read_bytes()[:8] == PNG


def test_write_report_without_graphviz(fitted, tmp_path, monkeypatch):
    model, result = fitted
    monkeypatch.setattr(vmp.render.shutil, "which", lambda *a, **k: None)
    with pytest.warns(vmp.render.GraphvizMissingWarning):
        paths = write_report(model, result, tmp_path)
    assert paths[0] == tmp_path / "model.dot" and paths[0].read_text().startswith("digraph")
    assert not (tmp_path / "model.svg").exists()


def test_report_of_a_model_without_a_mixture(tmp_path):
    model = models.lda(np.array([0, 0, 1, 1]), np.array([0, 1, 2, 0]), np.array([2.0, 1, 3, 1]), 2)
    result = model.fit(iterations=20)
    names = [p.name for p in write_report(model, result, tmp_path)]
    assert "clusters.png" not in names and len(names) == 4
