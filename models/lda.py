"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003) on (document, word, count) triples."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def lda(documents: np.ndarray, words: np.ndarray, counts: np.ndarray, n_topics: int, *,
        n_documents: int | None = None, n_words: int | None = None, alpha: float = 0.1,
        eta: float = 0.1, name: str = "lda") -> vmp.Model:
    """Build LDA with K = ``n_topics`` topics over the tokens (documents[r], words[r]) seen
    counts[r] times:

        beta_k ~ Dir(eta)             k = 1..K, over the V = n_words words
        theta_d ~ Dir(alpha)          d = 1..n_documents
        z_r ~ Cat(theta_{d_r}),  w_r ~ Cat(beta_{z_r})   each with multiplicity counts[r]

    one topic assignment per distinct (document, word) pair, weighted by its count (the
    count-weighted mean field of Hoffman et al. 2010 and scikit-learn). The default priors
    alpha = eta = 0.1 are scikit-learn's and gensim's 1/K at K = 10. Nodes: ``beta`` (plate
    "topics"), ``theta`` (plate "documents"), ``z`` and ``w`` (observed; plate "tokens").
    ``model["beta"]`` holds the topics (``.mean``: K x V word probabilities); a minibatch fit
    draws documents: ``vmp.Minibatch("documents", size)``. The tokens' document index and
    counts are the inputs ``document`` and ``counts`` (``vmp.Data``), so new documents replace
    them: ``model.stream("documents")`` takes chunks ``{"w": words, "document": ids, "counts":
    counts}`` (docs/streams.md)."""
    d = _checks.indices(name, "documents", documents)
    w = _checks.indices(name, "words", words)
    c = _checks.values(name, "counts", counts, positive=True)
    _checks.same_length(name, documents=d, words=w, counts=c)
    n_topics = _checks.count(name, "n_topics", n_topics, minimum=2)
    n_documents = int(d.max()) + 1 if n_documents is None else _checks.count(name, "n_documents", n_documents)
    n_words = int(w.max()) + 1 if n_words is None else _checks.count(name, "n_words", n_words, minimum=2)
    with vmp.Model(name) as model:
        with vmp.Plate("topics", n_topics):
            beta = vmp.Dirichlet("beta", alpha=np.full(n_words, eta))
        with vmp.Plate("documents", n_documents):
            theta = vmp.Dirichlet("theta", alpha=np.full(n_topics, alpha))
        with vmp.Plate("tokens", d.size):
            counts = vmp.Data("counts", c)
            z = vmp.Categorical("z", theta[vmp.Data("document", d)], weights=counts)
            vmp.Categorical("w", beta[z], observed=w, weights=counts)
    return model
