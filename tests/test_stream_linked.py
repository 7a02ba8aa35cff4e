"""Streams of two linked plates (documents and their tokens): streaming VB against the batch
posterior of conjugate globals read through a gather, and LDA's streamed topics against the
truth and the batch fit; the chunks' document index and bad input."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import vmp
from vmp.errors import DataError, GraphError, OptionError, ShapeError
from vmp.models import lda


def _levels(level, doc, x, word):
    """Globals only: mu (read by each document's observed level), tau (read by the tokens through
    the gather level[document]) and pi (over the tokens' words)."""
    with vmp.Model("levels") as m:
        mu = vmp.Normal("mu", 0.0, 0.01)
        tau = vmp.Gamma("tau", 1.0, 1.0)
        pi = vmp.Dirichlet("pi", np.ones(5))
        with vmp.Plate("documents", level.size):
            lv = vmp.Normal("level", mu, 1.0, observed=level)
        with vmp.Plate("tokens", doc.size):
            vmp.Normal("x", lv[vmp.Data("document", doc)], tau, observed=x)
            vmp.Categorical("w", pi, observed=word)
    return m


def _corpus(rng, documents=40, tokens=400):
    level = rng.normal(1.0, 1.0, documents)
    doc = np.sort(rng.integers(0, documents, tokens))
    return level, doc, level[doc] + rng.normal(0.0, 0.5, tokens), rng.integers(0, 5, tokens)


def test_globals_read_through_two_plates_stream_to_the_batch_posterior():
    level, doc, x, word = _corpus(np.random.default_rng(3))
    batch = _levels(level, doc, x, word)
    result = batch.fit(progress=False)
    first = doc < 4
    stream = _levels(level[:4], doc[first], x[first], word[first]).stream("documents")
    for b in range(10):
        on = (doc >= 4 * b) & (doc < 4 * b + 4)
        chunk = stream.update({"level": level[4 * b:4 * b + 4], "document": doc[on] - 4 * b, "x": x[on], "w": word[on]})
        assert chunk.extra["stream"]["rows"] == 4
    for name in ("mu", "tau", "pi"):
        for streamed, whole in zip(stream.posterior[name], result.state.natural[name]):
            np.testing.assert_allclose(streamed, whole, rtol=0, atol=1e-10)
    assert sum(stream.bounds) * 4 == pytest.approx(result.final_elbo, abs=1e-9)  # log p(x_b | x_<b) add up


def _lda_corpus(rng, k=3, v=30, documents=300, length=60):
    beta = rng.dirichlet(np.full(v, 0.1), size=k)
    theta = rng.dirichlet(np.full(k, 0.3), size=documents)
    counts = np.stack([rng.multinomial(length, p) for p in theta @ beta])
    d, w = np.nonzero(counts)
    return beta, d, w, counts[d, w].astype(float)


def _topic_error(estimate, truth):
    cost = np.abs(estimate[:, None, :] - truth[None]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols].mean()


def test_streamed_lda_recovers_the_topics_as_the_batch_fit_does():
    truth, d, w, c = _lda_corpus(np.random.default_rng(0))
    batch = lda(d, w, c, 3, n_words=30)
    batch.fit(seed=1, progress=False, iterations=300)
    first = d < 30
    model = lda(d[first], w[first], c[first], 3, n_words=30)
    stream = model.stream("documents", seed=1)
    for b in range(10):  # whole documents under their corpus ids, renumbered per chunk
        on = (d >= 30 * b) & (d < 30 * (b + 1))
        chunk = stream.update({"w": w[on], "document": d[on], "counts": c[on]})
        assert chunk.extra["stream"]["rows"] == 30
        assert model["theta"].mean.shape == (30, 3) and model["z"].mean.shape == (on.sum(), 3)
    apart = np.abs(truth[:, None] - truth[None]).sum(-1)[np.triu_indices(3, 1)].mean()  # two true topics
    streamed, whole = _topic_error(model["beta"].mean, truth), _topic_error(batch["beta"].mean, truth)
    assert whole < 0.05 * apart and streamed < 0.1 * apart and streamed < 3 * whole


def test_held_out_documents_are_scored_with_the_streams_topics():
    truth, d, w, c = _lda_corpus(np.random.default_rng(1), documents=60)
    model = lda(d, w, c, 3, n_words=30)
    stream = model.stream("documents", seed=0)
    stream.update({"w": w[d < 50], "document": d[d < 50], "counts": c[d < 50]})
    late = d >= 50
    held = stream.bound({"w": w[late], "document": d[late] + 7, "counts": c[late]})
    assert np.isfinite(held) and model["theta"].mean.shape == (10, 3)
    assert held < 0


def test_a_fixed_gather_index_is_refused():
    with vmp.Model("fixed") as m:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("documents", 2):
            lv = vmp.Normal("level", mu, 1.0, observed=np.zeros(2))
        with vmp.Plate("tokens", 3):
            vmp.Normal("x", lv[np.array([0, 0, 1])], 1.0, observed=np.zeros(3))
    with pytest.raises(GraphError, match="vmp.Data"):
        m.stream("documents")


def test_bad_chunks_of_documents_name_what_is_wrong():
    _, d, w, c = _lda_corpus(np.random.default_rng(2), documents=6)
    stream = lda(d, w, c, 3, n_words=30).stream("documents")
    with pytest.raises(DataError, match="'document'"):
        stream.update({"w": w, "counts": c})
    with pytest.raises(DataError, match="'counts'"):
        stream.update({"w": w, "document": d})
    with pytest.raises(ShapeError, match="'document'"):
        stream.update({"w": w, "document": d.astype(float), "counts": c})
    with pytest.raises(ShapeError, match="'z'|counts|weights"):
        stream.update({"w": w, "document": d, "counts": c[:-1]})
    level, doc, x, word = _corpus(np.random.default_rng(3), documents=4, tokens=20)
    own = _levels(level, doc, x, word).stream("documents")
    with pytest.raises(DataError, match="index its 4 rows"):
        own.update({"level": level, "document": doc + 1, "x": x, "w": word})
    assert stream.chunks == 0 and own.chunks == 0


def test_arrays_are_read_as_chunks_of_whole_documents(tmp_path):
    _, d, w, c = _lda_corpus(np.random.default_rng(4), documents=50)
    tokens = {"w": w, "document": d + 100, "counts": c}
    read = lda(d, w, c, 3, n_words=30).stream("documents", seed=2)
    results = read.run(tokens, 20)
    assert [r.extra["stream"]["rows"] for r in results] == [20, 20, 10]
    by_hand = lda(d, w, c, 3, n_words=30).stream("documents", seed=2)
    for lo in (0, 20, 40):
        on = (d >= lo) & (d < lo + 20)
        by_hand.update({"w": w[on], "document": d[on], "counts": c[on]})
    assert all(np.array_equal(a, b) for a, b in zip(read.posterior["beta"], by_hand.posterior["beta"]))
    level, doc, x, word = _corpus(np.random.default_rng(3))  # documents with rows of their own
    own = _levels(level, doc, x, word).stream("documents")
    assert [r.extra["stream"]["rows"] for r in own.run({"level": level, "document": doc, "x": x, "w": word}, 16)] \
        == [16, 16, 8]
    np.savetxt(tmp_path / "tokens.csv", np.column_stack([d, w, c]), delimiter=",")
    with pytest.raises(OptionError, match="split"):
        read.run(tmp_path / "tokens.csv", 20)


def test_a_stream_of_documents_runs_on_worker_processes():
    _, d, w, c = _lda_corpus(np.random.default_rng(0), documents=40)
    tokens = {"w": w, "document": d, "counts": c}
    serial = lda(d, w, c, 3, n_words=30).stream("documents", seed=1)
    serial.run(tokens, 20)
    parallel = lda(d, w, c, 3, n_words=30).stream("documents", seed=1, executor=vmp.Processes(2))
    parallel.run(tokens, 20)
    for a, b in zip(serial.posterior["beta"], parallel.posterior["beta"]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)
