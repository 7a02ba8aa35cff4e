"""vmp.diagnostics: the dashboard, the text summary, the history as JSON and DataFrame, the
report directory, the comparison of fits."""
from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure

import models
import vmp
import vmp.render
from vmp.diagnostics import report as report_module
from vmp.diagnostics import (comparison_rows, comparison_table, components_used, from_dict,
                             history_dict, plot, plot_comparison, summary, to_dataframe,
                             write_comparison, write_report)
from vmp.inference import FitResult
from tests.helpers import factorized_mixture

PNG = b"\x89PNG\r\n\x1a\n"
RED = (0.752941, 0.223529, 0.168627)


def _data(seed=1):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(c, 0.4, size=(60, 2)) for c in [(0, 0), (3, 3), (-3, 3)]])


@pytest.fixture(scope="module")
def fitted():
    model = factorized_mixture(_data(), 3)
    result = model.fit(iterations=200, progress=False)
    return model, result


@pytest.fixture(scope="module")
def svi():
    model = factorized_mixture(_data(), 3)
    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 30, holdout=0.1, evaluation_size=100),
                       step=vmp.RobbinsMonro(tau=1, kappa=0.7), iterations=60, evaluate_every=10,
                       progress=False)
    return model, result


def _independent_heldout(result, data) -> float:
    """For each held-out point with its z optimized, log sum_k exp(E[log pi_k] + E[log N(x | mu_k,
    Lambda_k)]), averaged; from the posteriors' parameters (digamma for E[log pi] and
    E[log|Lambda|], E[Lambda] = nu W, E[(x - mu)(x - mu)^T] = (x - m)(x - m)^T + Sigma_mu)."""
    from scipy.special import digamma, logsumexp

    from vmp import families as fam

    state = result.state
    x = data[np.asarray(state.loop.plan["heldout_evaluation"])]
    d = x.shape[1]
    pi = fam.Dirichlet.parameters(state.natural["pi"])["alpha"]
    mu = fam.Gaussian.parameters(state.natural["mu"])
    lam = fam.Wishart.parameters(state.natural["Lambda"])
    e_log_pi = digamma(pi) - digamma(pi.sum())
    nu, w = lam["dof"], lam["scale"]
    e_logdet = sum(digamma((nu + 1 - i) / 2) for i in range(1, d + 1)) + d * np.log(2) + np.linalg.slogdet(w)[1]
    diff = x[:, None, :] - mu["mean"][None]
    e_lam = nu[:, None, None] * w
    quad = np.einsum("nki,kij,nkj->nk", diff, e_lam, diff) + np.einsum("kij,kji->k", e_lam, mu["covariance"])
    e_log_n = 0.5 * e_logdet - d / 2 * np.log(2 * np.pi) - 0.5 * quad
    return float(np.mean(logsumexp(e_log_pi + e_log_n, axis=1)))


def test_heldout_bound_matches_an_independent_computation(svi):
    _, result = svi
    heldout = result.history["evaluations"]["heldout"]
    assert heldout.size == 7 and len(result.state.loop.plan["heldout_evaluation"]) == 18
    assert heldout[-1] == pytest.approx(_independent_heldout(result, _data()), rel=1e-6)
    # overlapping clusters: the held-out points' q(z) are spread, so their entropies count
    x = np.random.default_rng(3).normal(size=(150, 2)) + np.repeat([[0.0, 0.0], [1.5, 0.0]], 75, axis=0)
    spread = factorized_mixture(x, 2).fit(method="stochastic", subsample=vmp.Minibatch("data", 30, holdout=0.2),
                                               iterations=10, evaluate_every=10, progress=False)
    assert spread.history["evaluations"]["heldout"][-1] == pytest.approx(_independent_heldout(spread, x), rel=1e-6)


def visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def panel(fig, words):
    found = [ax for ax in visible_axes(fig) if words in ax.get_title()]
    assert len(found) == 1, (words, [ax.get_title() for ax in visible_axes(fig)])
    return found[0]


