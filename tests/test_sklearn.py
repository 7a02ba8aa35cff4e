"""vmp.sklearn: scikit-learn's own conformance suite, pipelines, cross-validation and grid search,
and each estimator against its vmp.models fit and an independent computation (closed forms and
hand-written coordinate ascent / forward recursions written here)."""
import warnings

import numpy as np
import pytest
from scipy.special import digamma, logsumexp

pytest.importorskip("sklearn", reason="vmp.sklearn needs scikit-learn (the dev extra installs it)")

from sklearn.datasets import load_iris  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils import estimator_checks  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import vmp  # noqa: E402
from vmp.models import gaussian_mixture, lda  # noqa: E402
from vmp.sklearn import (GaussianMixture, HiddenMarkovModel, LatentDirichletAllocation, LinearRegression,  # noqa: E402
                         LogisticRegression)

pytestmark = pytest.mark.filterwarnings("ignore::vmp.ConvergenceWarning")

# ----- scikit-learn's conformance suite --------------------------------------------------------
ESTIMATORS = [GaussianMixture(max_iter=5, random_state=0), LinearRegression(max_iter=5),
              LatentDirichletAllocation(3, max_iter=5, max_doc_update_iter=5, random_state=0),
              HiddenMarkovModel(max_iter=5, random_state=0), LogisticRegression(max_iter=20)]

#: the checks that set n_components=1: the vmp models need K >= 2 (a Dirichlet over one
#: category is a point mass); test_checks_that_set_one_component runs them with K = 2
ONE_COMPONENT = {"check_dont_overwrite_parameters", "check_methods_sample_order_invariance",
                 "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
                 "check_fit2d_predict1d"}
#: an HMM's states depend on the whole sequence: a subset or a reordering of the rows is
#: another sequence, with other posteriors
SEQUENCE = {"check_methods_sample_order_invariance", "check_methods_subset_invariance"}


def expected_failures(estimator) -> dict:
    if isinstance(estimator, (LinearRegression, LogisticRegression)):
        return {}
    out = {c: "sets n_components=1; vmp's models need at least 2 components (test_checks_that_set_one_component "
              "runs it with 2)" for c in ONE_COMPONENT}
    if isinstance(estimator, GaussianMixture):
        out.pop("check_fit2d_1sample")  # one sample: refused before n_components is read
    if isinstance(estimator, LatentDirichletAllocation):
        out.pop("check_fit2d_1feature")  # one word: refused before n_components is read
    if isinstance(estimator, HiddenMarkovModel):
        out.update({c: "an HMM's states depend on the whole sequence: a subset or reordering of the rows is "
                       "another sequence" for c in SEQUENCE})
    return out


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_scikit_learn_conformance(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        check(estimator)


def at_least_two(cls):
    """``cls`` whose n_components stays at least 2 when a check sets it to 1, so that the check
    runs on a model vmp can build."""
    class AtLeastTwo(cls):
        @property
        def n_components(self):
            return self._k

        @n_components.setter
        def n_components(self, k):
            self._k = max(int(k), 2)
    AtLeastTwo.__name__ = cls.__name__
    return AtLeastTwo


@pytest.mark.parametrize("estimator, check", [
    (e, c) for e in ESTIMATORS if hasattr(e, "n_components") for c in sorted(ONE_COMPONENT)
    if not (isinstance(e, HiddenMarkovModel) and c in SEQUENCE)], ids=lambda p: p if isinstance(p, str) else type(p).__name__)
def test_checks_that_set_one_component(estimator, check):
    shimmed = at_least_two(type(estimator))(**estimator.get_params())
    assert shimmed.n_components >= 2
    getattr(estimator_checks, check)(type(estimator).__name__, shimmed)


# ----- pipelines, cross-validation, grid search -----------------------------------------------
def iris():
    return load_iris().data


def corpus():
    words = ["apple banana cherry fruit", "banana fruit salad apple", "cherry apple fruit pie",
             "engine wheel car road", "road car truck engine", "wheel truck road car",
             "fruit apple banana", "car engine road", "apple cherry banana fruit", "truck wheel engine"]
    return words * 2


def test_gaussian_mixture_in_pipeline_cross_validation_and_grid_search():
    x = iris()
    pipe = make_pipeline(StandardScaler(), GaussianMixture(3, max_iter=30, random_state=0)).fit(x)
    assert pipe.predict(x).shape == (150,) and np.isfinite(pipe.score(x))
    scores = cross_val_score(GaussianMixture(2, max_iter=30, random_state=0), x, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    grid = GridSearchCV(GaussianMixture(max_iter=30, random_state=0), {"n_components": [2, 3]}, cv=3).fit(x)
    assert grid.best_params_["n_components"] in (2, 3) and grid.best_estimator_.posterior_ is not None


def test_lda_in_pipeline_cross_validation_and_grid_search():
    text = corpus()
    pipe = Pipeline([("counts", CountVectorizer()), ("lda", LatentDirichletAllocation(2, random_state=0))])
    theta = pipe.fit_transform(text)
    assert theta.shape == (len(text), 2) and np.allclose(theta.sum(1), 1)
    assert theta[0].argmax() != theta[3].argmax()  # fruit and cars: two topics
    assert len(pipe.get_feature_names_out()) == 2
    scores = cross_val_score(pipe, text, cv=2)
    assert np.all(np.isfinite(scores))
    grid = GridSearchCV(pipe, {"lda__n_components": [2, 3]}, cv=2).fit(text)
    assert grid.best_params_["lda__n_components"] in (2, 3)


def test_linear_regression_in_pipeline_cross_validation_and_grid_search():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3)) * [1.0, 10.0, 100.0]
    y = x @ [1.0, 0.2, 0.01] + 3.0 + 0.1 * rng.normal(size=60)
    pipe = make_pipeline(StandardScaler(), LinearRegression())
    assert np.all(cross_val_score(pipe, x, y, cv=3) > 0.95)
    grid = GridSearchCV(pipe, {"linearregression__prior_precision": [1e-2, 1e3]}, cv=3).fit(x, y)
    assert grid.best_params_["linearregression__prior_precision"] == 1e-2  # 1e3 shrinks the weights to 0
    mean, std = grid.predict(x[:4]), grid.best_estimator_.predict(x[:4], return_std=True)[1]
    assert mean.shape == std.shape == (4,) and np.all(std > 0)


