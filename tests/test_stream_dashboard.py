"""The dashboard of a stream's chunk: the bound per element of every chunk and the change of each
global by chunk, read off the Figure against the stream's own records."""
from __future__ import annotations

import warnings

import numpy as np

import vmp


def _axes(fig, title):
    return next(ax for ax in fig.axes if ax.get_title() == title)


def test_the_dashboard_draws_the_chunks():
    with vmp.Model("level") as model:
        mu = vmp.Normal("mu", 0.0, 0.01)
        with vmp.Plate("data", 20):
            vmp.Normal("x", mu, 4.0, observed=np.zeros(20))
    stream = model.stream("data")
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.DriftWarning)
        for level in (0.0, 0.0, 0.0, 0.0, 8.0):  # the last chunk is a change in the data
            result = stream.update({"x": rng.normal(level, 0.5, size=20)})
    assert [r["chunk"] for r in result.extra["stream_chunks"]] == [1, 2, 3, 4, 5]
    fig = result.plot()
    bound = _axes(fig, "bound per element, by chunk")
    np.testing.assert_array_equal(bound.lines[0].get_ydata(), stream.bounds)
    crosses = bound.collections[0].get_offsets()
    np.testing.assert_array_equal(np.asarray(crosses), [[5.0, stream.bounds[-1]]])
    change = _axes(fig, "relative change of each global, by chunk")
    drawn = change.lines[0].get_ydata()
    assert np.isnan(drawn[0])
    np.testing.assert_allclose(drawn[1:], [r["change"]["mu"] for r in result.extra["stream_chunks"][1:]])
    assert change.get_yscale() == "log"


def test_a_fit_that_is_not_a_stream_has_no_chunk_panels():
    with vmp.Model("level") as model:
        mu = vmp.Normal("mu", 0.0, 0.01)
        with vmp.Plate("data", 20):
            vmp.Normal("x", mu, 4.0, observed=np.zeros(20))
    titles = [ax.get_title() for ax in model.fit(progress=False).plot().axes]
    assert not any("by chunk" in t for t in titles)
