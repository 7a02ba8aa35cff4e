"""The scaled forward-backward (vmp/families/markov_chain.py) against brute-force enumeration of
every path, against the log-space recursions it replaced (copied here as an independent
reference), and against finite differences of its log Z; which chains it sends to log space;
and HMM fits that give the same q and bound with either recursion."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
import vmp.families.markov_chain as chain
import vmp.models
from tests.test_markov_chain import brute
from vmp.factors.markov_chain import IMPOSSIBLE


# ----- the log-space recursions of vmp before the scaled ones (commit ec3e5ef), as reference --
def _lse(v, axis):
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(v - m), axis=axis)) + np.squeeze(m, axis)


def log_space(unary, pairwise):
    """log alpha, log beta by log-sum-exp (Rabiner 1989 eqs. (19)-(27) in log space), every term."""
    t_len = unary.shape[-2]
    log_a, log_b = np.empty_like(unary), np.zeros_like(unary)
    log_a[..., 0, :] = unary[..., 0, :]
    for t in range(1, t_len):
        log_a[..., t, :] = unary[..., t, :] + _lse(log_a[..., t - 1, :, None] + pairwise[..., t - 1, :, :], -2)
    for t in range(t_len - 2, -1, -1):
        ahead = unary[..., t + 1, :] + log_b[..., t + 1, :]
        log_b[..., t, :] = _lse(pairwise[..., t, :, :] + ahead[..., None, :], -1)
    log_z = _lse(log_a[..., -1, :], -1)
    z = log_z[..., None, None]
    with np.errstate(invalid="ignore"):
        marginals = np.exp(log_a + log_b - z)
        pairs = np.zeros(pairwise.shape)
        pairs[..., :-1, :, :] = np.exp(log_a[..., :-1, :, None] + pairwise[..., :-1, :, :]
                                       + (unary[..., 1:, :] + log_b[..., 1:, :])[..., None, :] - z[..., None])
    return marginals, pairs, log_z


# ----- cases ----------------------------------------------------------------------------------
def _random(rng, s, t_len, k, shared, scale=2.0):
    unary = rng.normal(size=(s, t_len, k)) * scale
    pairwise = rng.normal(size=(t_len, k, k)) if shared else rng.normal(size=(s, t_len, k, k))
    return unary, np.broadcast_to(pairwise, (s, t_len, k, k)).copy()


def _impossible(rng, s, t_len, k, shared):
    unary, pairwise = _random(rng, s, t_len, k, shared)
    pairwise[..., 0, k - 1] = IMPOSSIBLE  # 0 -> K-1 never happens
    pairwise[..., 1, 0] = -np.inf
    unary[:, 2, 1] = IMPOSSIBLE  # state 1 impossible at t = 2
    return unary, pairwise


def _padded(rng, s, t_len, k, shared):
    """Chains of lengths 1 .. T: past its length a step is uniform (-log K) and uncoupled (0)."""
    unary, pairwise = _random(rng, s, t_len, k, shared)
    lengths = np.arange(s) % t_len + 1
    after = np.arange(t_len) >= lengths[:, None]
    unary[after] = -np.log(k)
    pairwise[np.arange(t_len) >= lengths[:, None] - 1] = 0.0
    return unary, pairwise


def _peaked(rng, s, t_len, k, shared):
    """Emissions of |U| ~ 1e3 whose states differ by less than ~600 nats at each step."""
    unary, pairwise = _random(rng, s, t_len, k, shared)
    return unary * 40.0 - 1000.0, pairwise


def _tiny_z(rng, s, t_len, k, shared):
    """Every path below e^-100000: Z underflows, log Z does not."""
    unary, pairwise = _random(rng, s, t_len, k, shared)
    return unary - 1e5, pairwise - 2e3


CASES = {"random": _random, "impossible": _impossible, "padded": _padded, "peaked": _peaked, "tiny_z": _tiny_z}


def _flagged(unary, pairwise):
    return chain._scaled(unary, pairwise)[3]


# ----- against every path -----------------------------------------------------------------------
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_scaled_recursion_equals_enumeration_of_every_path(case, shared):
    rng = np.random.default_rng(sorted(CASES).index(case))
    unary, pairwise = CASES[case](rng, 6, 5, 3, shared)
    assert not _flagged(unary, pairwise).any()  # the probability-space path answers, no fallback
    marg, pairs, log_z = chain.forward_backward(unary, pairwise)
    for i in range(len(unary)):
        want = brute(unary[i], pairwise[i])
        assert log_z[i] == pytest.approx(want["log_z"], rel=1e-12)
        assert np.allclose(marg[i], want["marginals"], rtol=1e-10, atol=1e-14)
        assert np.allclose(pairs[i], want["pairs"], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("t_len,k", [(1, 1), (1, 3), (4, 1), (1, 2)])
def test_one_step_and_one_state(t_len, k):
    rng = np.random.default_rng(5)
    unary, pairwise = _random(rng, 3, t_len, k, False)
    marg, pairs, log_z = chain.forward_backward(unary, pairwise)
    for i in range(3):
        want = brute(unary[i], pairwise[i])
        assert log_z[i] == pytest.approx(want["log_z"], rel=1e-12)
        assert np.allclose(marg[i], want["marginals"], atol=1e-14) and np.allclose(pairs[i], want["pairs"], atol=1e-14)
    assert marg.shape == (3, t_len, k) and pairs.shape == (3, t_len, k, k) and log_z.shape == (3,)


def test_plates_broadcast_and_a_single_chain():
    rng = np.random.default_rng(6)
    unary, pairwise = _random(rng, 4, 5, 3, False)
    one = chain.forward_backward(unary[0], pairwise[0])
    want = brute(unary[0], pairwise[0])
    assert one[2] == pytest.approx(want["log_z"], rel=1e-12) and np.allclose(one[0], want["marginals"], atol=1e-14)
    grid = chain.forward_backward(unary.reshape(2, 2, 5, 3), pairwise[0])  # one pairwise for all chains
    assert grid[0].shape == (2, 2, 5, 3) and grid[1].shape == (2, 2, 5, 3, 3)
    assert np.allclose(grid[0].reshape(4, 5, 3)[0], want["marginals"], atol=1e-14)


# ----- underflow: the chains that go to log space ------------------------------------------------
def _switching():
    """Every path must switch through transitions of e^-800 while the emissions pin the states."""
    unary = np.where(np.arange(6)[:, None] % 2 == np.arange(3), 0.0, -3000.0)
    pairwise = np.broadcast_to(np.array([[0.0, -800.0, 0.0], [-800.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), (6, 3, 3))
    return unary, pairwise


def _hidden(gap):
    """Two paths, all state 0 or all state 1 (state 2 and switching impossible): state 1 starts
    e^-gap below state 0, then gains 400 nats a step, and wins by 1200 - gap."""
    unary = np.array([[0.0, -gap, IMPOSSIBLE]] + [[-400.0, 0.0, IMPOSSIBLE]] * 3)
    pairwise = np.broadcast_to(np.where(np.eye(3) > 0, 0.0, IMPOSSIBLE), (4, 3, 3))
    return unary, pairwise


UNDERFLOWS = {
    "switching": _switching(),
    "hidden behind a zero": _hidden(760.0),  # exp(-760) is 0: a zero where a possible state leads
    "hidden below the floor": _hidden(700.0),  # exp(-700) is 1e-304, normal but below _FLOOR
    "every path through a flushed transition": (  # exp(-800) is 0: c_1 = 0
        np.array([[0.0, IMPOSSIBLE, IMPOSSIBLE], [0.0, 0.0, 0.0]]),
        np.broadcast_to(np.array([[-800.0, IMPOSSIBLE, IMPOSSIBLE], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), (2, 3, 3))),
    "a state below the floor": (np.array([[0.0, -700.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), np.zeros((3, 3, 3))),
    "far apart states": (np.array([[0.0, -1e3, -2e3], [-5e2, 0.0, -3e3], [0.0, 0.0, 0.0]]), np.zeros((3, 3, 3))),
}


def test_log_normalizer_alone_equals_enumeration():
    """``chain_log_normalizer`` (the forward recursion alone, with its checks) on every case and
    every underflow, one chain per case."""
    rng = np.random.default_rng(12)
    for case in CASES:
        unary, pairwise = CASES[case](rng, 6, 5, 3, False)
        got = chain.chain_log_normalizer(unary, pairwise)
        assert np.allclose(got, [brute(u, p)["log_z"] for u, p in zip(unary, pairwise)], rtol=1e-12, atol=0)
    for unary, pairwise in UNDERFLOWS.values():
        got = chain.chain_log_normalizer(unary, pairwise)
        assert got == pytest.approx(brute(unary, pairwise)["log_z"], rel=1e-12)


@pytest.mark.parametrize("name", UNDERFLOWS)
def test_chains_that_underflow_are_recomputed_in_log_space(name):
    """Among ordinary chains, the one that underflows in probability space (and only that one)
    is flagged, and the answer for every chain is the enumeration's."""
    rng = np.random.default_rng(7)
    hard_u, hard_p = UNDERFLOWS[name]
    t_len = hard_u.shape[0]
    unary, pairwise = _random(rng, 4, t_len, 3, False)
    unary[2], pairwise[2] = hard_u, hard_p
    assert _flagged(unary, pairwise).tolist() == [False, False, True, False]
    marg, pairs, log_z = chain.forward_backward(unary, pairwise)
    assert np.all(np.isfinite(marg)) and np.all(np.isfinite(pairs)) and np.all(np.isfinite(log_z))
    for i in range(4):
        want = brute(unary[i], pairwise[i])
        assert log_z[i] == pytest.approx(want["log_z"], rel=1e-12)
        assert np.allclose(marg[i], want["marginals"], atol=1e-12)
        assert np.allclose(pairs[i], want["pairs"], atol=1e-12)


