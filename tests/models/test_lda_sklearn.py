"""vmp.models.lda's bound is scikit-learn's variational bound of LDA (Hoffman et al. 2010, eq. (3),
``LatentDirichletAllocation._approx_bound`` through ``score``) at the same q(beta): scikit-learn
optimizes q(theta_d) and the count-weighted q(z) for that q(beta) by its own E-step, and sums the
same terms independently of vmp's messages."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from vmp.models import lda

decomposition = pytest.importorskip("sklearn.decomposition")


def test_the_bound_is_scikit_learns_at_the_same_q_of_the_topics():
    rng = np.random.default_rng(0)
    k, v, n_docs = 3, 18, 40
    topics = np.kron(np.eye(k), np.ones(v // k)) * 0.95 / (v // k) + 0.05 / v
    counts = np.array([rng.multinomial(60, rng.dirichlet(np.full(k, 0.3)) @ topics) for _ in range(n_docs)])
    d, w = np.nonzero(counts)
    alpha, eta = 0.3, 0.05
    model = lda(d, w, counts[d, w], k, alpha=alpha, eta=eta, n_words=v)
    model.fit(iterations=1000, tol=1e-12, seed=0)
    sk = decomposition.LatentDirichletAllocation(k, doc_topic_prior=alpha, topic_word_prior=eta,
                                                 mean_change_tol=1e-13, max_doc_update_iter=5000)
    sk.components_ = model["beta"].parameters["alpha"].copy()
    sk.exp_dirichlet_component_ = np.exp(special.digamma(sk.components_)
                                         - special.digamma(sk.components_.sum(1, keepdims=True)))
    sk.n_features_in_, sk.doc_topic_prior_, sk.topic_word_prior_ = v, alpha, eta
    assert sk.score(counts) == pytest.approx(model.elbo(), rel=1e-10, abs=0)
