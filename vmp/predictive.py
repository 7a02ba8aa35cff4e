"""Posterior predictive distributions of observed nodes, and imputation of masked entries.

The predictive of a node x with parents pa is p(x~ | data) ~= int p(x~ | pa) q(pa) dpa, for every
element of x's plates, under the fitted q (a fresh replicate of each datapoint given the q of its
own locals, e.g. its z_n; after ``model.set_data`` the held-out rows).

- Mean and (co)variance are exact under q for a Gaussian or Normal x (law of total variance,
  E[x] = E[m], Cov[x] = Cov_q[m] + E_q[Lambda^-1]) and for a Categorical x (E[p]); other
  families get Monte Carlo estimates from ``draws`` joint draws of q.
- ``to_scipy()`` is exact where a closed form exists: a Gaussian (linear-Gaussian mean, known
  precision), a Student-t (known mean, Gamma or Wishart precision: Bishop PRML eqs. 2.159,
  2.161), a Categorical. Otherwise it is moment-matched (``method`` says which): a Student-t with
  the precision's degrees of freedom and the exact covariance for a Gaussian mean with a random
  precision, a Gaussian for the rest (gated mixtures, products ``dot(u, v)``, a precision scaled by a
  random c, ``tau * lam``, whose variance reads E[1/c] E[1/tau]).
- ``sample(n, rng)`` is always exact: ancestral draws from q, then from p(x | pa).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import GraphError
from .predictive_distribution import Predictive
from .graph.draws import align, draw, full, plates_of
from .graph.expectations import FirstTwo, Inverse, Probabilities, expect, is_linear, is_point
from .graph.nodes import Categorical as CategoricalNode


def predict(model, name: str, draws: int = 1000, seed: int | None = 0) -> Predictive:
    """The posterior predictive of every element of node ``name`` under the current q."""
    node = model[name]
    model.compile()
    if "omega" in node.parents:  # a logit link: its predictive reads psi, not the auxiliary
        from .predictive_logit import predict_logit

        return predict_logit(node, draws, seed)
    _need_parents(node)
    sampler = _sampler(node)
    roles = set(node.parents)
    if roles == {"mean", "precision"}:
        return _location_scale(node, sampler)
    if isinstance(node, CategoricalNode):  # a Multinomial's counts are not Categorical(E[p])
        return _categorical(node, sampler)
    return _monte_carlo(node, sampler, draws, seed)


def prior_predict(model, name: str, draws: int = 1000, seed: int | None = 0) -> Predictive:
    """The prior predictive of node ``name`` (its marginal under the prior, every other node
    integrated out; :mod:`vmp.graph.prior`): mean and variance estimated from ``draws`` joint
    draws of the prior (class probabilities for a Categorical), ``sample(n)`` exact draws; no
    scipy object (method "monte-carlo"). Absent elements (weight 0) are NaN."""
    from .graph.prior import sample_prior

    node = model[name]

    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        return sample_prior(model, n, rng)[name]
    x = sample(int(draws), np.random.default_rng(seed)).astype(float)
    if isinstance(node, CategoricalNode):  # a Categorical's draws as one-hot: E[x] the class probabilities
        k = node.event_shape[0]
        x = np.where(np.isnan(x)[..., None], np.nan, np.nan_to_num(x)[..., None] == np.arange(k))
    with np.errstate(invalid="ignore"):
        mean, var = x.mean(0), x.var(0)
    return Predictive(name, mean, var, None, "monte-carlo", None, sample)


def impute(model, name: str, draws: int = 1000, seed: int | None = 0) -> Predictive:
    """The posterior of the masked entries of node ``name``: q itself where the node has children
    (its masked entries are latent and fitted), else the predictive (they integrate out). Arrays
    are over the masked entries in row-major order: where ``model[name].mask`` is False, except
    at the elements of weight 0, absent rather than missing (padded steps) (for a mask over
    plates + event, single coordinates, each with its marginal under q(x_m | x_o); no
    covariance)."""
    node = model[name]
    model.compile()
    if node.mask is None:
        raise GraphError(f"node '{name}' has no mask= : nothing to impute")
    where = np.nonzero(~node.mask & ~_absent(node))
    full = _posterior(node) if node.clamp is not None else predict(model, name, draws, seed)
    cov = None if full.covariance is None or node.partial else full.covariance[where]
    pick = None if full._scipy is None else \
        (lambda index: full._scipy(where if index is None else tuple(w[index] for w in where)))
    var = None if full.variance is None else full.variance[where]
    if node.partial:  # single coordinates: their marginals under q(x_m | x_o)
        from scipy import stats

        pick = (lambda index: stats.norm(full.mean[where] if index is None else full.mean[where][index],
                                         np.sqrt(var if index is None else var[index])))
    return Predictive(name, full.mean[where], var, cov, full.method, pick,
                      lambda n, rng: full._sample(n, rng)[(slice(None),) + where])


# ----- the pieces -------------------------------------------------------------------------
def _absent(node) -> np.ndarray:
    """The masked elements of weight 0 of a node without children (``missing.Clamp.absent``: a
    padded step), laid out to broadcast against the node's mask."""
    if node.clamp is not None:
        absent = node.clamp.absent
    else:
        absent = None if node.multiplicity is None else node.multiplicity == 0
    if absent is None:
        return np.zeros((), bool)
    return absent.reshape(absent.shape + (1,) * (node.mask.ndim - absent.ndim))


def _need_parents(node) -> None:
    """A clear error when a hidden node under x's parents has no q (no fit yet, or a minibatch
    fit's local node)."""
    from .graph.expressions import Expression, random_nodes

    for expr in node.parents.values():
        if isinstance(expr, Expression):
            for parent in random_nodes(expr):
                if not parent.observed:
                    parent._need_posterior()


