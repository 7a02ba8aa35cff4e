"""vmp.sklearn.LogisticRegression against independent computations: Jaakkola and Jordan's
variational logistic regression written here (Bishop, PRML section 10.6), whose fixed point the
Polya-gamma mean-field fit reaches; Monte Carlo of the predictive over q(w); scikit-learn's
pipelines, cross-validation and grid search (its conformance suite runs in test_sklearn.py)."""
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="vmp.sklearn needs scikit-learn (the dev extra installs it)")

from scipy.special import expit  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import vmp  # noqa: E402
from vmp.sklearn import LogisticRegression  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::vmp.ConvergenceWarning")


def binary(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < expit(x @ np.array([1.5, -1.0, 0.5][:d]))).astype(int)
    return x, y


def jaakkola_jordan(x, y, prior_precision, sweeps=2000):
    """PRML (10.156)-(10.163): S^-1 = S0^-1 + 2 sum lambda(xi_n) x_n x_n^T, m = S sum (y_n - 1/2)
    x_n, xi_n^2 = x_n^T (S + m m^T) x_n, lambda(xi) = tanh(xi / 2) / (4 xi)."""
    d = x.shape[1]
    xi = np.ones(len(x))
    for _ in range(sweeps):
        lam = np.tanh(xi / 2) / (4 * xi)
        cov = np.linalg.inv(prior_precision * np.eye(d) + 2 * (x * lam[:, None]).T @ x)
        mean = cov @ (x.T @ (y - 0.5))
        xi = np.sqrt(np.einsum("nd,de,ne->n", x, cov + np.outer(mean, mean), x))
    return mean, cov


def test_binary_fit_is_jaakkola_jordans_variational_logistic_regression():
    x, y = binary()
    est = LogisticRegression(C=2.0, fit_intercept=False, max_iter=2000, tol=1e-13, random_state=0).fit(x, y)
    mean, cov = jaakkola_jordan(x, y, prior_precision=0.5)
    np.testing.assert_allclose(est.coef_[0], mean, atol=1e-6)
    np.testing.assert_allclose(est.posterior_["w"].parameters["covariance"], cov, atol=1e-6)
    np.testing.assert_array_equal(est.intercept_, [0.0])


def test_predict_proba_integrates_the_logit_over_q():
    """P(y = 1 | x) = E_q[sigmoid(w . x + b)], by Monte Carlo over q(w) q(b)."""
    x, y = binary(seed=1)
    est = LogisticRegression(C=1.0, random_state=0).fit(x, y)
    new = np.array([[0.3, -0.2, 1.0], [3.0, 2.0, -1.0]])
    rng = np.random.default_rng(5)
    w = rng.multivariate_normal(est.coef_[0], est.posterior_["w"].parameters["covariance"], size=400_000)
    b = est.intercept_[0] + rng.normal(size=400_000) / np.sqrt(est.posterior_["b"].parameters["precision"])
    mc = expit(w @ new.T + b[:, None]).mean(0)
    proba = est.predict_proba(new)
    np.testing.assert_allclose(proba[:, 1], mc, atol=2e-3)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    # the integrated probability is less confident than the plug-in sigmoid of E[psi]
    plug_in = expit(new @ est.coef_[0] + est.intercept_[0])
    assert np.all(np.abs(proba[:, 1] - 0.5) < np.abs(plug_in - 0.5))


def test_labels_of_any_type_and_the_vmp_models_fit():
    x, y = binary(seed=2)
    names = np.array(["no", "yes"])[y]
    est = LogisticRegression(random_state=0).fit(x, names)
    assert list(est.classes_) == ["no", "yes"]
    assert set(est.predict(x)) <= {"no", "yes"}
    model = vmp.models.logistic_regression(x, y.astype(float))
    model.fit(iterations=500, seed=0, progress=False)
    np.testing.assert_allclose(est.coef_[0], model["w"].mean, atol=1e-10)


def test_multiclass_on_iris():
    x, y = load_iris(return_X_y=True)
    x = StandardScaler().fit_transform(x)
    est = LogisticRegression(random_state=0).fit(x, y)
    proba = est.predict_proba(x)
    assert proba.shape == (150, 3) and est.coef_.shape == (2, 4) and est.intercept_.shape == (2,)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(est.predict(x), est.classes_[proba.argmax(1)])
    assert est.score(x, y) > 0.93  # scikit-learn's LogisticRegression(): 0.973


def test_in_pipeline_cross_validation_and_grid_search():
    x, y = binary(n=150, seed=3)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(random_state=0))
    assert np.mean(cross_val_score(pipe, x, y, cv=3)) > 0.7
    grid = GridSearchCV(pipe, {"logisticregression__C": [1e-4, 1.0]}, cv=3).fit(x, y)
    assert grid.best_params_["logisticregression__C"] == 1.0  # C = 1e-4 holds the weights at 0


def test_bad_input_errors():
    x, y = binary()
    with pytest.raises(ValueError, match="needs samples of at least 2 classes"):
        LogisticRegression().fit(x, np.zeros(len(x)))
    with pytest.raises(ValueError, match="C must be a positive number"):
        LogisticRegression(C=0.0).fit(x, y)
    with pytest.raises(ValueError, match="ard=True is for two classes"):
        LogisticRegression(ard=True).fit(x, np.arange(len(x)) % 3)
    with pytest.raises(ValueError, match="Unknown label type"):
        LogisticRegression().fit(x, x[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="NaN"):
            LogisticRegression().fit(np.where(x > 1, np.nan, x), y)
