"""Ready-made models. Each is a function that builds a ``vmp.Model`` from data and hyperparameters."""
from ._checks import PriorScaleWarning as PriorScaleWarning
from .beta_binomial import beta_bernoulli as beta_bernoulli
from .beta_binomial import beta_binomial as beta_binomial
from .factor_analysis import factor_analysis as factor_analysis
from .factorial_mixture import factorial_mixture as factorial_mixture
from .gaussian_mixture import gaussian_mixture as gaussian_mixture
from .hierarchical_logistic_regression import hierarchical_logistic_regression as hierarchical_logistic_regression
from .hmm import hmm as hmm
from .lda import lda as lda
from .linear_regression import linear_regression as linear_regression
from .logistic_regression import logistic_regression as logistic_regression
from .matrix_factorization import matrix_factorization as matrix_factorization
from .mixture_of_regressions import mixture_of_regressions as mixture_of_regressions
from .multiclass_logistic_regression import multiclass_logistic_regression as multiclass_logistic_regression
from .multinomial_mixture import multinomial_mixture as multinomial_mixture
from .negative_binomial_regression import negative_binomial_regression as negative_binomial_regression
from .poisson_factorization import poisson_factorization as poisson_factorization
from .robust_regression import robust_regression as robust_regression
from .state_space import linear_dynamical_system as linear_dynamical_system
from .state_space import local_level as local_level
from .state_space import switching_lds as switching_lds

#: the builders the command line can feed from a data file (vmp/cli.py SPECS)
MODELS = {"gaussian_mixture": gaussian_mixture, "lda": lda, "matrix_factorization": matrix_factorization}