def synthetic(elbo, *, method="stochastic", diverged=False, message="reached the iteration limit",
              **history):
    """A FitResult with the standard history layout, evaluations at every iteration."""
    elbo = np.asarray(elbo, float)
    t = elbo.size - 1
    h = {"iteration": np.arange(1, t + 1), "accesses": 10 * np.arange(1, t + 1),
         "step_seconds": np.full(t, 1e-3),
         "rho": {"a": 1 / np.arange(1, t + 1), "b": np.full(t, 0.5)},
         "change": {"a": np.linspace(1, 0.01, t), "b": np.zeros(t)},
         "evaluations": {"iteration": np.arange(t + 1), "accesses": 10 * np.arange(t + 1),
                         "elbo": elbo, "heldout": np.array([])}}
    h.update(history)
    return FitResult(elbo, False, t, message, extra={"method": method}, history=h, diverged=diverged)


# ----- the dashboard --------------------------------------------------------------------------
def test_batch_dashboard_panels(fitted, tmp_path):
    _, result = fitted
    out = tmp_path / "dash" / "dashboard.png"
    fig = plot(result, out)
    assert isinstance(fig, Figure) and out.read_bytes()[:8] == PNG
    by_it = panel(fig, "ELBO against iteration")
    x, y = by_it.lines[0].get_data()
    assert len(x) == len(result.elbo) == result.iterations + 1 and x[0] == 0
    assert np.allclose(y[1:], result.elbo[1:])
    # the initial bound, far below, is a marker on the bottom edge with its value
    assert np.isnan(y[0]) and f"{result.elbo[0]:.4g} (below)" in " ".join(t.get_text() for t in by_it.texts)
    by_acc = panel(fig, "accesses")
    assert by_acc.get_xscale() == "symlog" and by_acc.get_yscale() == "linear"
    assert by_acc.get_ylabel() == "ELBO"   # the bounds span well under 0.5%: no log scale
    x, y = by_acc.lines[0].get_data()
    assert np.allclose(y[1:], result.elbo[1:]) and np.allclose(x, result.history["evaluations"]["accesses"])
    assert x[0] == 0 and "0 accesses" in " ".join(t.get_text() for t in by_acc.texts)
    assert not any("step size rho" in ax.get_title() for ax in visible_axes(fig))  # all ones
    change = panel(fig, "relative change")
    assert change.get_yscale() == "log"
    assert {line.get_label() for line in change.lines} == set(result.history["change"])
    assert panel(fig, "increment").get_yscale() == "log"
    panel(fig, "time per step")
    assert "converged" in fig._suptitle.get_text()
    assert not any("temperature" in ax.get_title() for ax in fig.axes)


def test_stochastic_dashboard_has_the_accesses_panel(svi):
    _, result = svi
    fig = result.plot()
    h = result.history
    by_acc = panel(fig, "ELBO against observed-node accesses")
    assert by_acc.get_xscale() == "symlog"
    x, y = by_acc.lines[0].get_data()
    ev = h["evaluations"]
    assert np.allclose(x, ev["accesses"]) and np.allclose(y[1:], ev["elbo"][1:])
    by_it = panel(fig, "ELBO against iteration")
    smooth, evals = by_it.lines[0], by_it.lines[1]
    assert smooth.get_label().startswith("minibatch bound") and smooth.get_xdata().size == 60
    assert list(evals.get_xdata()) == list(ev["iteration"]) == [0, 10, 20, 30, 40, 50, 60]
    assert "estimate" in by_it.get_ylabel() and "estimated" in by_it.get_title()
    assert "standard error" in result.summary()
    rho = panel(fig, "step size rho")
    lines = {line.get_label(): line for line in rho.lines}
    assert set(lines) == set(h["rho"]) == {"pi", "mu", "Lambda"}      # the global nodes
    assert np.allclose(lines["mu"].get_ydata(), h["rho"]["mu"]) and rho.get_yscale() == "log"
    assert panel(fig, "held-out").lines[0].get_ydata().size == ev["heldout"].size == 7
    title = fig._suptitle.get_text()
    assert "stochastic VMP" in title and "60 iterations" in title


