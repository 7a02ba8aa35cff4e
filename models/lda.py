"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003) on (document, word, count) triples.

beta_k ~ Dir(eta), theta_d ~ Dir(alpha), and for each distinct (d, w) pair seen c times, one
topic assignment z ~ Cat(theta_d) and word w ~ Cat(beta_z), both with multiplicity c
(the count-weighted mean field of Hoffman et al. 2010 and scikit-learn).
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def lda(documents: np.ndarray, words: np.ndarray, counts: np.ndarray, n_topics: int, *,
        n_documents: int | None = None, n_words: int | None = None, alpha: float = 0.1,
        eta: float = 0.01, name: str = "lda") -> vmp.Model:
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
            z = vmp.Categorical("z", theta[d], weights=c)
            vmp.Categorical("w", beta[z], observed=w, weights=c)
    return model
