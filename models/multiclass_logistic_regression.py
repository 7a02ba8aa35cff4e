"""Multiclass logistic regression through stick-breaking and Polya-gamma augmentation (Linderman,
Johnson & Adams 2015):

    W_k ~ N(0, p^-1 I), b_k ~ N(0, 1/p_b)      for the K - 1 sticks k (plate "classes"),
    psi_nk = W_k . x_n + b_k,
    P(y_n = k) = sigmoid(psi_nk) prod_{j<k} (1 - sigmoid(psi_nj))   (the last class takes the rest),

with one Polya-gamma auxiliary per observation and stick (the node 'y.omega', declared by the
engine over the plates "data" and "classes").
"""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def multiclass_logistic_regression(inputs: np.ndarray, targets: np.ndarray, n_classes: int | None = None, *,
                                   prior_precision: float = 1.0, intercept: bool = True,
                                   intercept_precision: float = 1e-4,
                                   name: str = "multiclass_logistic_regression") -> vmp.Model:
    """The regression of class labels ``targets`` (N integers in [0, n_classes); NaN missing) on
    the rows of ``inputs`` (N x D); ``n_classes`` defaults to the largest label + 1:

        W_k ~ N(0, I / prior_precision),  b_k ~ N(0, 1 / intercept_precision)    k = 1..K-1
        y_n ~ Cat(stick-breaking logits psi_nk = W_k . x_n + b_k)

    with Polya-gamma auxiliaries. Nodes: ``W`` (Gaussian weights, plate "classes" of K - 1),
    ``b`` (Normal intercepts, same plate), ``y`` (Categorical, ``logits=``), ``y.omega``; the
    inputs are the data input "X".
    ``model.predict("y").mean`` is the N x K matrix of class probabilities."""
    x = _checks.matrix(name, "inputs", inputs)
    y, seen = _checks.targets(name, targets)
    _checks.same_length(name, inputs=x, targets=y)
    _checks.positive(name, prior_precision=prior_precision, intercept_precision=intercept_precision)
    k = int(np.max(y[seen] if seen is not None else y)) + 1 if n_classes is None else n_classes
    k = _checks.count(name, "n_classes", k, minimum=2)
    with vmp.Model(name) as model:
        with vmp.Plate("classes", k - 1):
            w = vmp.Gaussian("W", mean=np.zeros(x.shape[1]), precision=prior_precision * np.eye(x.shape[1]))
            b = vmp.Normal("b", 0.0, intercept_precision) if intercept else None
        with vmp.Plate("data", x.shape[0]):
            psi = vmp.dot(w, vmp.Data("X", x))
            vmp.Categorical("y", logits=psi + b if intercept else psi, observed=y, mask=seen)
    return model