def test_elbo_axis_is_linear_when_a_bound_is_positive():
    fig = plot(synthetic([-5.0, 2.0, 3.0, 3.5]))
    by_acc = panel(fig, "accesses")
    assert by_acc.get_ylabel() == "ELBO" and by_acc.get_yscale() == "linear"
    assert by_acc.get_xscale() == "symlog"


def test_diverged_result_is_marked_in_red(tmp_path):
    result = synthetic([-100.0, -50.0, np.nan], diverged=True,
                       message="diverged: the precision of 'tau' is not positive")
    fig = plot(result, tmp_path / "d.png")
    title = fig._suptitle
    assert "DIVERGED" in title.get_text() and "precision of 'tau'" in title.get_text()
    assert np.allclose(title.get_color()[:3] if not isinstance(title.get_color(), str)
                       else __import__("matplotlib").colors.to_rgb(title.get_color()), RED, atol=1e-3)
    by_it = panel(fig, "ELBO against iteration")
    assert any(line.get_linestyle() == "--" for line in by_it.lines)   # the divergence line
    text = summary(result)
    assert "DIVERGED" in text and "diverged: yes" in text


def test_policy_panels_only_when_recorded():
    plain = synthetic([-10.0, -5.0, -4.0])
    assert not any(w in ax.get_title() for ax in plot(plain).axes for w in ("temperature", "effective"))
    result = synthetic([-10.0, -5.0, -4.0], temperature=np.array([4.0, 2.0]),
                       effective_batch={"a": np.array([10.0, 20.0]), "b": np.array([5.0, 5.0])})
    fig = plot(result)
    temp = panel(fig, "temperature")
    assert list(temp.lines[0].get_ydata()) == [4.0, 2.0]
    eff = panel(fig, "effective batch")
    assert {line.get_label() for line in eff.lines} == {"a", "b"}


def test_plot_degenerate_results_without_history(tmp_path):
    cases = [np.array([-3.0]), np.array([]), np.array([-5.0, np.nan]), np.array([-5.0, -5.0, -5.0])]
    for i, elbo in enumerate(cases):
        result = FitResult(elbo, False, max(len(elbo) - 1, 0), "odd")
        fig = plot(result, tmp_path / f"x{i}.png" if i in (1, 2) else None)   # drawing is slow
        assert isinstance(fig, Figure) and len(visible_axes(fig)) == 5   # no rho: batch-like
    for i in (1, 2):
        assert (tmp_path / f"x{i}.png").read_bytes()[:8] == PNG


def test_result_plot_and_summary_delegate(fitted):
    model, result = fitted
    assert isinstance(result.plot(), Figure)
    assert result.summary(model) == summary(result, model)


# ----- the summary ----------------------------------------------------------------------------
def test_summary_names_nodes_and_convergence(fitted):
    model, result = fitted
    text = summary(result, model)
    assert f"converged after {result.iterations} iterations" in text
    assert result.message in text and "final ELBO" in text and f"{result.final_elbo:.6g}" in text
    assert "method: batch; diverged: no" in text and "last step size" not in text
    for name in ("pi", "mu", "Lambda", "z"):
        assert any(line.split()[:1] == [name] for line in text.splitlines()), name
    assert "Dirichlet" in text and "Wishart" in text and "components=3" in text
    assert "observed: x (Gaussian, data=180)" in text
    assert "most probable category counts" in text      # z is large: a short description
    short = summary(result)
    assert "converged" in short and "pi" not in short


