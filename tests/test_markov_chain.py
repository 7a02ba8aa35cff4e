"""The hidden Markov chain: forward-backward, its messages and bound against brute-force
enumeration of every path, and HMM fits on synthetic sequences."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linear_sum_assignment

import vmp
import vmp.models
from vmp.families import CategoricalMarkovChain as Chain
from vmp.graph.leaves import Context
from vmp.inference.engine import Engine


def brute(unary: np.ndarray, pairwise: np.ndarray) -> dict:
    """Every path of one chain (T, K): log Z, marginals, pair marginals, entropy, counts."""
    t_len, k = unary.shape
    paths = np.array(list(itertools.product(range(k), repeat=t_len)))
    steps = np.arange(t_len)
    with np.errstate(invalid="ignore"):
        score = unary[steps, paths].sum(1) + pairwise[steps[:-1], paths[:, :-1], paths[:, 1:]].sum(1)
    top = score.max()
    w = np.exp(score - top)
    log_z = np.log(w.sum()) + top
    w /= w.sum()
    marg = np.zeros((t_len, k))
    pairs = np.zeros((t_len, k, k))
    for t in range(t_len):
        np.add.at(marg[t], paths[:, t], w)
        if t < t_len - 1:
            np.add.at(pairs[t], (paths[:, t], paths[:, t + 1]), w)
    nz = w > 0
    return {"log_z": log_z, "marginals": marg, "pairs": pairs, "entropy": -np.sum(w[nz] * np.log(w[nz])),
            "counts": pairs.sum(0)}


def _potentials(rng, t_len=6, k=3, impossible=True):
    unary = rng.normal(size=(t_len, k)) * 2
    pairwise = rng.normal(size=(t_len, k, k))
    if impossible:
        pairwise[:, 0, 2] = -np.inf  # 0 -> 2 never happens
    return unary, pairwise


@pytest.mark.parametrize("impossible", [False, True])
def test_forward_backward_equals_enumeration_of_every_path(impossible):
    rng = np.random.default_rng(0)
    unary, pairwise = _potentials(rng, impossible=impossible)
    want = brute(unary, pairwise)
    marg, pairs = Chain.moments((unary, pairwise))
    a = Chain.log_normalizer((unary, pairwise))
    assert np.allclose(marg, want["marginals"], atol=1e-12)
    assert np.allclose(pairs, want["pairs"], atol=1e-12)
    assert np.all(pairs[-1] == 0)
    assert a[0] == pytest.approx(want["log_z"], rel=1e-12) and np.all(a[1:] == 0)
    assert Chain.entropy((unary, pairwise)).sum() == pytest.approx(want["entropy"], rel=1e-10)
    a_minus_inner = (a - Chain.inner((unary, pairwise), (marg, pairs))).sum()
    assert a_minus_inner == pytest.approx(want["entropy"], rel=1e-10)
    assert Chain.valid((unary, pairwise)).all()


def test_many_chains_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(1)
    unary = rng.normal(size=(4, 2, 6, 3))
    pairwise = rng.normal(size=(4, 2, 6, 3, 3))
    marg, pairs = Chain.moments((unary, pairwise))
    for i, j in itertools.product(range(4), range(2)):
        want = brute(unary[i, j], pairwise[i, j])
        assert np.allclose(marg[i, j], want["marginals"], atol=1e-12)
        assert np.allclose(pairs[i, j], want["pairs"], atol=1e-12)


def test_moments_are_the_gradient_of_the_log_normalizer():
    rng = np.random.default_rng(2)
    natural = _potentials(rng, impossible=False)
    moments = Chain.moments(natural)
    h = 1e-6
    for c in range(2):
        d = rng.normal(size=natural[c].shape)
        up = [n.copy() for n in natural]
        down = [n.copy() for n in natural]
        up[c] += h * d
        down[c] -= h * d
        fd = (Chain.log_normalizer(tuple(up)).sum() - Chain.log_normalizer(tuple(down)).sum()) / (2 * h)
        # the last pairwise potential couples nothing: its statistic is zero
        assert fd == pytest.approx(np.sum(moments[c] * d), rel=1e-6)


def test_large_potentials_stay_finite():
    """Emission log-likelihoods of thousands of nats: log space keeps every marginal finite."""
    rng = np.random.default_rng(3)
    unary = rng.normal(size=(50, 40, 4)) * 3000.0
    pairwise = np.log(rng.dirichlet(np.full(4, 0.01), size=(50, 40, 4)) + 1e-300)
    marg, pairs = Chain.moments((unary, pairwise))
    assert np.all(np.isfinite(marg)) and np.all(np.isfinite(pairs))
    assert np.allclose(marg.sum(-1), 1.0)
    assert np.all(np.isfinite(Chain.log_normalizer((unary, pairwise))))


def test_underflowing_steps_are_recomputed_exactly():
    """Every path must switch through transitions of e^-800 while the emissions pin the states:
    the shifted products underflow to 0 and those entries take the exact log-sum-exp."""
    unary = np.where(np.arange(6)[:, None] % 2 == np.arange(3), 0.0, -3000.0)
    pairwise = np.broadcast_to(np.array([[0.0, -800.0, 0.0], [-800.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), (6, 3, 3))
    want = brute(unary, pairwise)
    marg, pairs = Chain.moments((unary, pairwise))
    assert Chain.log_normalizer((unary, pairwise))[0] == pytest.approx(want["log_z"], rel=1e-12)
    assert np.allclose(marg, want["marginals"], atol=1e-12)
    assert np.allclose(pairs, want["pairs"], atol=1e-12)


def test_samples_follow_the_pair_marginals():
    rng = np.random.default_rng(4)
    unary, pairwise = _potentials(rng, t_len=4)
    n = 40000
    paths = Chain.sample((np.broadcast_to(unary, (n, 4, 3)), np.broadcast_to(pairwise, (n, 4, 3, 3))), rng)
    onehot, pairs = Chain.statistics(paths, (3,))
    want = Chain.moments((unary, pairwise))
    assert np.abs(onehot.mean(0) - want[0]).max() < 0.015
    assert np.abs(pairs.mean(0) - want[1]).max() < 0.015
    assert not np.any(pairs[:, :, 0, 2])  # impossible transitions never drawn


def test_valid_domain_and_deterministic_sampling():
    rng = np.random.default_rng(13)
    unary, pairwise = rng.normal(size=(4, 5, 3)), rng.normal(size=(4, 5, 3, 3))
    assert Chain.valid((unary, pairwise)).all()
    bad_u, bad_p = unary.copy(), pairwise.copy()
    bad_u[0, 1, 2] = np.nan
    bad_u[1, 3] = -np.inf  # no possible state at that step
    bad_p[2, 0, 0, 1] = np.inf
    ok = Chain.valid((bad_u, bad_p))
    assert ok.tolist() == [[v] * 5 for v in (False, False, False, True)]  # a chain is valid as a whole
    draws = [Chain.sample((unary, pairwise), np.random.default_rng(5)) for _ in range(2)]
    assert np.array_equal(draws[0], draws[1]) and draws[0].shape == (4, 5)


# ----- the node in a model: q(z), the bound and the messages against enumeration ------------
LENGTHS = [6, 4]


def _model(rng):
    k, t_len = 3, 6
    mask = np.arange(t_len) < np.array(LENGTHS)[:, None]
    mask[0, 2] = False  # a missing step inside a chain: the chain still runs through it
    x = rng.normal(size=(2, t_len)) * 2
    with vmp.Model("hmm") as m:
        pi0 = vmp.Dirichlet("pi0", rng.uniform(0.5, 2.0, size=k))
        with vmp.Plate("K", k):
            a = vmp.Dirichlet("A", rng.uniform(0.5, 2.0, size=(k, k)))
            mu = vmp.Normal("mu", 0.0, 0.5)
        with vmp.Plate("S", 2), vmp.Plate("T", t_len):
            vmp.CategoricalMarkovChain("z", pi0, a, lengths=LENGTHS)
            vmp.Normal("x", mu[m["z"]], 1.0, observed=x, mask=mask)
    return m, x, mask


def _optimal_chain(rng):
    """A model fitted a little, then q(z) updated once given the others (its optimum)."""
    m, x, mask = _model(rng)
    m.fit(iterations=3, seed=0)
    engine = Engine(m)
    state = m.state
    state = state.updated({"z": engine.coordinate(state, m["z"])})
    return m, engine, state, x, mask


def _hand_potentials(state, x, mask, s):
    """The expected log-potentials of chain s, written out: E[log pi0] at t = 0, E[log A] between
    steps, E[log N(x_t | mu_k, 1)] where x_t is observed."""
    log_pi0 = state.moments["pi0"][0]
    log_a = state.moments["A"][0]
    m1, m2 = state.moments["mu"]
    length = LENGTHS[s]
    emit = -0.5 * (x[s, :length, None] ** 2 - 2 * x[s, :length, None] * m1 + m2) - 0.5 * np.log(2 * np.pi)
    unary = emit * mask[s, :length, None]
    unary[0] += log_pi0
    return unary, np.broadcast_to(log_a, (length, 3, 3))


def test_q_of_each_chain_and_the_bound_equal_enumeration():
    m, engine, state, x, mask = _optimal_chain(np.random.default_rng(5))
    marg, pairs = state.moments["z"]
    log_z = 0.0
    for s, length in enumerate(LENGTHS):
        want = brute(*_hand_potentials(state, x, mask, s))
        assert np.allclose(marg[s, :length], want["marginals"], atol=1e-10)
        assert np.allclose(pairs[s, :length - 1], want["pairs"][:-1], atol=1e-10)
        assert np.allclose(marg[s, length:], 1.0 / 3)  # padding: uniform, no children, independent
        assert np.allclose(pairs[s, length - 1:-1], marg[s, length - 1:-1, :, None] * marg[s, length:, None, :])
        log_z += want["log_z"]
    # the bound = sum_s log Z_s + the terms of pi0, A, mu (their priors and entropies)
    ctx = Context(state=state)
    others = sum(float(engine.factors[n].elog(cached=False, ctx=ctx)) + engine.entropy(state, m[n])
                 for n in ("pi0", "A", "mu"))
    assert engine.elbo(state, cached=False) - others == pytest.approx(log_z, rel=1e-10)


def test_messages_to_the_transition_rows_and_initial_state_are_expected_counts():
    m, engine, state, x, mask = _optimal_chain(np.random.default_rng(6))
    m.state = state
    counts, first = np.zeros((3, 3)), np.zeros(3)
    for s in range(len(LENGTHS)):
        want = brute(*_hand_potentials(state, x, mask, s))
        counts += want["counts"]
        first += want["marginals"][0]
    f = engine.factors["z"]
    assert np.allclose(f.messages(m["A"])[0], counts, atol=1e-10)
    assert np.allclose(f.messages(m["pi0"])[0], first, atol=1e-10)


def test_a_constant_transition_matrix_and_initial_distribution():
    a = np.array([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]])
    pi0 = np.array([0.5, 0.5, 0.0])
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1, 5)) * 2
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", np.array([-2.0, 0.0, 2.0]), 1e8)
        with vmp.Plate("S", 1), vmp.Plate("T", 5):
            z = vmp.CategoricalMarkovChain("z", pi0, a)
            vmp.Normal("x", mu[z], 1.0, observed=x)
    m.fit(iterations=20, seed=0)
    emit = -0.5 * (x[0, :, None] - np.array([-2.0, 0.0, 2.0])) ** 2
    with np.errstate(divide="ignore"):
        unary = emit + np.r_[[np.log(pi0)], np.zeros((4, 3))]
        want = brute(unary, np.broadcast_to(np.log(a), (5, 3, 3)))
    assert np.allclose(z.mean[0], want["marginals"], atol=1e-6)
    assert np.all(np.isfinite(m.elbo()))


def test_known_emissions_as_an_observed_node_are_exact():
    """Fixed emission parameters declared as an observed node (gated like any node): q(z) is the
    exact posterior over paths, and the bound is log p(x) plus the node's own log prior."""
    a = np.array([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.0, 0.3, 0.7]])
    pi0 = np.array([0.5, 0.5, 0.0])
    means = np.array([-2.0, 0.0, 2.0])
    x = np.random.default_rng(7).normal(size=(1, 5)) * 2
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 1.0, observed=means)
        with vmp.Plate("S", 1), vmp.Plate("T", 5):
            z = vmp.CategoricalMarkovChain("z", pi0, a)
            vmp.Normal("x", mu[z], 1.0, observed=x)
    res = m.fit(iterations=20, seed=0)
    emit = stats.norm(means, 1.0).logpdf(x[0, :, None])
    with np.errstate(divide="ignore"):
        want = brute(emit + np.r_[[np.log(pi0)], np.zeros((4, 3))], np.broadcast_to(np.log(a), (5, 3, 3)))
    assert np.allclose(z.mean[0], want["marginals"], atol=1e-12)
    assert res.final_elbo - stats.norm(0.0, 1.0).logpdf(means).sum() == pytest.approx(want["log_z"], rel=1e-12)