def test_hmm_in_pipeline_cross_validation_and_grid_search():
    x, lengths = two_state_sequences()
    pipe = make_pipeline(StandardScaler(), HiddenMarkovModel(2, random_state=0))
    pipe.fit(x, hiddenmarkovmodel__lengths=lengths)
    assert pipe.predict(x).shape == (len(x),)
    assert np.all(np.isfinite(cross_val_score(HiddenMarkovModel(2, random_state=0), x, cv=3)))
    grid = GridSearchCV(HiddenMarkovModel(random_state=0), {"n_components": [2, 3]}, cv=3).fit(x)
    assert grid.best_params_["n_components"] in (2, 3)


# ----- the estimators against their vmp.models fits ----------------------------------------
def test_gaussian_mixture_on_iris_gives_the_vmp_models_fit():
    x = iris()
    est = GaussianMixture(3, max_iter=200, random_state=0).fit(x)
    model = gaussian_mixture(x, 3)
    result = model.fit(iterations=200, seed=0, progress=False)
    assert est.lower_bound_ == result.final_elbo and est.n_iter_ == result.iterations
    theta = model["theta"]
    assert np.array_equal(est.means_, theta.mean) and np.array_equal(est.weights_, model["pi"].mean)
    assert np.array_equal(est.precisions_, theta.parameters["precision"])
    assert np.allclose(est.predict_proba(x), model["z"].mean, atol=1e-10)
    assert np.array_equal(est.predict(x), model["z"].mean.argmax(1))