def test_summary_of_a_stochastic_fit(svi):
    model, result = svi
    text = summary(result, model)
    assert "method: stochastic, update per-node; diverged: no" in text
    assert "stopped at the iteration limit" in text and "ran 60 iterations" in text
    line = next(l for l in text.splitlines() if l.startswith("last step size rho:"))
    for node, rho in result.history["rho"].items():
        assert f"{node} {rho[-1]:.4g}" in line
    assert f"observed-node accesses: {result.history['accesses'][-1]:.6g}" in text


def test_summary_of_an_unconverged_fit_and_an_unfitted_model():
    with vmp.Model("toy") as model:
        vmp.Gamma("tau", 2.0, 1.0)
    result = FitResult(np.array([-2.0, -1.5]), False, 1, "reached the iteration limit",
                       decrease={"node": "tau", "amount": 0.25})
    text = summary(result, model)
    assert "NOT converged after 1 iteration " in text
    assert "tau" in text and "not fitted" in text and "lowered it by 0.25" in text


# ----- history export -------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["fitted", "svi"])
def test_history_json_round_trips(which, request):
    _, result = request.getfixturevalue(which)
    h = history_dict(result)
    text = json.dumps(h, allow_nan=False)
    assert json.loads(text) == h
    assert h["method"] == result.extra["method"] and h["diverged"] is False
    assert h["converged"] is bool(result.converged) and h["iterations"] == result.iterations
    assert h["elbo"] == pytest.approx(list(result.elbo))
    hist = h["history"]
    assert set(hist) >= {"iteration", "accesses", "step_seconds", "rho", "change", "evaluations"}
    for key in ("rho", "change"):
        assert set(hist[key]) == set(result.history[key])
        for node, values in hist[key].items():
            assert values == pytest.approx(list(result.history[key][node]))
    assert hist["evaluations"]["elbo"] == pytest.approx(list(result.elbo))
    assert hist["iteration"] == list(result.history["iteration"])
    # back into a FitResult: the same dict, the same dashboard
    back = from_dict(json.loads(text))
    assert history_dict(back) == h
    assert back.extra["method"] == result.extra["method"]
    again, first = panel(plot(back), "accesses"), panel(plot(result), "accesses")
    assert np.allclose(again.lines[0].get_xydata(), first.lines[0].get_xydata(), equal_nan=True)


def test_history_dict_is_strict_json_with_odd_values():
    result = synthetic([-1.0, np.nan, -np.inf], diverged=np.bool_(True))
    result.history["rho"]["a"] = np.array([np.inf, 0.5])
    result.decrease = {"node": "a", "amount": np.float64(1.5)}
    result.iterations = np.int64(2)
    h = history_dict(result)
    assert json.loads(json.dumps(h, allow_nan=False)) == h
    assert h["elbo"] == [-1.0, None, None] and h["history"]["evaluations"]["elbo"] == [-1.0, None, None]
    assert h["history"]["rho"]["a"] == [None, 0.5] and h["history"]["accesses"] == [10, 20]
    assert h["decrease"] == {"node": "a", "amount": 1.5} and h["diverged"] is True
    back = from_dict(h)
    assert np.isnan(back.history["rho"]["a"][0]) and back.diverged


def test_to_dataframe():
    pd = pytest.importorskip("pandas")
    result = synthetic([-10.0, -6.0, -5.0, -4.5], temperature=np.array([3.0, 2.0, 1.0]))
    result.history["evaluations"] = {"iteration": np.array([0, 2, 3]), "accesses": np.array([0, 20, 30]),
                                     "elbo": np.array([-10.0, -5.0, -4.5]), "heldout": np.array([])}
    df = to_dataframe(result)
    assert isinstance(df, pd.DataFrame)
    assert list(df["iteration"]) == [0, 1, 2, 3]               # row 0: the initial bound
    assert list(df["accesses"]) == [0, 10, 20, 30]
    assert {"rho_a", "rho_b", "change_a", "change_b", "step_seconds", "temperature", "elbo"} <= set(df)
    assert "heldout" not in df
    assert np.isnan(df["elbo"][1]) and df["elbo"][3] == -4.5 and np.isnan(df["rho_a"][0])
    assert df["rho_b"][2] == 0.5


