"""The Gaussian chain's factor, term by term, against Monte Carlo with concentrated q's.

tests/test_factor_monte_carlo.py checks every factor's bound term against draws from random q's;
with the chain's many terms (a transition's quadratic in A and Q, the inputs' in B) one term off
by 20% hides in that noise (so does the off-diagonal part of a learned map's E[(C x)(C x)^T]
under a full R, ``gaussian_chain_random_map``). Here every hidden node's q is concentrated (Gaussians' and chains'
natural parameters scaled by 100, Gammas and Wisharts with 100 degrees of freedom at their mean),
which shrinks the Monte Carlo error on E_q[log p(x | A, Q, B, ...)] but not the terms: the
factor must lie within 5 standard errors of the reference (tests/mc_reference.py: paths drawn
from the chain's precision formed whole, log-densities written out) and each of its terms times
1.2 must lie more than 10 standard errors away somewhere.
"""
from __future__ import annotations

import numpy as np
from tests import mc_reference as mc
from tests.helpers import randomize
from tests.rule_cases import CASES
from vmp.factors.terms import Term
from vmp.graph.compiled import CompiledFactor

CONCENTRATION = 100.0
DRAWS = 20000
CHAIN_CASES = ["gaussian_chain", "gaussian_chain_ard", "gaussian_chain_switching", "gaussian_chain_known_dynamics",
               "gaussian_chain_random_map"]


def _concentrate(model) -> None:
    for node in model.nodes.values():
        if node.observed:
            continue
        f, c = node.family, CONCENTRATION
        if f.name in ("Gaussian", "GaussianMarkovChain", "CategoricalMarkovChain", "Dirichlet"):
            node.set_natural(tuple(c * a for a in node.natural))
        elif f.name == "Wishart":
            p = f.parameters(node.natural)
            mean = p["dof"][..., None, None] * p["scale"]
            node.set_natural(f.natural_from(dof=np.full(p["dof"].shape, c), scale=mean / c))
        elif f.name == "Gamma":
            p = f.parameters(node.natural)
            node.set_natural(f.natural_from(shape=np.full(p["shape"].shape, c), rate=c * p["rate"] / p["shape"]))


def _setup(case):
    model, child = CASES[case]()
    randomize(model, np.random.default_rng(11))
    _concentrate(model)
    node = model[child]
    weight = node.factor_weights()
    eff = np.ones(node.plate_shape) if weight is None else np.broadcast_to(weight, node.plate_shape)
    mean, se = mc.expected_log_density(node, DRAWS, seed=5)
    return node, weight, eff * mean, eff * se


def test_the_factor_and_each_of_its_terms_against_monte_carlo(monkeypatch):
    """Each case within 5 standard errors; each term that contributes to a case (the factor
    changes when it is broken) seen there, and every term of both factor classes seen in some case."""
    seen: dict = {}
    for case in CHAIN_CASES:
        node, weight, reference, se = _setup(case)
        ours = CompiledFactor(node).elog(weight, per_element=True, cached=False)
        assert np.all(np.abs(ours - reference) <= 5 * se + 1e-9), (case, np.abs(ours - reference) / se)
        cls = type(node.factor)
        original = cls.terms
        for i in range(len(original(node.factor))):
            def broken(self, i=i):
                terms = original(self)
                return terms[:i] + [Term(1.2 * terms[i].coef, terms[i].ops, terms[i].consts)] + terms[i + 1:]

            monkeypatch.setattr(cls, "terms", broken)
            off = CompiledFactor(node).elog(weight, per_element=True, cached=False)
            monkeypatch.setattr(cls, "terms", original)
            if np.all(np.abs(off - ours) <= 1e-12):
                continue  # the term is zero in this case (a zero mean, no padding, log|I| = 0)
            assert np.any(np.abs(off - reference) > 10 * se), f"{case}: term {i} of {cls.__name__} times 1.2"
            seen.setdefault(cls, set()).add(i)
    for cls, found in seen.items():
        assert found == set(range(len(cls.terms(_any_factor(cls))))), (cls.__name__, found)


def _any_factor(cls):
    for case in CHAIN_CASES:
        model, child = CASES[case]()
        if type(model[child].factor) is cls:
            return model[child].factor