def per_point_bound(model, x):
    """log sum_k exp(E[log pi_k] + E[log N(x | mu_k, Lambda_k^-1)]) under independent q(mu_k) q(Lambda_k)
    (Bishop PRML eqs. 10.64-10.66, with Cov[mu_k] for the Gaussian q(mu_k))."""
    alpha = model["pi"].parameters["alpha"]
    mu, lam = model["mu"].parameters, model["Lambda"].parameters
    d = x.shape[1]
    terms = []
    for k in range(len(alpha)):
        nu, w = lam["dof"][k], lam["scale"][k]
        e_logdet = digamma((nu + 1 - np.arange(1, d + 1)) / 2).sum() + d * np.log(2) + np.linalg.slogdet(w)[1]
        diff = x - mu["mean"][k]
        quad = np.einsum("ni,ij,nj->n", diff, nu * w, diff) + np.trace(nu * w @ mu["covariance"][k])
        terms.append(digamma(alpha[k]) - digamma(alpha.sum()) + 0.5 * e_logdet - 0.5 * d * np.log(2 * np.pi)
                     - 0.5 * quad)
    return logsumexp(np.array(terms), axis=0)


def per_point_bound_joint(model, x):
    """The same bound under the joint q(mu_k, Lambda_k) = N(m_k, (beta_k Lambda_k)^-1) W(Lambda_k | W_k, nu_k):
    E[(x - mu)^T Lambda (x - mu)] = D / beta_k + nu_k (x - m_k)^T W_k (x - m_k) (Bishop PRML eq. 10.64), and
    stick-breaking weights E[log pi_k] = E[log v_k] + sum_{j<k} E[log(1 - v_j)] (Blei & Jordan 2006)."""
    sticks, theta = model["pi"].parameters, model["theta"].parameters
    a, b = sticks["alpha"], sticks["beta"]
    e_log_v, e_log_rest = digamma(a) - digamma(a + b), digamma(b) - digamma(a + b)
    e_log_pi = e_log_v + np.concatenate([[0.0], np.cumsum(e_log_rest)[:-1]])
    d = x.shape[1]
    terms = []
    for k in range(len(a)):
        nu, w, m, beta = theta["dof"][k], theta["scale"][k], theta["mean"][k], theta["beta"][k]
        e_logdet = digamma((nu + 1 - np.arange(1, d + 1)) / 2).sum() + d * np.log(2) + np.linalg.slogdet(w)[1]
        diff = x - m
        quad = d / beta + nu * np.einsum("ni,ij,nj->n", diff, w, diff)
        terms.append(e_log_pi[k] + 0.5 * e_logdet - 0.5 * d * np.log(2 * np.pi) - 0.5 * quad)
    return logsumexp(np.array(terms), axis=0)


@pytest.mark.parametrize("options,reference", [
    ({}, per_point_bound_joint),
    ({"covariance": "factorized", "weights": "dirichlet"}, per_point_bound),
], ids=["joint", "factorized"])
def test_gaussian_mixture_score_samples_is_the_per_point_bound(options, reference):
    x = iris()
    est = GaussianMixture(3, random_state=0, **options).fit(x)
    new = x[::7] + 0.3
    assert np.allclose(est.score_samples(new), reference(est.posterior_, new), rtol=1e-12, atol=1e-10)
    assert np.isclose(est.score(new), reference(est.posterior_, new).mean(), rtol=1e-12)


def test_gaussian_mixture_stochastic_and_sample():
    x = iris()
    est = GaussianMixture(3, method="stochastic", batch_size=30, max_iter=60, random_state=1).fit(x)
    assert est.result_.extra["method"] == "stochastic" and est.means_.shape == (3, 4)
    draws, labels = est.sample(4000, random_state=0)
    assert draws.shape == (4000, 4) and labels.shape == (4000,) and labels.max() < 3
    counts = np.bincount(labels, minlength=3) / 4000
    assert np.allclose(counts, est.weights_, atol=0.1)  # one draw of pi from q, then z ~ pi
    for k in np.flatnonzero(counts > 0.1):
        assert np.allclose(draws[labels == k].mean(0), est.means_[k], atol=0.5)
    again, _ = est.sample(5, random_state=0)
    assert np.array_equal(again, est.sample(5, random_state=0)[0])


def corpus_counts():
    return CountVectorizer().fit_transform(corpus())