# ----- fits ----------------------------------------------------------------------------------
TRUE_A = np.array([[0.90, 0.05, 0.05], [0.10, 0.80, 0.10], [0.05, 0.15, 0.80]])
TRUE_PI = np.array([0.5, 0.3, 0.2])


def simulate(rng, n_sequences, lengths, a=TRUE_A, pi=TRUE_PI):
    """State paths (S, T_max) of a Markov chain, -1 past each sequence's end."""
    lengths = np.broadcast_to(lengths, (n_sequences,))
    z = np.full((n_sequences, int(lengths.max())), -1)
    z[:, 0] = rng.choice(len(pi), n_sequences, p=pi)
    for t in range(1, z.shape[1]):
        c = np.cumsum(a[z[:, t - 1]], 1)
        z[:, t] = np.where(t < lengths, (rng.random((n_sequences, 1)) > c).sum(1), -1)
    return z


def _matched(truth: np.ndarray, found: np.ndarray, k: int) -> np.ndarray:
    """found's state for each true state (the best one-to-one match)."""
    confusion = np.zeros((k, k))
    np.add.at(confusion, (truth, found), 1)
    return linear_sum_assignment(-confusion)[1]


def test_gaussian_hmm_recovers_transitions_and_states():
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(8)
    z = simulate(rng, 200, 100)
    means = np.array([-2.0, 0.0, 2.5])
    x = means[z] + 0.6 * rng.normal(size=z.shape)
    model = vmp.models.hmm(list(x), 3)
    result = model.fit(iterations=100, seed=0)
    assert result.converged
    found = model["z"].mean.argmax(-1)
    assert adjusted_rand_score(z.ravel(), found.ravel()) > 0.9
    p = _matched(z.ravel(), found.ravel(), 3)
    assert np.abs(model["A"].mean[np.ix_(p, p)] - TRUE_A).max() < 0.05
    assert np.allclose(model["mu"].mean[p, 0], means, atol=0.05)


