"""``HiddenMarkovModel``: the hidden Markov models of ``vmp.models.hmm``."""
from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import VMPEstimator, bound_per_element

#: the builder options of each emission family
EMISSION_OPTIONS = {"gaussian": ("mean_precision", "dof", "covariance"), "categorical": ("n_symbols", "beta"),
                    "poisson": ("shape", "rate")}


class HiddenMarkovModel(VMPEstimator):
    """Bayesian hidden Markov model fitted by variational message passing (Beal 2003 ch. 3).

    pi0 ~ Dir, A_j ~ Dir, z_s a Markov chain per sequence (q(z_s) from forward-backward), and
    Gaussian, Categorical or Poisson emissions, built by :func:`vmp.models.hmm`. Sequences are
    given as hmmlearn does: the rows of X (n_samples x n_features; one column of symbols or
    counts for categorical and Poisson emissions) concatenated, split by ``lengths``.

    Parameters
    ----------
    n_components : int, default=2
        Hidden states K (at least 2).
    emission : {"gaussian", "categorical", "poisson"}, default="gaussian"
    initial_alpha, transition_alpha : float or None
        Dirichlet concentrations of pi0 and of each row of A; None leaves the builder's default.
    mean_precision, dof, covariance : Gaussian emissions' options (``covariance="joint"``: one
        Normal-Wishart q(mu_k, Lambda_k) per state, hmmlearn's VariationalGaussianHMM); n_symbols, beta : categorical; shape,
        rate : Poisson (see :func:`vmp.models.hmm`). None leaves the builder's default; an
        option of another emission is refused.
    max_iter, tol, n_init, random_state
        The fit's options, as for every estimator of :mod:`vmp.sklearn` (:class:`VMPEstimator`).

    Attributes
    ----------
    startprob_ : (K,) E[pi0].  transmat_ : (K, K) E[A].
    means_, covars_ : (K, D), (K, D, D) E[mu_k] and E[Lambda_k]^-1 (Gaussian emissions);
    emissionprob_ : (K, n_symbols) E[B_k] (categorical); lambdas_ : (K,) E[lam_k] (Poisson).
    posterior_ : vmp.Model, the fitted model; result_, lower_bound_, n_iter_, converged_.

    ``predict_proba(X, lengths)`` gives q(z_t = k) given the fitted parameters;
    ``predict`` the most probable state of each step under it (posterior decoding);
    ``score(X, lengths=...)`` the sum over sequences of their lower bound on log p(sequence | q)
    (the log normalizer of each chain's q, from forward-backward on the expected log-parameters).
    """

    _local_plates = ("sequences", "time")

    def __init__(self, n_components: int = 2, *, emission: str = "gaussian", initial_alpha=None,
                 transition_alpha=None, mean_precision=None, dof=None, covariance=None, n_symbols=None, beta=None,
                 shape=None, rate=None, max_iter: int = 100, tol=None, n_init: int = 1, random_state=None):
        self.n_components = n_components
        self.emission = emission
        self.initial_alpha = initial_alpha
        self.transition_alpha = transition_alpha
        self.mean_precision = mean_precision
        self.dof = dof
        self.covariance = covariance
        self.n_symbols = n_symbols
        self.beta = beta
        self.shape = shape
        self.rate = rate
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.random_state = random_state

    def _option_names(self) -> tuple[str, ...]:
        """The options of the chain and of the chosen emission; an unknown emission, or an
        option of another emission, is refused."""
        if self.emission not in EMISSION_OPTIONS:
            raise ValueError(f"HiddenMarkovModel: emission must be one of {sorted(EMISSION_OPTIONS)}, "
                             f"got {self.emission!r}")
        others = [o for e, names in EMISSION_OPTIONS.items() if e != self.emission for o in names
                  if getattr(self, o) is not None]
        if others:
            raise ValueError(f"HiddenMarkovModel: {', '.join(others)} do not apply to {self.emission} emissions")
        return ("initial_alpha", "transition_alpha") + EMISSION_OPTIONS[self.emission]

    # ----- sequences ----------------------------------------------------------------------
    def _sequences(self, X, lengths, reset: bool) -> list[np.ndarray]:
        """The rows of X split by ``lengths`` (one sequence without): T x D arrays for Gaussian
        emissions, length-T integer arrays otherwise."""
        self._option_names()  # the emission and its options, checked before the data
        x = validate_data(self, X, dtype=np.float64, reset=reset)
        if self.emission != "gaussian":
            if x.shape[1] != 1:
                raise ValueError(f"HiddenMarkovModel: {self.emission} emissions read one column of "
                                 f"{'symbols' if self.emission == 'categorical' else 'counts'}, X has {x.shape[1]}")
            if np.any(x != np.round(x)) or np.any(x < 0):
                raise ValueError(f"HiddenMarkovModel: {self.emission} emissions need non-negative integers in X")
            x = x[:, 0].astype(np.int64)
        lengths = np.array([len(x)] if lengths is None else lengths)
        if lengths.ndim != 1 or lengths.size == 0 or lengths.dtype.kind not in "iu" or lengths.min() < 1 \
                or lengths.sum() != len(x):
            raise ValueError(f"HiddenMarkovModel: lengths must be positive integers summing to n_samples="
                             f"{len(x)}, got {lengths!r}")
        return np.split(x, np.cumsum(lengths)[:-1])

    def _build(self, sequences):
        from vmp.models import hmm

        options = self._options()
        if hasattr(self, "n_symbols_"):
            options["n_symbols"] = self.n_symbols_  # new data read with the fitted alphabet
        return hmm(sequences, self.n_components, emission=self.emission, name="HiddenMarkovModel", **options)

    # ----- the estimator ------------------------------------------------------------------
    def fit(self, X, y=None, *, lengths=None) -> "HiddenMarkovModel":
        """Fit to the sequences of X (their ``lengths``; one sequence without); ``y`` is
        ignored (scikit-learn's convention: give ``lengths`` by keyword)."""
        self.__dict__.pop("n_symbols_", None)
        sequences = self._sequences(X, lengths, reset=True)
        _ignored(y, sum(len(s) for s in sequences), "fit")
        self._fit_model(self._build(sequences))
        model = self.posterior_
        self.startprob_, self.transmat_ = model["pi0"].mean, model["A"].mean
        if self.emission == "gaussian":
            if "theta" in model:
                theta = model["theta"]
                self.means_, self.covars_ = theta.mean, np.linalg.inv(theta.parameters["precision"])
            else:
                self.means_, self.covars_ = model["mu"].mean, np.linalg.inv(model["Lambda"].mean)
        elif self.emission == "categorical":
            self.emissionprob_ = model["B"].mean
            self.n_symbols_ = self.emissionprob_.shape[1]
        else:
            self.lambdas_ = model["lam"].mean
        return self

    def _chains(self, X, lengths):
        """The chains' node of the model of X with q(z) inferred given the fitted parameters,
        and the mask of the steps within each sequence."""
        check_is_fitted(self, "posterior_")
        sequences = self._sequences(X, lengths, reset=False)
        model = self._carried(self._build(sequences))
        steps = np.array([len(s) for s in sequences])
        return model["z"], np.arange(steps.max()) < steps[:, None]

    def predict_proba(self, X, lengths=None) -> np.ndarray:
        """q(z_t = k) for each row of X (n_samples x K)."""
        z, within = self._chains(X, lengths)
        return z.mean[within]

    def predict(self, X, lengths=None) -> np.ndarray:
        """The most probable state of each row under q (posterior decoding)."""
        return np.argmax(self.predict_proba(X, lengths), axis=1)

    def score(self, X, y=None, *, lengths=None) -> float:
        """The sum over the sequences of X of their lower bound on log p(sequence | q)."""
        z, within = self._chains(X, lengths)
        _ignored(y, int(within.sum()), "score")
        return float(np.sum(bound_per_element(z)))

    def sample(self, n_samples: int = 1, random_state=None) -> tuple[np.ndarray, np.ndarray]:
        """(X, states): one new sequence of ``n_samples`` steps from the posterior predictive
        (the parameters drawn once from q, then the chain and its emissions)."""
        check_is_fitted(self, "posterior_")
        if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
            raise ValueError(f"HiddenMarkovModel.sample: n_samples must be a positive integer, got {n_samples!r}")
        shape = (int(n_samples), self.n_features_in_) if self.emission == "gaussian" else (int(n_samples),)
        draws = self._draw_new(self._build([np.zeros(shape, np.int64 if len(shape) == 1 else float)]),
                               self._generator(random_state))
        x = draws["y"][0]
        return (x if x.ndim == 2 else x[:, None].astype(np.int64)), draws["z"][0].astype(np.int64)


def _ignored(y, n_samples: int, method: str) -> None:
    """``y`` is scikit-learn's ignored target; sequence lengths given in its place are refused."""
    if y is not None and np.ndim(y) == 1 and len(y) != n_samples:
        raise ValueError(f"HiddenMarkovModel.{method}(X, y, *, lengths=None): y is ignored; give the sequence "
                         f"lengths by keyword, lengths=...")
