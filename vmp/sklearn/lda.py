"""``LatentDirichletAllocation``: the topic model of ``vmp.models.lda`` on a document-term matrix."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ._base import VMPEstimator


class LatentDirichletAllocation(ClassNamePrefixFeaturesOutMixin, TransformerMixin, VMPEstimator):
    """Latent Dirichlet allocation fitted by variational message passing.

    beta_k ~ Dir(eta), theta_d ~ Dir(alpha), one topic z per distinct (document, word) pair
    counted with its multiplicity (Blei, Ng & Jordan 2003; the count-weighted mean field of
    Hoffman et al. 2010 and scikit-learn), built by :func:`vmp.models.lda` from the nonzero
    entries of the document-term matrix X (n_documents x n_words, dense or sparse).

    Parameters
    ----------
    n_components : int, default=10
        Topics K (at least 2).
    alpha, eta : float or None, default=None
        The Dirichlet concentrations of theta_d (document-topic) and beta_k (topic-word); None
        leaves the builder's default.
    method : {"batch", "stochastic"}, default="batch"
        Batch VMP, or stochastic VMP on minibatches of ``batch_size`` documents (Hoffman et
        al.'s online LDA) with the step (learning_offset + t)^-learning_decay.
    batch_size : int, default=128
        Documents per minibatch (``method="stochastic"``; at most n_documents).
    learning_offset, learning_decay : float, default=10.0, 0.7
        tau0 and kappa of the step size, for ``method="stochastic"`` and ``partial_fit``.
    total_samples : int, default=1_000_000
        The corpus size D that ``partial_fit`` scales each minibatch's statistics to (D / |S|).
    max_doc_update_iter, mean_change_tol : int, float, default=100, 0.0
        The local step on new documents (``transform``, ``score``, ``partial_fit``): coordinate
        updates of theta and z until the largest change of their moments over all documents is
        below ``mean_change_tol``. With 0 every document gets ``max_doc_update_iter`` updates,
        so that its topic proportions do not depend on the other documents of X.
    max_iter, tol, n_init, random_state
        The fit's options, as for every estimator of :mod:`vmp.sklearn` (:class:`VMPEstimator`).

    Attributes
    ----------
    components_ : (K, n_words) the Dirichlet parameters of q(beta_k) (scikit-learn's lambda).
    n_batch_iter_ : int, the minibatches ``partial_fit`` has seen.
    posterior_ : vmp.Model, the fitted model (of the last minibatch after ``partial_fit``).

    ``transform(X)`` is E[theta_d] for each document given the fitted topics; ``score(X)`` the
    evidence lower bound of the documents X with the fitted q(beta) (including its KL term, as
    scikit-learn's score); ``perplexity(X) = exp(-score(X) / total count of X)``.
    """

    _builder_options = ("alpha", "eta")
    _local_plates = ("documents", "tokens")

    def __init__(self, n_components: int = 10, *, alpha=None, eta=None, method: str = "batch",
                 batch_size: int = 128, learning_offset: float = 10.0, learning_decay: float = 0.7,
                 total_samples: int = 1_000_000, max_iter: int = 100, tol=None, max_doc_update_iter: int = 100,
                 mean_change_tol: float = 0.0, n_init: int = 1, random_state=None):
        self.n_components = n_components
        self.alpha = alpha
        self.eta = eta
        self.method = method
        self.batch_size = batch_size
        self.learning_offset = learning_offset
        self.learning_decay = learning_decay
        self.total_samples = total_samples
        self.max_iter = max_iter
        self.tol = tol
        self.max_doc_update_iter = max_doc_update_iter
        self.mean_change_tol = mean_change_tol
        self.n_init = n_init
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    # ----- the model ----------------------------------------------------------------------
    def _counts(self, X, reset: bool) -> sp.coo_matrix:
        x = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=reset)
        check_non_negative(x, "LatentDirichletAllocation")
        if x.shape[1] < 2:
            raise ValueError(f"LatentDirichletAllocation: n_features={x.shape[1]}; a topic is a distribution "
                             f"over at least 2 words")
        counts = sp.coo_matrix(x)
        counts.eliminate_zeros()
        return counts

    def _build(self, counts: sp.coo_matrix):
        """The model of the nonzero entries of ``counts`` (None when there are none)."""
        from vmp.models import lda

        if counts.nnz == 0:
            return None
        n_documents, n_words = counts.shape
        return lda(counts.row, counts.col, counts.data, self.n_components, n_documents=n_documents,
                   n_words=n_words, name="LatentDirichletAllocation", **self._options())

    def _step(self):
        from ..inference import RobbinsMonro

        return RobbinsMonro(tau=self.learning_offset, kappa=self.learning_decay,
                            rho1=(1.0 + self.learning_offset) ** -self.learning_decay)

    def _step_options(self) -> dict:
        return {"step": self._step()}

    def _carried_documents(self, X):
        """(the model of documents X with theta and z inferred given the fitted topics, or None
        when X has no word; the counts)."""
        check_is_fitted(self, "posterior_")
        counts = self._counts(X, reset=False)
        model = self._build(counts)
        if model is not None:
            self._carried(model, self.max_doc_update_iter, self.mean_change_tol)
        return model, counts

    def _set_attributes(self) -> None:
        self.components_ = self.posterior_["beta"].parameters["alpha"]
        self._n_features_out = self.components_.shape[0]

    # ----- the estimator ------------------------------------------------------------------
    def fit(self, X, y=None) -> "LatentDirichletAllocation":
        """Fit the topics to the document-term matrix ``X``; ``y`` is ignored."""
        model = self._build(self._counts(X, reset=True))
        if model is None:
            raise ValueError("LatentDirichletAllocation: X has no nonzero count")
        self._fit_model(model)
        self._set_attributes()
        self.n_batch_iter_ = 0  # partial_fit continues from the fitted topics
        return self

    def partial_fit(self, X, y=None) -> "LatentDirichletAllocation":
        """One step of online LDA on the minibatch of documents ``X`` (Hoffman et al. 2010):
        theta and z inferred given the current topics, then q(beta) moves by the step
        (learning_offset + t)^-learning_decay towards its update from the minibatch's
        statistics scaled by total_samples / n_documents(X)."""
        from ..graph.leaves import Context
        from ..inference.engine import Engine

        first = not hasattr(self, "posterior_")
        counts = self._counts(X, reset=first)
        model = self._build(counts)
        if model is None:
            return self
        if first:
            beta = model.batch(seed=self._seed(), progress=False).state.natural["beta"]  # vmp's initial topics
            self.n_batch_iter_ = 0
        else:
            beta = self.posterior_["beta"].natural
        model["beta"].set_natural(beta)
        model.infer_locals(self.max_doc_update_iter, self.mean_change_tol)
        self.n_batch_iter_ += 1
        scale = self.total_samples / counts.shape[0]
        natural, moments = Engine(model).coordinate(model.state, model["beta"], Context(weights={"w": scale}),
                                                    rho=self._step()(self.n_batch_iter_))
        model["beta"].set_natural(natural, moments)
        self.posterior_ = model
        self._set_attributes()
        return self

    def transform(self, X) -> np.ndarray:
        """E[theta_d]: each document's topic proportions given the fitted topics (the prior mean
        for a document without a word)."""
        model, counts = self._carried_documents(X)
        if model is None:
            return np.full((counts.shape[0], self.n_components), 1.0 / self.n_components)
        return model["theta"].mean

    def score(self, X, y=None) -> float:
        """The evidence lower bound of the documents ``X`` given the fitted topics."""
        model, _ = self._carried_documents(X)
        if model is None:
            raise ValueError("LatentDirichletAllocation.score: X has no nonzero count")
        return model.elbo()

    def perplexity(self, X) -> float:
        """exp(-score(X) / the total count of X)."""
        model, counts = self._carried_documents(X)
        if model is None:
            raise ValueError("LatentDirichletAllocation.perplexity: X has no nonzero count")
        return float(np.exp(-model.elbo() / counts.sum()))