def test_lda_on_a_small_corpus_gives_the_vmp_models_fit():
    counts = corpus_counts().tocoo()
    est = LatentDirichletAllocation(3, max_iter=500, tol=1e-12, max_doc_update_iter=500, random_state=0).fit(counts)
    model = lda(counts.row, counts.col, counts.data, 3, n_documents=counts.shape[0], n_words=counts.shape[1])
    result = model.fit(iterations=500, tol=1e-12, seed=0, progress=False)
    assert est.lower_bound_ == result.final_elbo
    assert np.array_equal(est.components_, model["beta"].parameters["alpha"])
    # theta inferred afresh given the fitted topics: the fit's own theta, at its convergence
    assert np.allclose(est.transform(counts), model["theta"].mean, atol=1e-5)
    assert np.isclose(est.score(counts), result.final_elbo, rtol=1e-8)
    assert np.isclose(est.perplexity(counts), np.exp(-est.score(counts) / counts.sum()))


def test_lda_transform_and_score_are_hand_written_coordinate_ascent():
    counts = corpus_counts()
    est = LatentDirichletAllocation(2, max_iter=50, max_doc_update_iter=30, random_state=0).fit(counts)
    model = est.posterior_
    alpha = model["theta"].factor.alpha[0]
    e_log_beta = digamma(est.components_) - digamma(est.components_.sum(1, keepdims=True))
    gamma, phi = local_step(counts[:6].toarray(), alpha, e_log_beta, 30)
    assert np.allclose(est.transform(counts[:6]), gamma / gamma.sum(1, keepdims=True), atol=1e-10)
    assert phi.shape[0] == 6


def local_step(x, alpha, e_log_beta, iterations):
    """Blei et al.'s variational E-step from gamma = alpha: phi_dwk ~ exp(E[log theta_dk] + E[log beta_kw]),
    gamma_d = alpha + sum_w n_dw phi_dwk."""
    gamma = np.broadcast_to(alpha, (x.shape[0], e_log_beta.shape[0])).copy()
    for _ in range(iterations):
        log_phi = (digamma(gamma) - digamma(gamma.sum(1, keepdims=True)))[:, None, :] + e_log_beta.T[None]
        phi = np.exp(log_phi - logsumexp(log_phi, axis=2, keepdims=True))
        gamma = alpha + np.einsum("dw,dwk->dk", x, phi)
    return gamma, phi


def test_lda_partial_fit_is_hoffmans_online_update():
    counts = corpus_counts().toarray()
    est = LatentDirichletAllocation(2, total_samples=100, max_doc_update_iter=20, random_state=0)
    est.partial_fit(counts[:10])
    before, eta = est.components_.copy(), est.posterior_["beta"].factor.alpha[0]
    alpha = est.posterior_["theta"].factor.alpha[0]
    est.partial_fit(counts[10:15])
    e_log_beta = digamma(before) - digamma(before.sum(1, keepdims=True))
    _, phi = local_step(counts[10:15], alpha, e_log_beta, 20)
    rho = (10.0 + 2) ** -0.7
    target = eta + 100 / 5 * np.einsum("dw,dwk->kw", counts[10:15], phi)
    assert est.n_batch_iter_ == 2
    assert np.allclose(est.components_, (1 - rho) * before + rho * target, rtol=1e-10)


def test_lda_stochastic_fit_runs_minibatches_of_documents():
    counts = corpus_counts()
    est = LatentDirichletAllocation(2, method="stochastic", batch_size=5, max_iter=40, random_state=0).fit(counts)
    assert est.result_.extra["method"] == "stochastic"
    theta = est.transform(counts)
    assert theta[0].argmax() != theta[3].argmax()


def test_linear_regression_predictive_is_the_closed_form():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(40, 3))
    y = x @ [1.0, -2.0, 0.5] + 0.5 * rng.normal(size=40)
    tau, p = 4.0, 1.0
    est = LinearRegression(fit_intercept=False, noise_precision=tau, prior_precision=p).fit(x, y)
    s = np.linalg.inv(p * np.eye(3) + tau * x.T @ x)  # Bishop PRML eqs. 3.53-3.59
    m = tau * s @ x.T @ y
    new = rng.normal(size=(5, 3))
    mean, std = est.predict(new, return_std=True)
    assert np.allclose(est.coef_, m, rtol=1e-10) and np.allclose(est.coef_covariance_, s, rtol=1e-10)
    assert np.allclose(mean, new @ m, rtol=1e-10)
    assert np.allclose(std, np.sqrt(1 / tau + np.einsum("ni,ij,nj->n", new, s, new)), rtol=1e-10)