def test_to_dataframe_of_a_stochastic_fit(svi):
    pytest.importorskip("pandas")
    _, result = svi
    df = to_dataframe(result)
    assert len(df) == result.iterations + 1 and df["elbo"].notna().sum() == 7
    assert df["heldout"].notna().sum() == 7 and "rho_mu" in df


def test_to_dataframe_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)       # import pandas now raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        to_dataframe(synthetic([-2.0, -1.0]))


# ----- reports and comparisons ----------------------------------------------------------------
def test_write_report(fitted, tmp_path):
    model, result = fitted
    paths = write_report(model, result, tmp_path / "report")
    names = [p.name for p in paths]
    diagram = "model.svg" if shutil.which("dot") else "model.dot"
    assert names[:4] == [diagram, "dashboard.png", "history.json", "summary.txt"]
    assert "clusters.png" in names                      # a 2-D mixture also gets its picture
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
    saved = json.loads((tmp_path / "report" / "history.json").read_text())
    assert saved["converged"] is True and saved["method"] == "batch"
    assert "Lambda" in (tmp_path / "report" / "summary.txt").read_text()
    assert (tmp_path / "report" / "clusters.png").read_bytes()[:8] == PNG


def test_write_report_without_graphviz(fitted, tmp_path, monkeypatch):
    model, result = fitted
    monkeypatch.setattr(vmp.render.shutil, "which", lambda *a, **k: None)
    monkeypatch.setattr(report_module, "plot", lambda result, filename: filename.write_bytes(PNG))
    monkeypatch.setattr(report_module, "plot_mixture", lambda model, filename: None)
    with pytest.warns(vmp.render.GraphvizMissingWarning):
        paths = write_report(model, result, tmp_path)
    assert paths[0] == tmp_path / "model.dot" and paths[0].read_text().startswith("digraph")
    assert not (tmp_path / "model.svg").exists()


def test_report_of_a_model_without_a_mixture(tmp_path):
    model = models.lda(np.array([0, 0, 1, 1]), np.array([0, 1, 2, 0]), np.array([2.0, 1, 3, 1]), 2)
    result = model.fit(iterations=20)
    names = [p.name for p in write_report(model, result, tmp_path)]
    assert "clusters.png" not in names and names[4:] == ["summary.csv", "posterior.nc"] and len(names) == 6
    assert components_used(model) is None


def test_comparison(fitted, svi, tmp_path):
    fits = {"batch": fitted, "svi": svi}
    assert components_used(fitted[0]) == 3
    rows = comparison_rows(fits)
    assert [r["label"] for r in rows] == ["batch", "svi"]
    assert rows[0]["final_elbo"] == fitted[1].final_elbo and rows[1]["state"] == "ran"
    assert rows[1]["accesses"] == svi[1].history["evaluations"]["accesses"][-1]
    table = comparison_table(rows)
    lines = table.splitlines()
    assert lines[0].startswith("| fit | method") and "clusters used" in lines[0] and len(lines) == 4
    assert f"{svi[1].final_elbo:.6g}" in lines[3] and "stochastic, per-node update" in lines[3]
    (tmp_path / "svi").mkdir()
    paths = write_comparison(fits, tmp_path)
    assert [p.name for p in paths] == ["comparison.md", "comparison.png"]
    md = paths[0].read_text()
    assert table in md and "(svi/summary.txt)" in md and "(batch/" not in md
    assert paths[1].read_bytes()[:8] == PNG
    fig = plot_comparison({k: r for k, (_, r) in fits.items()})
    by_access = [ax for ax in fig.axes if "accesses" in ax.get_title()][0]
    assert by_access.get_xscale() == "log" and len(by_access.lines) == 2
    assert by_access.get_ylabel() == "ELBO" and by_access.get_yscale() == "linear"
    x, y = by_access.lines[1].get_data()
    assert np.allclose(y, svi[1].elbo[1:])
    by_time = [ax for ax in fig.axes if "step time" in ax.get_title()][0]
    for line, (_, (_, result)) in zip(by_time.lines, fits.items()):   # the legend gives the axis' end
        steps = float(np.sum(result.history["step_seconds"]))
        assert line.get_label().startswith(f"{line.get_label().split(':')[0]}: {steps:.3g} s of steps")
        assert line.get_xdata()[-1] == pytest.approx(steps)


