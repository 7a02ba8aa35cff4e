"""Ready-made models. Each is a function that builds a ``vmp.Model`` from data and hyperparameters."""
from .gaussian_mixture import gaussian_mixture as gaussian_mixture
from .lda import lda as lda
from .matrix_factorization import matrix_factorization as matrix_factorization

MODELS = {"gaussian_mixture": gaussian_mixture, "lda": lda, "matrix_factorization": matrix_factorization}