def _sampler(node) -> Callable:
    """Ancestral draws: q's joint draws of the parents, then x ~ p(x | parents) elementwise."""
    def sample(n: int, rng: np.random.Generator) -> np.ndarray:
        memo: dict = {}
        values = {role: align(draw(expr, n, rng, memo), plates_of(expr, node.plates), node.plates)
                  for role, expr in node.parents.items()}
        return node.family.sample(full(node.conditional(values), node, n), rng)
    return sample


def _location_scale(node, sampler) -> Predictive:
    """x ~ N(m, Lambda^-1): E[x] = E[m], Cov[x] = E[m m^T] - E[m]E[m]^T + E[Lambda^-1]."""
    mean_expr, prec_expr = node.parents["mean"], node.parents["precision"]
    m1, m2 = expect(mean_expr, FirstTwo(), node.plates)
    (inverse,) = expect(prec_expr, Inverse(), node.plates)
    multivariate = bool(node.event_shape)
    if multivariate:
        if inverse.ndim == m1.ndim:  # ARD: the diagonal
            inverse = inverse[..., :, None] * np.eye(node.event_shape[0])
        cov = m2 - m1[..., :, None] * m1[..., None, :] + inverse
        var = np.diagonal(cov, axis1=-2, axis2=-1).copy()
    else:
        cov, var = None, m2 - m1 * m1 + inverse
    dof = _dof(prec_expr, node)
    if dof is None:
        exact = is_point(prec_expr) and is_linear(mean_expr)
        scipy = _gaussian(m1, cov, var)
    else:
        exact = is_point(mean_expr)
        shape = (cov if multivariate else var) * _factor(dof, multivariate)
        scipy = _student(dof, m1, shape, multivariate)
    return Predictive(node.name, m1, var, cov, "exact" if exact else "moment-matched", scipy, sampler)


def _dof(expr, node):
    """Degrees of freedom of the Student-t marginal over a Gamma or Wishart precision (a node,
    gathered or scaled), or None for a known precision or one without a t marginal."""
    from .graph.expressions import Gather, Scaled
    from .graph.node import Node

    inner = expr
    while isinstance(inner, (Gather, Scaled)):
        inner = inner.node
    if not isinstance(inner, Node) or inner.observed or not hasattr(inner.family, "t_marginal"):
        return None
    inner._need_posterior()
    if inner.clamp is not None:
        return None
    nu = inner.family.t_marginal(inner.natural)[0]
    if isinstance(expr, Gather) or (isinstance(expr, Scaled) and isinstance(expr.node, Gather)):
        g = expr if isinstance(expr, Gather) else expr.node
        nu, plates = np.take(nu, g.index, axis=0), g.plates
    else:
        plates = inner.plates
    from .graph.expectations import lay

    return lay(nu, plates, node.plates)


def _factor(dof: np.ndarray, multivariate: bool) -> np.ndarray:
    """The t's scale from its covariance: S = Cov (nu - 2) / nu (PRML eq. 2.163)."""
    f = np.where(dof > 2, (dof - 2) / np.where(dof > 2, dof, 1.0), np.nan)
    return f[..., None, None] if multivariate else f


def _gaussian(mean, cov, var) -> Callable:
    def scipy(index):
        from scipy import stats

        pick = (lambda a: a) if index is None else (lambda a: a[index])
        if cov is None:
            return stats.norm(pick(mean), np.sqrt(pick(var)))
        if pick(mean).ndim != 1:
            raise GraphError("give to_scipy(index) of one element for a multivariate predictive over plates")
        return stats.multivariate_normal(pick(mean), pick(cov))
    return scipy


def _student(dof, mean, shape, multivariate: bool) -> Callable:
    def scipy(index):
        from scipy import stats

        pick = (lambda a: a) if index is None else (lambda a: a[index])
        if not multivariate:
            return stats.t(pick(dof), loc=pick(mean), scale=np.sqrt(pick(shape)))
        if pick(mean).ndim != 1:
            raise GraphError("give to_scipy(index) of one element for a multivariate predictive over plates")
        return stats.multivariate_t(pick(mean), pick(shape), df=float(pick(dof)))
    return scipy


def _categorical(node, sampler) -> Predictive:
    """x ~ Categorical(p): the predictive is the Categorical(E[p]) (exact)."""
    (p,) = expect(node.parents["probabilities"], Probabilities(), node.plates)

    def scipy(index):
        from scipy import stats

        return stats.multinomial(1, p if index is None else p[index])
    return Predictive(node.name, p, p * (1 - p), None, "exact", scipy, sampler)


def _monte_carlo(node, sampler, draws: int, seed) -> Predictive:
    """Mean and variance estimated from ``draws`` exact draws; no scipy object."""
    x = sampler(draws, np.random.default_rng(seed)).astype(float)
    return Predictive(node.name, x.mean(0), x.var(0), None, "monte-carlo", None, sampler)


def _posterior(node) -> Predictive:
    """q(x) itself, as a Predictive (masked entries of a node with children)."""
    natural = node.natural
    params = node.parameters
    mean = node.mean
    cov = params.get("covariance")
    var = np.diagonal(cov, axis1=-2, axis2=-1).copy() if cov is not None else params.get("variance")
    if var is None and node.family.marginal(natural) is not None:
        var = node.family.marginal(natural).var()

    def scipy(index):
        picked = tuple(a if index is None else a[index] for a in natural)
        return node.family.marginal(picked) if index is None else node.family.to_scipy(picked)
    return Predictive(node.name, mean, var, cov, "exact", scipy, lambda n, rng: node._draw(n, rng, {}))