def test_summary_says_plainly_when_a_fit_ends_worse_than_it_started():
    assert "WORSE THAN IT STARTED" in summary(synthetic([-100.0, -50.0, -400.0]))
    assert "WORSE THAN IT STARTED" not in summary(synthetic([-100.0, -50.0, -40.0]))


def _same_history(a, b) -> None:
    assert set(a) == set(b)
    for key in a:
        if key == "events":
            assert a[key] == b[key]
        elif isinstance(a[key], dict):
            assert set(a[key]) == set(b[key])
            for k in a[key]:
                np.testing.assert_array_equal(np.asarray(a[key][k], float), np.asarray(b[key][k], float))
        else:
            np.testing.assert_array_equal(np.asarray(a[key], float), np.asarray(b[key], float))


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(["none", "svi+", "annealing"]), monitor=st.sampled_from(["none", "noise", "elbo"]),
       update=st.sampled_from(["per-node", "global"]), seed=st.integers(0, 50))
def test_json_round_trip_of_every_history(policy, monitor, update, seed):
    """from_dict(json(to_dict(result))) gives back the history, events included, for fits with
    policies and monitors that fire."""
    import json
    import warnings

    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(c, 1.0, size=(40, 2)) for c in [(0, 0), (5, 0), (0, 5)]])

    policies = {"none": [], "svi+": [vmp.SVIPlus(effective=2, redraws=1)], "annealing": [vmp.Annealing.linear(3, 4)]}
    monitors = {"none": None, "noise": [vmp.NoiseMonitor(window=2, threshold=1e-6, action="warn")],
                "elbo": [vmp.ElboMonitor(every=1, patience=1, tolerance=0.0, action="backoff")]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.DivergenceWarning)
        result = factorized_mixture(x, 3).fit(method="stochastic", subsample=vmp.Minibatch("data", 12), update=update,
                                            policies=policies[policy], monitors=monitors[monitor], iterations=6,
                                            evaluate_every=2, seed=seed, progress=False)
    back = from_dict(json.loads(json.dumps(result.to_dict())))
    _same_history(result.history, back.history)
    assert back.diverged == result.diverged and back.message == result.message
    if monitor == "noise":
        assert result.history["events"], "the monitor fired: the round trip carries events"


def test_summary_of_a_stochastic_fit_that_did_not_meet_its_tol(tmp_path):
    model = factorized_mixture(_data(), 3)
    result = model.fit(subsample=vmp.Minibatch("data", 30), iterations=20, evaluate_every=10, tol=1e-12,
                       progress=False)
    result.save(tmp_path / "fit.npz")
    for r in (result, vmp.load(tmp_path / "fit.npz", model)):
        text = summary(r, model)
        assert "stopped at the iteration limit before tol=1e-12 was met" in text and "tol= ends" not in text


@pytest.mark.parametrize("tol", [None, 1e-12])
def test_summary_of_a_stochastic_fit_the_callback_stopped_names_no_iteration_limit(tol):
    """A callback (or a monitor, or an interrupt) ends the fit before its iterations: the summary
    gives that reason alone (it added 'stopped at the iteration limit', 5 of 40 iterations run)."""
    model = factorized_mixture(_data(), 3)
    result = model.fit(subsample=vmp.Minibatch("data", 30), iterations=40, evaluate_every=5, tol=tol,
                       progress=False, callback=lambda t, fit: t < 5)
    text = summary(result, model)
    assert "ran 5 iterations" in text and "stopped by the callback at iteration 5" in text
    assert "iteration limit" not in text