def test_categorical_hmm_on_sequences_of_different_lengths():
    rng = np.random.default_rng(9)
    lengths = rng.integers(20, 81, size=150)
    z = simulate(rng, 150, lengths)
    b = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.05, 0.05, 0.45, 0.45]])
    c = np.cumsum(b[np.maximum(z, 0)], -1)
    y = (rng.random(z.shape + (1,)) > c).sum(-1)
    model = vmp.models.hmm([y[s, :n] for s, n in enumerate(lengths)], 3, emission="categorical")
    result = model.fit(iterations=300, seed=0)  # the default start, off the symmetric saddle
    assert result.converged and result.iterations > 10
    found = model["z"].mean.argmax(-1)
    valid = z >= 0
    p = _matched(z[valid], found[valid], 3)
    assert np.abs(model["A"].mean[np.ix_(p, p)] - TRUE_A).max() < 0.06
    assert np.abs(model["B"].mean[p] - b).max() < 0.06
    assert np.allclose(model["z"].mean[~valid], 1.0 / 3)


def test_poisson_hmm_recovers_rates_and_transitions():
    """Poisson emissions gated by the chain (Beal 2003's HMM with count outputs)."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(11)
    lengths = rng.integers(30, 61, size=120)
    z = simulate(rng, 120, lengths)
    rates = np.array([1.0, 6.0, 15.0])
    y = rng.poisson(rates[np.maximum(z, 0)])
    model = vmp.models.hmm([y[s, :n] for s, n in enumerate(lengths)], 3, emission="poisson")
    result = model.fit(iterations=200, seed=0)
    assert result.converged and np.all(np.diff(result.elbo) > -1e-6 * np.abs(result.elbo[1:]))
    found = model["z"].mean.argmax(-1)
    valid = z >= 0
    assert adjusted_rand_score(z[valid], found[valid]) > 0.85
    p = _matched(z[valid], found[valid], 3)
    assert np.allclose(model["lam"].mean[p], rates, rtol=0.05)
    assert np.abs(model["A"].mean[np.ix_(p, p)] - TRUE_A).max() < 0.06


def test_minibatch_over_sequences():
    rng = np.random.default_rng(10)
    z = simulate(rng, 200, 50)
    x = np.array([-2.0, 0.0, 2.5])[z] + 0.5 * rng.normal(size=z.shape)
    model = vmp.models.hmm(list(x), 3)
    model.fit(method="stochastic", subsample=vmp.Minibatch("sequences", 20), iterations=150, seed=0,
              step=vmp.RobbinsMonro(1.0, 0.7))
    model.infer_locals()
    found = model["z"].mean.argmax(-1)
    p = _matched(z.ravel(), found.ravel(), 3)
    assert np.abs(model["A"].mean[np.ix_(p, p)] - TRUE_A).max() < 0.06


def test_a_minibatch_draws_whole_chains_not_steps():
    x = np.random.default_rng(0).normal(size=(6, 10))
    model = vmp.models.hmm(list(x), 2)
    with pytest.raises(vmp.GraphError, match="'z' is one CategoricalMarkovChain along plate 'time'"):
        model.fit(method="stochastic", subsample=vmp.Minibatch("time", 3), iterations=2)


def test_the_same_seed_gives_the_same_bits():
    rng = np.random.default_rng(11)
    x = np.array([-1.0, 1.0, 3.0])[simulate(rng, 20, 30)] + rng.normal(size=(20, 30))
    bounds = [vmp.models.hmm(list(x), 3).fit(iterations=10, seed=3).final_elbo for _ in range(2)]
    assert bounds[0] == bounds[1]


# ----- declaration errors name the node --------------------------------------------------------
def _declare(**kw):
    args = dict(initial=np.full(3, 1 / 3), transition=np.full((3, 3), 1 / 3))
    args.update(kw)
    with vmp.Model("e"):
        with vmp.Plate("S", 2), vmp.Plate("T", 4):
            return vmp.CategoricalMarkovChain("z", **args)


@pytest.mark.parametrize("kw,error,words", [
    (dict(lengths=[4, 5]), vmp.DataError, "lengths must be integers in [1, 4]"),
    (dict(lengths=[4, 0]), vmp.DataError, "lengths"),
    (dict(lengths=[4.0, 2.0]), vmp.DataError, "lengths"),
    (dict(lengths=[4, 2, 1]), vmp.ShapeError, "one per chain"),
    (dict(weights=np.arange(8.0).reshape(2, 4)), vmp.DataError, "weights must be one per chain"),
    (dict(transition=np.full((3, 3), 0.5)), vmp.HyperparameterError, "transition must sum to 1 over the last axis"),
    (dict(initial=np.array([0.5, 0.6, -0.1])), vmp.HyperparameterError, "initial must be finite and non-negative"),
])
def test_declaration_errors(kw, error, words):
    with pytest.raises(error, match="node 'z'") as info:
        _declare(**kw)
    assert words in str(info.value)


def test_a_transition_node_needs_k_rows():
    with vmp.Model("e"):
        with vmp.Plate("rows", 2):
            a = vmp.Dirichlet("A", np.ones(3))
        with vmp.Plate("S", 2), vmp.Plate("T", 4):
            with pytest.raises(vmp.ShapeError, match="node 'z'.*K = 3 rows"):
                vmp.CategoricalMarkovChain("z", np.full(3, 1 / 3), a)


def test_a_chain_needs_a_time_plate_and_is_never_observed():
    with vmp.Model("e"):
        with pytest.raises(vmp.GraphError, match="node 'z'.*time steps"):
            vmp.CategoricalMarkovChain("z", np.full(3, 1 / 3), np.full((3, 3), 1 / 3))
        with vmp.Plate("T", 4), pytest.raises(vmp.GraphError, match="node 'z'.*observed"):
            vmp.CategoricalMarkovChain("z", np.full(3, 1 / 3), np.full((3, 3), 1 / 3), observed=np.zeros(4, int))


# ----- reading: diagram and summary --------------------------------------------------------------
def test_diagram_draws_the_chain_as_one_node_with_a_self_loop():
    model = vmp.models.hmm([np.arange(5.0), np.arange(3.0)], 2)
    source = model.render().source
    assert source.count("CategoricalMarkovChain") == 1
    assert 'z -> z [label=" time: t -> t+1"' in source
    assert '"rows(A)" -> z [label=" transition"]' in source


def test_summary_shows_the_expected_transitions_within_the_chains():
    rng = np.random.default_rng(12)
    z = simulate(rng, 30, rng.integers(5, 40, size=30))
    x = np.array([-3.0, 0.0, 3.0])[np.maximum(z, 0)] + 0.3 * rng.normal(size=z.shape)
    model = vmp.models.hmm([x[s, z[s] >= 0] for s in range(30)], 3)
    result = model.fit(iterations=50, seed=0)
    counts = model["z"].transitions.sum(0)
    valid = z >= 0
    assert counts.sum() == pytest.approx(np.sum(valid[:, 1:] & valid[:, :-1]))  # padding counts nothing
    assert "expected transitions per step" in result.summary(model)


def test_path_enumeration_refuses_long_chains():
    """to_scipy enumerates K^T paths: a chain too long for that is refused, not silently slow."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="paths"):
        Chain.to_scipy(Chain.random_natural(rng, (20,), (3,)))
    d = Chain.to_scipy(Chain.random_natural(rng, (2, 4), (3,)))
    assert d.entropy().shape == (2,) and d.mean.shape == (2, 4, 3)
