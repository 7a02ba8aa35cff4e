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
    events = [{"iteration": 2, "source": "ElboMonitor", "node": None, "action": "backoff",
               "message": "the ELBO fell"},
              {"iteration": 3, "source": "NoiseMonitor", "node": "a", "action": "backoff",
               "message": "noisy"},
              {"iteration": 3, "source": "NoiseMonitor", "node": "b", "action": "backoff",
               "message": "noisy"}]
    fig = plot(result_of([-10.0, -5.0, -6.0, -4.0, -3.0], events=events))
    for words in ("ELBO against iteration", "step size rho", "relative change", "increment"):
        ax = panel(fig, words)
        marks = [line for line in ax.lines if (line.get_gid() or "").startswith("event:")]
        assert sorted(line.get_xdata()[0] for line in marks) == [2, 3, 3], words
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "backoff ElboMonitor: the bound" in labels and "backoff NoiseMonitor: a" in labels
    by_acc = panel(fig, "accesses")            # at the accesses of those iterations
    xs = sorted({line.get_xdata()[0] for line in by_acc.lines if (line.get_gid() or "").startswith("event:")})
    assert xs == [20, 30]


def _diverged(nodes=40, warnings=95):
    """A fit as the issue saw it: 40 stepped nodes, the bound finite for 30 evaluations, then
    not; an ElboMonitor warning about the same node at every step from 6 on, and the domain
    monitor's stop; a long message."""
    t = 300
    rng = np.random.default_rng(0)
    elbo = np.r_[-5e4 + 4e4 * (1 - np.exp(-np.arange(31) / 8)), np.full(30, np.nan)]
    names = [f"node_{i}" for i in range(nodes)]
    h = {"iteration": np.arange(1, t + 1), "accesses": 100 * np.arange(1, t + 1), "step_seconds": np.full(t, 1e-3),
         "rho": {n: (10 + np.arange(t)) ** -0.6 for n in names},
         "change": {n: np.abs(rng.normal(size=t)) * (1 + i) for i, n in enumerate(names)},
         "evaluations": {"iteration": 5 * np.arange(61), "accesses": 500 * np.arange(61), "elbo": elbo,
                         "stderr": np.zeros(61), "heldout": np.array([])},
         "events": [{"iteration": 6 + 2 * i, "source": "ElboMonitor", "node": "node_3", "action": "warn",
                     "message": "the step of node_3 is too large"} for i in range(warnings)]
         + [{"iteration": t, "source": "DomainMonitor", "node": "node_7", "action": "stop",
             "message": "node 'node_7': the step leaves the Gamma domain at 3 element(s)"}]}
    message = ("stopped by a monitor: node 'node_7': the step leaves the Gamma domain at 3 element(s) "
               "after the bound stopped being finite at iteration 155; " * 3)
    return FitResult(elbo, False, t, message, extra={"method": "stochastic", "update": "per-node"}, history=h,
                     diverged=True)


def _title_fits(fig) -> bool:
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    whole = fig.bbox
    return box.x0 >= whole.x0 and box.x1 <= whole.x1 and box.y1 <= whole.y1


def _readable(fig, elbo) -> None:
    """The title fits; the bound panel spans the finite values; at most one event marker per
    node (and action) in any panel; legends of at most LEGEND_NODES nodes."""
    from vmp.diagnostics.marks import LEGEND_NODES

    assert _title_fits(fig)
    ax = panel(fig, "ELBO against iteration")
    finite = np.asarray(elbo, float)[np.isfinite(elbo)]
    if finite[0] < finite[1:].min() - 3 * np.ptp(finite[1:]):  # the initial bound far below: an edge marker
        finite = finite[1:]
    lo, hi = ax.get_ylim()
    assert lo <= finite.min() and hi >= finite.max() and hi - lo <= 1.5 * max(finite.max() - finite.min(), 2.0)
    for a in fig.axes:
        gids = [x.get_gid() for x in a.lines + a.patches if (x.get_gid() or "").startswith("event:")]
        assert len(gids) == len(set(gids)), (a.get_title(), gids)
        if a.get_legend() is not None:
            assert len(a.get_legend().get_texts()) <= LEGEND_NODES + 3, a.get_title()


def test_a_diverged_fit_has_a_readable_dashboard(tmp_path):
    result = _diverged()
    fig = plot(result, tmp_path / "diverged.png")
    _readable(fig, result.history["evaluations"]["elbo"])
    ax = panel(fig, "ELBO against iteration")
    assert [x for x in ax.lines if x.get_gid() == "not-finite"][0].get_xdata()[0] == 155
    bands = [x for x in ax.patches if x.get_gid() == "event:node_3:warn"]
    assert len(bands) == 1 and "\u00d795" in bands[0].get_label()
    change = panel(fig, "relative change")
    assert "+32 more nodes in grey" == change.get_legend().get_title().get_text()


def test_an_interrupted_fit_has_a_readable_dashboard(tmp_path):
    """A real fit interrupted by SIGINT (as Ctrl-C) after 30 steps."""
    import os
    import signal

    import vmp
    from vmp.models import gaussian_mixture

    rng = np.random.default_rng(0)
    model = gaussian_mixture(np.r_[rng.normal(0, 1, (300, 2)), rng.normal(5, 1, (300, 2))], 3)

    def ctrl_c(t, fit):
        if t == 30:
            os.kill(os.getpid(), signal.SIGINT)

    result = model.fit(method="stochastic", subsample=vmp.Minibatch("data", 50), iterations=100, seed=0,
                       progress=False, callback=ctrl_c)
    assert result.interrupted and result.iterations == 30
    fig = plot(result, tmp_path / "interrupted.png")
    _readable(fig, result.history["evaluations"]["elbo"])
    assert fig._suptitle.get_text().startswith("INTERRUPTED")
