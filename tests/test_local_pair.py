"""The exp-space loop of a conjugate pair of locals (vmp/inference/local_pair.py) against the
generic local loop: the same iterates, the same count of observed elements read, and the generic
loop wherever the structure or exp-space does not hold."""
import numpy as np
import pytest

import vmp
from models import gaussian_mixture, lda
from vmp.inference import local_pair, steps


def _corpus(docs=40, vocabulary=30, seed=1, shuffle=False):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(vocabulary, 0.1), size=3)
    d, w, c = [], [], []
    for doc in range(docs):
        words = rng.choice(vocabulary, size=rng.integers(5, 40), p=rng.dirichlet(np.full(3, 0.3)) @ topics)
        uniq, counts = np.unique(words, return_counts=True)
        d += [doc] * uniq.size
        w += uniq.tolist()
        c += counts.tolist()
    d, w, c = np.array(d), np.array(w), np.array(c, float)
    if shuffle:  # tokens not grouped by document
        perm = rng.permutation(d.size)
        d, w, c = d[perm], w[perm], c[perm]
    return d, w, c


def _masked_lda(d, w, c, k=3, v=30):
    """LDA with one word in five missing: those tokens' z are barren (they send theta nothing)."""
    with vmp.Model("masked") as model:
        with vmp.Plate("topics", k):
            beta = vmp.Dirichlet("beta", alpha=np.full(v, 0.1))
        with vmp.Plate("documents", int(d.max()) + 1):
            theta = vmp.Dirichlet("theta", alpha=np.full(k, 0.2))
        with vmp.Plate("tokens", d.size):
            z = vmp.Categorical("z", theta[d], weights=c)
            vmp.Categorical("w", beta[z], observed=w, weights=c, mask=np.arange(d.size) % 5 != 0)
    return model


def _fitted(shuffle=False, masked=False):
    model = (_masked_lda if masked else lambda *a: lda(*a, 3, n_words=30))(*_corpus(shuffle=shuffle))
    fit = model.stochastic(subsample=vmp.Minibatch("documents", 8), iterations=5, seed=0, progress=False)
    fit.run()
    return fit.engine, fit.plan, fit.state


def _same(a, b, rtol=1e-10):
    (ctx_a, nat_a, acc_a), (ctx_b, nat_b, acc_b) = a, b
    assert acc_a == acc_b
    assert set(nat_a) == set(nat_b) == {"theta", "z"}
    for name in nat_a:
        for x, y in zip(nat_a[name], nat_b[name]):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-12, err_msg=f"natural of {name}")
        for x, y in zip(ctx_a.overrides[name], ctx_b.overrides[name]):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=1e-14, err_msg=f"moments of {name}")


def _spy(monkeypatch, engine, plan) -> list:
    """What the pair's ``run`` returns, call by call (None: it fell back to the generic loop)."""
    pair, returned = steps._pair(engine, plan), []
    run = pair.run
    monkeypatch.setattr(pair, "run", lambda *a: returned.append(run(*a)) or returned[-1])
    return returned


@pytest.mark.parametrize("corpus", ["grouped", "shuffled", "masked"])
@pytest.mark.parametrize("weight", ["none", "number", "per document"])
def test_the_pair_loop_gives_the_generic_iterates(monkeypatch, corpus, weight):
    engine, plan, state = _fitted(shuffle=corpus == "shuffled", masked=corpus == "masked")
    rows = np.arange(0, 40, 3)
    w = {"none": None, "number": 0.5, "per document": np.linspace(0.3, 1.0, rows.size)}[weight]
    returned = _spy(monkeypatch, engine, plan)
    fused = steps.local_step(engine, plan, state, plan.context(rows), w)
    assert len(returned) == 1 and returned[0] is not None, "the pair loop ran"
    generic = steps.local_step(engine, plan, state, plan.context(rows), w, fused=False)
    _same(fused, generic)
    # the per-document bound terms: z's entropy from the loop's remembered normalizer
    terms = [steps.local_terms(engine, plan, ctx, nat, rows.size, w) for ctx, nat, _ in (fused, generic)]
    np.testing.assert_allclose(terms[0], terms[1], rtol=1e-10)


def test_a_loop_stopped_by_the_iteration_cap_matches_too():
    engine, plan, state = _fitted()
    plan.local_iterations = 3
    rows = np.arange(0, 40, 2)
    _same(steps.local_step(engine, plan, state, plan.context(rows)),
          steps.local_step(engine, plan, state, plan.context(rows), fused=False))


def test_underflow_in_exp_space_falls_back_to_the_generic_loop(monkeypatch):
    engine, plan, state = _fitted()
    rows = np.arange(0, 40, 4)
    ref = steps.local_step(engine, plan, state, plan.context(rows), fused=False)
    monkeypatch.setattr(local_pair, "TINY", np.inf)  # every normalizer counts as underflowed
    returned = _spy(monkeypatch, engine, plan)
    _same(steps.local_step(engine, plan, state, plan.context(rows)), ref, rtol=0)
    assert returned == [None]


def test_the_pair_is_found_only_where_it_applies():
    engine, plan, _ = _fitted()
    pair = local_pair.find(engine, plan)
    assert pair.y.name == "theta" and pair.z.name == "z" and pair.comp == 0
    x = np.random.default_rng(0).normal(size=(60, 2))
    mixture = gaussian_mixture(x, 3).stochastic(subsample=vmp.Minibatch("data", 10), iterations=1, progress=False)
    assert local_pair.find(mixture.engine, mixture.plan) is None  # one local: nothing to pair
