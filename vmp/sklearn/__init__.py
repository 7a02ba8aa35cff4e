"""scikit-learn estimators over the ready-made models of ``vmp.models`` (needs scikit-learn:
``pip install 'vmp[sklearn]'``).

Each estimator follows scikit-learn's conventions (the constructor takes only hyperparameters,
``fit`` returns the estimator, learned attributes end in ``_``, ``get_params``/``set_params``,
``random_state``) and keeps the fitted ``vmp.Model`` as ``posterior_`` for everything beyond the
estimator API: diagrams, dashboards, predictives, checkpoints.
"""
try:
    import sklearn  # noqa: F401
except ImportError:
    raise ImportError("vmp.sklearn needs scikit-learn, which is not installed: pip install scikit-learn "
                      "(or install vmp with the extra: pip install 'vmp[sklearn]')") from None

from .hmm import HiddenMarkovModel as HiddenMarkovModel
from .lda import LatentDirichletAllocation as LatentDirichletAllocation
from .logistic import LogisticRegression as LogisticRegression
from .mixture import GaussianMixture as GaussianMixture
from .regression import LinearRegression as LinearRegression

__all__ = ["GaussianMixture", "HiddenMarkovModel", "LatentDirichletAllocation", "LinearRegression",
           "LogisticRegression"]
