"""A family with a base measure h(x) != 1 (as a Poisson's 1/y!): the bound of an observed node
adds sum_n w_n log h(x_n) (its factor sees the data), and such a family is observed-only.

The family here is a Normal with an arbitrary h(x) = exp(-(x - 1/2)^4) made up for the test: the
bound must move by exactly the weighted sum of -(x_n - 1/2)^4 over the observed, unmasked elements.
"""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from vmp.factors import NormalFactor
from vmp.families import Normal

from ..helpers import randomize


class QuarticNormal(Normal):
    name = "QuarticNormal"
    unit_base_measure = False
    latent = False

    @classmethod
    def log_base_measure(cls, x, event_shape):
        return -(np.asarray(x, float) - 0.5) ** 4


class QuarticFactor(NormalFactor):
    child = QuarticNormal


class QuarticNode(vmp.Normal):
    family = QuarticNormal
    factor_cls = QuarticFactor


class ChildFactor(NormalFactor):
    roles = {"mean": QuarticNormal, "precision": NormalFactor.roles["precision"]}


class ChildNode(vmp.Normal):
    factor_cls = ChildFactor


X = np.array([0.3, -1.2, 0.7, 2.0, -0.1])
W = np.array([1.0, 2.0, 0.5, 1.0, 3.0])
MASK = np.array([True, True, False, True, True])


def _model(cls, **kw):
    with vmp.Model("m") as model:
        mu = vmp.Normal("mu", 0.0, 1.0)
        with vmp.Plate("n", X.size):
            cls("x", mean=mu, precision=2.0, observed=X, **kw)
    randomize(model, np.random.default_rng(0))
    return model


@pytest.mark.parametrize("kw", [{}, {"weights": W}, {"mask": MASK}, {"weights": W, "mask": MASK}],
                         ids=["plain", "weights", "mask", "weights-mask"])
def test_the_bound_adds_the_weighted_log_base_measure_of_the_data(kw):
    plain, quartic = _model(vmp.Normal, **kw), _model(QuarticNode, **kw)
    w = kw.get("weights", np.ones(X.size)) * kw.get("mask", np.ones(X.size, bool))
    assert quartic.elbo() == pytest.approx(plain.elbo() - np.sum(w * (X - 0.5) ** 4), rel=1e-12)


def test_a_family_with_a_base_measure_cannot_be_latent():
    with vmp.Model("m"), pytest.raises(vmp.GraphError, match="node 'x'.*must be observed"):
        QuarticNode("x", mean=0.0, precision=1.0)
    with pytest.raises(TypeError, match="latent = False"):
        type("Bad", (Normal,), {"unit_base_measure": False})


def test_masked_entries_of_an_observed_only_node_with_children_are_refused():
    with vmp.Model("m") as model:
        with vmp.Plate("n", X.size):
            x = QuarticNode("x", mean=0.0, precision=1.0, observed=X, mask=MASK)
            ChildNode("y", mean=x, precision=1.0, observed=X)
    with pytest.raises(vmp.DataError, match="node 'x'.*cannot be latent"):
        model.compile()
