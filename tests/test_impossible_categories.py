"""A constant probability vector with a zero (a category the model rules out) as the parent of a
Categorical or Multinomial: the bound stays finite where no element falls in that category (a
latent z, a masked or zero-weight observation), instead of 0 * log 0 = NaN.

References: the evidence of a mixture with fixed parameters by enumeration of z over the allowed
categories (scipy densities), and the same model without the ruled-out element.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import vmp

PI = np.array([0.3, 0.0, 0.7])
Y = np.array([0, 4, 1, 9, 3])
LAM = np.array([0.8, 2.0, 4.0])


def test_a_latent_categorical_with_a_ruled_out_category_has_the_enumerated_evidence():
    with vmp.Model("m") as model:
        with vmp.Plate("K", 3):
            rate = vmp.Gamma("lam", 2.0, 1.0, observed=LAM)
        with vmp.Plate("N", Y.size):
            z = vmp.Categorical("z", PI)
            vmp.Poisson("y", rate[z], observed=Y)
    bound = model.fit(iterations=3, tol=0.0, seed=0).elbo[-1]
    allowed = np.flatnonzero(PI)
    lik = stats.poisson.logpmf(Y[:, None], LAM)
    evidence = logsumexp([sum(np.log(PI[k]) + lik[n, k] for n, k in enumerate(zs))
                          for zs in itertools.product(allowed, repeat=Y.size)])
    assert bound == pytest.approx(evidence + stats.gamma.logpdf(LAM, 2.0).sum(), rel=1e-10)
    assert np.all(z.parameters["probabilities"][:, 1] == 0.0)


def _observed(**kw):
    with vmp.Model("m") as model:
        vmp.Dirichlet("other", np.ones(2))  # something to fit
        with vmp.Plate("N", 4):
            vmp.Categorical("x", PI, observed=[0, 1, 2, 2], **kw)
    return model.fit(iterations=2, seed=0).elbo[-1]


@pytest.mark.parametrize("kw", [dict(mask=[True, False, True, True]), dict(weights=[1.0, 0.0, 1.0, 1.0])],
                         ids=["masked", "weight-0"])
def test_an_observation_in_a_ruled_out_category_that_does_not_count_adds_nothing(kw):
    assert _observed(**kw) == pytest.approx(np.log(0.3) + 2 * np.log(0.7), rel=1e-12)


def test_a_masked_count_vector_in_a_ruled_out_category_adds_nothing():
    with vmp.Model("m") as model:
        vmp.Dirichlet("other", np.ones(2))
        with vmp.Plate("N", 2):
            vmp.Multinomial("x", PI, observed=[[1, 0, 1], [0, 2, 1]], mask=[True, False])
    bound = model.fit(iterations=2, seed=0).elbo[-1]
    assert bound == pytest.approx(stats.multinomial.logpmf([1, 0, 1], 2, PI), rel=1e-12)


@pytest.mark.parametrize("resize", [False, True])
def test_refused_new_data_leave_the_model_as_it_was(resize):
    """set_data with data the model refuses (a category of constant probability 0) raises and
    changes nothing: the mask stays (it was dropped, so the masked element read its fill value
    as data), the plate keeps its size; a refit gives the bits of the fit before."""
    with vmp.Model("m") as model:
        with vmp.Plate("d", 4):
            vmp.Categorical("x", np.array([0.5, 0.3, 0.0, 0.2]), observed=np.array([0, 1, 2, 3]),
                            mask=np.array([True, True, False, True]))
    before = model.fit(iterations=2, tol=0, seed=0).elbo
    new = np.array([0, 2, 1, 1, 0, 3]) if resize else np.array([0, 2, 1, 1])
    with pytest.raises(vmp.DataError, match="constant probability is 0"):
        model.set_data("x", new)
    assert model.plates["d"].size == 4 and model["x"].plate_shape == (4,)
    assert np.array_equal(model["x"].mask, [True, True, False, True])
    assert np.array_equal(model.fit(iterations=2, tol=0, seed=0).elbo, before)