def test_linear_regression_intercept_from_centering():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 2)) + 5.0
    y = x @ [2.0, -1.0] + 10.0 + 0.1 * rng.normal(size=200)
    est = LinearRegression().fit(x, y)
    assert np.allclose(est.coef_, [2.0, -1.0], atol=0.05) and abs(est.intercept_ - 10.0) < 0.3
    assert np.allclose(est.predict(x), x @ est.coef_ + est.intercept_, rtol=1e-10)
    assert len(est.posterior_["y"].data) == 200  # predict leaves the fitted model as it was


def two_state_sequences(seed=0):
    rng = np.random.default_rng(seed)
    states = [np.repeat([0, 1, 0], [8, 10, 7]), np.repeat([1, 0], [9, 11])]
    seqs = [np.where(s[:, None] == 0, -2.0, 2.0) + 0.5 * rng.normal(size=(len(s), 2)) for s in states]
    return np.concatenate(seqs), [len(s) for s in seqs]


def forward(log_pi0, log_a, log_b):
    """log Z and the marginals of the chain with potentials exp(log_pi0), exp(log_a), exp(log_b) (T x K)."""
    t_max, k = log_b.shape
    alpha, beta = np.zeros((t_max, k)), np.zeros((t_max, k))
    alpha[0] = log_pi0 + log_b[0]
    for t in range(1, t_max):
        alpha[t] = logsumexp(alpha[t - 1][:, None] + log_a, axis=0) + log_b[t]
    for t in range(t_max - 2, -1, -1):
        beta[t] = logsumexp(log_a + (log_b[t + 1] + beta[t + 1])[None, :], axis=1)
    log_z = logsumexp(alpha[-1])
    return log_z, np.exp(alpha + beta - log_z)


def expected_log_emissions(model, y):
    """E[log N(y_t | mu_k, Lambda_k^-1)] under q(mu_k) q(Lambda_k) (T x K)."""
    mu, lam = model["mu"].parameters, model["Lambda"].parameters
    d = y.shape[1]
    out = []
    for k in range(len(mu["mean"])):
        nu, w = lam["dof"][k], lam["scale"][k]
        e_logdet = digamma((nu + 1 - np.arange(1, d + 1)) / 2).sum() + d * np.log(2) + np.linalg.slogdet(w)[1]
        diff = y - mu["mean"][k]
        quad = np.einsum("ni,ij,nj->n", diff, nu * w, diff) + np.trace(nu * w @ mu["covariance"][k])
        out.append(0.5 * e_logdet - 0.5 * d * np.log(2 * np.pi) - 0.5 * quad)
    return np.stack(out, 1)


def test_hmm_score_and_posteriors_are_the_forward_backward_on_expected_parameters():
    x, lengths = two_state_sequences()
    est = HiddenMarkovModel(2, random_state=0).fit(x, lengths=lengths)
    model = est.posterior_
    e_log = lambda a: digamma(a) - digamma(a.sum(-1, keepdims=True))  # noqa: E731
    log_pi0, log_a = e_log(model["pi0"].parameters["alpha"]), e_log(model["A"].parameters["alpha"])
    new, new_lengths = two_state_sequences(seed=3)
    total, marginals = 0.0, []
    for seq in np.split(new, np.cumsum(new_lengths)[:-1]):
        log_z, m = forward(log_pi0, log_a, expected_log_emissions(model, seq))
        total += log_z
        marginals.append(m)
    assert np.isclose(est.score(new, lengths=new_lengths), total, rtol=1e-10)
    assert np.allclose(est.predict_proba(new, new_lengths), np.concatenate(marginals), atol=1e-10)
    truth = np.concatenate([np.repeat([0, 1, 0], [8, 10, 7]), np.repeat([1, 0], [9, 11])])
    predicted = est.predict(new, new_lengths)
    assert max(np.mean(predicted == truth), np.mean(predicted != truth)) > 0.95


