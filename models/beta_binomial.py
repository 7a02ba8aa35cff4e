"""Beta-Bernoulli and Beta-Binomial models (Gelman et al., BDA3 sections 2.4 and 5.3). With one
group p is shared; the converged bound is the exact log evidence (the pair is conjugate)."""
from __future__ import annotations

import numpy as np

import vmp

from . import _checks


def _groups(name: str, groups, n: int) -> tuple[np.ndarray, int]:
    if groups is None:
        return np.zeros(n, np.int64), 1
    g = _checks.indices(name, "groups", groups)
    _checks.same_length(name, data=np.empty(n), groups=g)
    return g, int(g.max()) + 1


def _binary(name: str, successes, trials, prior, groups, weights) -> vmp.Model:
    x = _checks.values(name, "successes", successes)
    if x.ndim != 1:
        raise vmp.ShapeError(f"{name}: successes must be a 1-D array, got shape {x.shape}")
    _checks.positive(name, a=prior[0], b=prior[1])
    g, k = _groups(name, groups, x.size)
    with vmp.Model(name) as model:
        with vmp.Plate("groups", k):
            p = vmp.Beta("p", *prior)
        with vmp.Plate("data", x.size):
            if trials is None:
                vmp.Bernoulli("x", p[g], observed=x, weights=weights)
            else:
                vmp.Binomial("x", trials, p[g], observed=x, weights=weights)
    return model


def beta_bernoulli(outcomes: np.ndarray, *, prior: tuple[float, float] = (1.0, 1.0), groups=None,
                   weights=None, name: str = "beta_bernoulli") -> vmp.Model:
    """Binary ``outcomes`` (N values in {0, 1}) with a success probability per group:

        p_g ~ Beta(a, b)            (a, b) = prior; one group unless ``groups`` (N labels) is given
        x_n ~ Bernoulli(p_{g_n})    ``weights`` multiply each row's factor

    Nodes: ``p`` (plate "groups"), ``x`` (observed, plate "data")."""
    return _binary(name, outcomes, None, prior, groups, weights)


def beta_binomial(successes: np.ndarray, trials, *, prior: tuple[float, float] = (1.0, 1.0), groups=None,
                  weights=None, name: str = "beta_binomial") -> vmp.Model:
    """``successes`` out of ``trials`` (N non-negative integers each, or one number of trials
    for all), with a success probability per group:

        p_g ~ Beta(a, b)                   (a, b) = prior; one group unless ``groups`` is given
        x_n ~ Binomial(trials_n, p_{g_n})

    Nodes: ``p`` (plate "groups"), ``x`` (observed, plate "data")."""
    return _binary(name, successes, np.asarray(trials, float), prior, groups, weights)
