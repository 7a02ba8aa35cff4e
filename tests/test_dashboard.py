"""The dashboard as a reader sees it (issue 15): the initial bound in the accesses panel, ELBO
axes that go up when the bound improves and use a log scale only when it shows something, whole
iterations on small fits, no flat rho panel for batch fits, monitor events marked."""
from __future__ import annotations

import numpy as np

from vmp.diagnostics import plot
from vmp.inference import FitResult


def result_of(elbo, *, method="stochastic", rho=None, events=None):
    elbo = np.asarray(elbo, float)
    t = elbo.size - 1
    h = {"iteration": np.arange(1, t + 1), "accesses": 10 * np.arange(1, t + 1),
         "step_seconds": np.full(t, 1e-3),
         "rho": rho if rho is not None else {"a": 1 / np.arange(1, t + 1)},
         "change": {"a": np.linspace(1, 0.01, t)},
         "evaluations": {"iteration": np.arange(t + 1), "accesses": 10 * np.arange(t + 1),
                         "elbo": elbo, "heldout": np.array([])}}
    if events is not None:
        h["events"] = events
    return FitResult(elbo, False, t, "reached the iteration limit", extra={"method": method}, history=h)


def panel(fig, words):
    (ax,) = [ax for ax in fig.axes if ax.get_visible() and words in ax.get_title()]
    return ax


def test_the_accesses_panel_starts_at_the_initial_bound():
    ax = panel(plot(result_of([-6.0, -5.0, -4.0, -3.5])), "accesses")
    x, y = ax.lines[0].get_data()
    assert x[0] == 0 and list(y) == [-6.0, -5.0, -4.0, -3.5]
    assert ax.get_xscale() == "symlog" and "0, then log" in ax.get_xlabel()


def test_both_elbo_panels_rise_with_the_bound_and_share_one_scale():
    fig = plot(result_of([-2000.0, -1990.0, -1985.0, -1984.0]))   # a span of 0.8%
    for words in ("ELBO against iteration", "accesses"):
        ax = panel(fig, words)
        assert ax.get_ylabel() == "ELBO" and ax.get_yscale() == "linear"
        assert not ax.yaxis_inverted()
        y = ax.lines[0].get_ydata()
        assert y[-1] > y[0]     # the better bound is drawn higher, in both panels


def test_a_log_scale_only_when_the_bound_spans_more_than_a_decade():
    fig = plot(result_of([-1e5, -3e4, -1e4, -2e3, -1e3]))
    for words in ("ELBO against iteration", "accesses"):
        ax = panel(fig, words)
        assert ax.get_yscale() == "symlog" and "log" in ax.get_ylabel()


def test_small_fits_get_whole_iterations():
    fig = plot(result_of([-10.0, -5.0, -4.0], method="batch", rho={"a": np.ones(2)}))
    for ax in fig.axes:
        if ax.get_visible() and ax.get_xlabel() == "iteration":
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert ticks == [0, 1, 2], (ax.get_title(), ticks)


def test_batch_fits_have_no_flat_rho_panel_and_stochastic_ones_do():
    batch = plot(result_of([-10.0, -5.0, -4.0], method="batch", rho={"a": np.ones(2)}))
    assert not any("step size rho" in ax.get_title() for ax in batch.axes if ax.get_visible())
    svi = plot(result_of([-10.0, -5.0, -4.0]))
    assert panel(svi, "step size rho").get_yscale() == "log"


def test_monitor_events_are_marked():
    events = [{"iteration": 2, "monitor": "ElboMonitor", "node": None, "action": "backoff",
               "message": "the ELBO fell"},
              {"iteration": 3, "monitor": "NoiseMonitor", "node": "a", "action": "backoff",
               "message": "noisy"},
              {"iteration": 3, "monitor": "NoiseMonitor", "node": "b", "action": "backoff",
               "message": "noisy"}]
    fig = plot(result_of([-10.0, -5.0, -6.0, -4.0, -3.0], events=events))
    for words in ("ELBO against iteration", "step size rho", "relative change", "increment"):
        ax = panel(fig, words)
        marks = [line for line in ax.lines if line.get_label().startswith(("backoff", "_child"))
                 and np.ptp(line.get_xdata()) == 0 and line.get_xdata()[0] in (2, 3)]
        assert len(marks) == 3, words
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "backoff (ElboMonitor)" in labels and "backoff (NoiseMonitor)" in labels
    by_acc = panel(fig, "accesses")            # at the accesses of those iterations
    xs = sorted({line.get_xdata()[0] for line in by_acc.lines if np.ptp(line.get_xdata()) == 0
                 and len(line.get_xdata()) == 2})
    assert xs == [20, 30]