def test_hmm_joint_covariance_is_the_normal_wishart_q():
    """covariance="joint": means_ = m_k and covars_ = (nu_k W_k)^-1 of the fitted Normal-Wishart
    q(mu_k, Lambda_k) (Bishop PRML (10.59), E[Lambda] = nu W), the fit of vmp.models.hmm itself."""
    x, lengths = two_state_sequences()
    est = HiddenMarkovModel(2, covariance="joint", random_state=0).fit(x, lengths=lengths)
    theta = est.posterior_["theta"].parameters
    np.testing.assert_allclose(est.means_, theta["mean"], atol=1e-12)
    expected = np.linalg.inv(theta["dof"][:, None, None] * theta["scale"])
    np.testing.assert_allclose(est.covars_, expected, rtol=1e-10)
    model = vmp.models.hmm(np.split(x, np.cumsum(lengths)[:-1]), 2, covariance="joint")
    model.fit(iterations=100, seed=0, progress=False)
    np.testing.assert_allclose(est.means_, model["theta"].mean, atol=1e-10)
    with pytest.raises(ValueError, match="covariance do not apply to poisson emissions"):
        HiddenMarkovModel(emission="poisson", covariance="joint").fit(x[:, :1].round().clip(0))


def test_hmm_categorical_and_poisson_emissions_and_sample():
    rng = np.random.default_rng(4)
    symbols = rng.integers(0, 3, size=(40, 1))
    cat = HiddenMarkovModel(2, emission="categorical", random_state=0).fit(symbols, lengths=[25, 15])
    assert cat.emissionprob_.shape == (2, 3) and cat.n_symbols_ == 3
    assert cat.predict(symbols[:5]).shape == (5,)
    x, z = cat.sample(30, random_state=1)
    assert x.shape == (30, 1) and z.shape == (30,) and set(np.unique(x)) <= {0, 1, 2}
    with pytest.raises(vmp.DataError):
        cat.predict(np.array([[0], [3]]))  # a symbol outside the fitted alphabet
    counts = rng.poisson(np.repeat([1.0, 8.0], 20))[:, None]
    poi = HiddenMarkovModel(2, emission="poisson", random_state=0).fit(counts)
    assert np.allclose(np.sort(poi.lambdas_), [1.0, 8.0], atol=1.5)
    gauss = HiddenMarkovModel(2, random_state=0).fit(*two_state_sequences()[:1])
    y, states = gauss.sample(50, random_state=2)
    assert y.shape == (50, 2) and states.shape == (50,)


def test_bad_input_errors():
    x, lengths = two_state_sequences()
    with pytest.raises(ValueError, match="lengths must be positive integers summing to n_samples=45"):
        HiddenMarkovModel().fit(x, lengths=[10, 10])
    with pytest.raises(ValueError, match="y is ignored; give the sequence lengths by keyword"):
        HiddenMarkovModel().fit(x, lengths)
    with pytest.raises(ValueError, match="n_symbols do not apply to gaussian emissions"):
        HiddenMarkovModel(n_symbols=3).fit(x)
    with pytest.raises(ValueError, match="emission must be one of"):
        HiddenMarkovModel(emission="student").fit(x)
    with pytest.raises(ValueError, match="categorical emissions need non-negative integers"):
        HiddenMarkovModel(emission="categorical").fit(x[:, :1])
    with pytest.raises(ValueError, match="n_samples=2 should be >= n_components=3"):
        GaussianMixture(3).fit(x[:2])
    with pytest.raises(ValueError, match="Negative values"):
        LatentDirichletAllocation(2).fit(-np.ones((3, 4)))
    with pytest.raises(ValueError, match="no nonzero count"):
        LatentDirichletAllocation(2).fit(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="n_features=1; a topic is a distribution over at least 2 words"):
        LatentDirichletAllocation(2).fit(np.ones((3, 1)))
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        GaussianMixture(2, random_state=0).fit(iris()).sample(0)


def test_import_without_scikit_learn_says_how_to_install(monkeypatch):
    import importlib
    import sys

    for name in [m for m in sys.modules if m == "vmp.sklearn" or m.startswith("vmp.sklearn.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=r"pip install 'vmp\[sklearn\]'"):
        importlib.import_module("vmp.sklearn")