def test_a_state_hidden_by_underflow_wins_the_chain():
    """exp(-760) is 0 in probability space, which would put every step in state 0; log space
    gives state 1, the enumeration's answer."""
    unary, pairwise = _hidden(760.0)
    marg, _, log_z = chain.forward_backward(unary, pairwise)
    assert np.allclose(marg[:, 1], 1.0) and log_z == pytest.approx(-760.0, rel=1e-12)


# ----- against the log-space recursions ----------------------------------------------------------
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("case", ["random", "impossible", "padded"])
def test_equals_the_log_space_recursions_on_long_chains(case, shared):
    """To 1e-12 relative. Where the potentials are large (peaked, tiny_z) the log-space values
    themselves err by about |log alpha| * eps (1e-11 to 1e-9 relative here): those cases are
    compared below with the reference run on shifted potentials."""
    rng = np.random.default_rng(11 + sorted(CASES).index(case))
    unary, pairwise = CASES[case](rng, 40, 150, 4, shared)
    assert not _flagged(unary, pairwise).any()
    marg, pairs, log_z = chain.forward_backward(unary, pairwise)
    want = log_space(unary, pairwise)
    assert np.allclose(log_z, want[2], rtol=1e-12, atol=0)
    assert np.allclose(marg, want[0], rtol=1e-12, atol=1e-15)
    assert np.allclose(pairs, want[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("case", ["peaked", "tiny_z"])
def test_shifts_of_a_step_leave_the_moments_and_move_log_z(case, shared):
    """U_t + a_t and P_t + b_t give the same q and log Z + sum a_t + sum_{t < T-1} b_t: large
    potentials against the log-space recursions on the shifted-back ones, to 1e-12 relative."""
    rng = np.random.default_rng(31)
    unary, pairwise = CASES[case](rng, 40, 150, 4, shared)
    a, b = unary.max(-1, keepdims=True), pairwise.max((-2, -1), keepdims=True)
    marg, pairs, log_z = chain.forward_backward(unary, pairwise)
    want = log_space(unary - a, pairwise - b)
    assert np.allclose(log_z, want[2] + a.sum((1, 2)) + b[:, :-1].sum((1, 2, 3)), rtol=1e-12, atol=0)
    assert np.allclose(marg, want[0], rtol=1e-12, atol=1e-15)
    assert np.allclose(pairs, want[1], rtol=1e-12, atol=1e-15)


def test_large_potentials_equal_the_log_space_recursions():
    """Emissions of thousands of nats: most chains go to log space, all agree with it."""
    rng = np.random.default_rng(3)
    unary = rng.normal(size=(30, 40, 4)) * 3000.0
    pairwise = np.log(rng.dirichlet(np.full(4, 0.01), size=(30, 40, 4)) + 1e-300)
    got, want = chain.forward_backward(unary, pairwise), log_space(unary, pairwise)
    assert np.allclose(got[2], want[2], rtol=1e-12)
    assert np.allclose(got[0], want[0], atol=1e-12) and np.allclose(got[1], want[1], atol=1e-12)


# ----- the moments are the gradient of log Z -----------------------------------------------------
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("case", ["random", "impossible", "peaked"])
def test_moments_are_the_gradient_of_log_z(case, shared):
    rng = np.random.default_rng(21)
    unary, pairwise = CASES[case](rng, 3, 7, 3, shared)
    marg, pairs, _ = chain.forward_backward(unary, pairwise)
    h = 1e-6
    for arg, moment in ((0, marg), (1, pairs)):
        natural = [unary, pairwise]
        d = rng.normal(size=natural[arg].shape) * (natural[arg] > -1e3)  # not the log 0 entries
        if not shared and arg == 1:
            d[..., -1, :, :] = 0.0  # keeps the chains' pairwise potentials shared or not
        up, down = list(natural), list(natural)
        up[arg], down[arg] = natural[arg] + h * d, natural[arg] - h * d
        fd = (chain.forward_backward(*up)[2] - chain.forward_backward(*down)[2]) / (2 * h)
        assert np.allclose(fd, np.sum(moment * d, axis=tuple(range(1, d.ndim))), rtol=1e-6, atol=1e-7)


# ----- HMM fits: the same q and bound with either recursion --------------------------------------
def _fits(monkeypatch, build):
    """(bound, q(z)'s marginals) after 15 iterations with the log-space recursions, then the scaled."""
    out = []
    for fb, log_z in ((log_space, lambda u, p: log_space(u, p)[2]), (chain.forward_backward, chain.chain_log_normalizer)):
        monkeypatch.setattr(chain, "forward_backward", fb)
        monkeypatch.setattr(chain, "chain_log_normalizer", log_z)
        model = build()
        out.append((model.fit(iterations=15, tol=0, seed=0).final_elbo, model["z"].mean))
    return out


def _sequences():
    rng = np.random.default_rng(8)
    z = rng.integers(3, size=(6, 40))
    x = 3.0 * z + rng.normal(size=z.shape)
    return [x[i, : 40 - 5 * i] for i in range(6)]


def _constant_transitions():
    """A constant transition matrix with zeros (IMPOSSIBLE potentials)."""
    a = np.array([[0.8, 0.2, 0.0], [0.1, 0.8, 0.1], [0.2, 0.0, 0.8]])
    x = np.random.default_rng(9).normal(size=(4, 30)) + np.repeat(np.arange(3.0), 10)
    with vmp.Model("c") as m:
        with vmp.Plate("K", 3):
            mu = vmp.Normal("mu", 0.0, 0.1)
        with vmp.Plate("S", 4), vmp.Plate("T", 30):
            z = vmp.CategoricalMarkovChain("z", np.full(3, 1 / 3), a)
            vmp.Normal("x", mu[z], 1.0, observed=x)
    return m


@pytest.mark.parametrize("build", [lambda: vmp.models.hmm(_sequences(), 3), _constant_transitions],
                         ids=["padded hmm", "constant transitions with a zero"])
@pytest.mark.filterwarnings("ignore::vmp.ConvergenceWarning")
def test_fits_give_the_same_q_and_bound(monkeypatch, build):
    (elbo_ref, z_ref), (elbo, z) = _fits(monkeypatch, build)
    assert elbo == pytest.approx(elbo_ref, rel=1e-12)
    assert np.allclose(z, z_ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("t_len", [3000, 10000])
def test_a_long_chain_in_log_space_keeps_its_digits(t_len):
    """A third state 800 nats below the others at every step sends the chain to the log-space
    recursions (its exp underflows) and changes log Z by exp(-800): nothing in double
    precision. So log Z and the moments equal those of the two-state chain, which probability
    space computes to its last digits. Unnormalized log alpha lost them (1.25e-4 off at T = 10^4,
    1.5e-6 at T = 3,000)."""
    rng = np.random.default_rng(5)
    u2, p2 = rng.normal(size=(t_len, 2)), rng.normal(size=(t_len, 2, 2))
    p2[-1] = 0.0
    u3 = np.concatenate([u2, np.full((t_len, 1), -800.0)], axis=1)
    p3 = np.zeros((t_len, 3, 3))
    p3[:, :2, :2] = p2
    m2, pairs2, z2 = chain.forward_backward(u2, p2)
    m3, pairs3, z3 = chain.forward_backward(u3, p3)
    assert abs(z3 - z2) < 1e-9 * t_len ** 0.5
    assert np.max(np.abs(m3[:, :2] - m2)) < 1e-12 and np.max(m3[:, 2]) < 1e-300
    assert np.max(np.abs(pairs3[:, :2, :2] - pairs2)) < 1e-12
