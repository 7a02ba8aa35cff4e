"""Streams: streaming VB (Broderick et al. 2013) against the conjugate posterior on all data and a
hand-written SDA-Bayes; forgetting against its recursion; population VB (McInerney et al. 2015)
against a hand-written SVI; checkpoint and resume between chunks; bad input."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import special

import vmp
from vmp.errors import DataError, GraphError, OptionError, ShapeError

CHUNKS = 10


def _split(x, k=CHUNKS):
    return np.array_split(x, k)


def _stream(build, data, **options):
    """The stream of ``build(n)``'s model over ``data`` in CHUNKS chunks; its globals' q."""
    model = build(len(data) // CHUNKS)
    stream = model.stream("data", **options)
    for rows in _split(data):
        stream.update({"x": rows})
    return stream


# ----- conjugate globals without locals: the batch posterior, in closed form ----------------
def _normal_mean(n):
    with vmp.Model("normal mean") as m:
        mu = vmp.Normal("mu", 0.5, 0.1)
        with vmp.Plate("data", n):
            vmp.Normal("x", mu, 2.0, observed=np.zeros(n))
    return m


def _gamma_precision(n):
    with vmp.Model("gamma precision") as m:
        tau = vmp.Gamma("tau", 2.0, 3.0)
        with vmp.Plate("data", n):
            vmp.Normal("x", 1.0, tau, observed=np.zeros(n))
    return m


def _dirichlet(n):
    with vmp.Model("dirichlet") as m:
        p = vmp.Dirichlet("p", [1.0, 2.0, 0.5])
        with vmp.Plate("data", n):
            vmp.Categorical("x", p, observed=np.zeros(n, int))
    return m


def _gamma_poisson(n):
    with vmp.Model("gamma poisson") as m:
        rate = vmp.Gamma("rate", 1.5, 0.5)
        with vmp.Plate("data", n):
            vmp.Poisson("x", rate, observed=np.zeros(n, int))
    return m


def _beta_bernoulli(n):
    with vmp.Model("beta bernoulli") as m:
        p = vmp.Beta("p", 2.0, 1.0)
        with vmp.Plate("data", n):
            vmp.Bernoulli("x", p, observed=np.zeros(n, int))
    return m


def _gaussian_wishart(n):
    with vmp.Model("gaussian wishart") as m:
        theta = vmp.GaussianWishart("theta", np.zeros(2), 0.5, 4.0, np.eye(2) * 0.3)
        with vmp.Plate("data", n):
            vmp.Gaussian("x", theta, observed=np.zeros((n, 2)))
    return m


def _normal_gamma(n):
    with vmp.Model("normal gamma") as m:
        theta = vmp.NormalGamma("theta", 0.5, 2.0, 3.0, 1.5)
        with vmp.Plate("data", n):
            vmp.Normal("x", theta, observed=np.zeros(n))
    return m


def _normal_gamma_posterior(x, m0=0.5, beta0=2.0, a0=3.0, b0=1.5):
    """The Normal-Gamma posterior (Bishop PRML (2.154) with (2.150)-(2.151)'s updates)."""
    n, xbar = len(x), x.mean()
    beta = beta0 + n
    rate = b0 + 0.5 * np.sum((x - xbar) ** 2) + beta0 * n * (xbar - m0) ** 2 / (2 * beta)
    return {"mean": (beta0 * m0 + n * xbar) / beta, "beta": beta, "shape": a0 + n / 2, "rate": rate}


def _conjugate_cases():
    rng = np.random.default_rng(1)
    x = rng.normal(1.3, 0.7, 200)
    xc = rng.integers(0, 3, 200)
    xp = rng.poisson(3.0, 200)
    xb = (rng.random(200) < 0.3).astype(int)
    xg = rng.normal(size=(200, 2)) @ np.array([[1.0, 0.4], [0.0, 0.5]]) + [1.0, -2.0]
    # the conjugate posterior's natural parameters on all the data (Bishop PRML 2.141-2.142,
    # 2.150-2.151, 2.41, 2.18-2.19 and 10.60-10.63 as natural parameters)
    normal = (0.1 * 0.5 + 2.0 * x.sum(), -0.5 * (0.1 + 2.0 * x.size))
    gamma = (-(3.0 + 0.5 * np.sum((x - 1.0) ** 2)), 2.0 - 1.0 + x.size / 2)
    dirichlet = (np.array([1.0, 2.0, 0.5]) - 1.0 + np.bincount(xc, minlength=3),)
    poisson = (-(0.5 + xp.size), 1.5 - 1.0 + xp.sum())
    beta = (2.0 - 1.0 + xb.sum(), 1.0 - 1.0 + xb.size - xb.sum())
    return [("normal mean", _normal_mean, x, "mu", normal),
            ("gamma precision", _gamma_precision, x, "tau", gamma),
            ("dirichlet categorical", _dirichlet, xc, "p", dirichlet),
            ("gamma poisson", _gamma_poisson, xp, "rate", poisson),
            ("beta bernoulli", _beta_bernoulli, xb, "p", beta),
            ("gaussian wishart", _gaussian_wishart, xg, "theta", None),
            ("normal gamma", _normal_gamma, x, "theta", _normal_gamma_posterior(x))]


def _gaussian_wishart_posterior(x, m0=np.zeros(2), beta0=0.5, nu0=4.0, w0=np.eye(2) * 0.3):
    """Bishop PRML (10.60)-(10.63) with responsibilities 1: (mean, beta, dof, scale)."""
    n, xbar = len(x), x.mean(0)
    s = (x - xbar).T @ (x - xbar) / n
    beta, nu = beta0 + n, nu0 + n
    m = (beta0 * m0 + n * xbar) / beta
    w_inv = np.linalg.inv(w0) + n * s + beta0 * n / (beta0 + n) * np.outer(xbar - m0, xbar - m0)
    return m, beta, nu, np.linalg.inv(w_inv)


@pytest.mark.parametrize("case", _conjugate_cases(), ids=lambda c: c[0])
def test_streaming_globals_only_is_the_batch_posterior(case):
    """Ten chunks give the conjugate posterior on all the data to 1e-12 (relative)."""
    _, build, data, name, want = case
    stream = _stream(build, data)
    got = stream.posterior[name]
    if want is None:
        fam = stream.model[name].family
        p = fam.parameters(got)
        m, beta, nu, scale = _gaussian_wishart_posterior(data)
        for a, b in ((p["mean"], m), (p["beta"], beta), (p["dof"], nu), (p["scale"], scale)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        return
    if isinstance(want, dict):
        p = stream.model[name].family.parameters(got)
        for key, value in want.items():
            np.testing.assert_allclose(p[key], value, rtol=1e-12)
        return
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # the model reads the last chunk's q: node.mean follows the stream
    assert stream.model[name].natural is not None


def test_chunk_bounds_sum_to_the_log_evidence():
    """With exact q (a conjugate global), chunk b's bound is log p(x_b | x_<b), so the bounds
    add up to log p(x) (the chain rule): the Gaussian marginal of all the data."""
    from scipy import stats

    x = np.random.default_rng(8).normal(0.7, 0.8, 60)
    model = _normal_mean(6)
    stream = model.stream("data")
    total = sum(stream.update({"x": rows}).final_elbo for rows in _split(x))
    cov = np.eye(x.size) / 2.0 + np.ones((x.size, x.size)) / 0.1
    want = stats.multivariate_normal(np.full(x.size, 0.5), cov).logpdf(x)
    assert total == pytest.approx(want, rel=1e-11)


# ----- forgetting: eta_{b+1} = f lambda_b + (1 - f) eta_0, by hand ----------------------------
def test_forgetting_follows_its_recursion():
    rng = np.random.default_rng(2)
    x = rng.normal(0.0, 1.0, 120) + np.repeat(np.arange(CHUNKS), 12) * 0.3
    f = 0.7
    stream = _stream(_normal_mean, x, forget=f)
    eta0 = np.array([0.1 * 0.5, -0.05])
    eta = eta0.copy()
    for rows in _split(x):
        lam = eta + [2.0 * rows.sum(), -0.5 * 2.0 * rows.size]
        eta = f * lam + (1 - f) * eta0
    np.testing.assert_allclose(np.array(stream.posterior["mu"], float), lam, rtol=1e-12)
    np.testing.assert_allclose(np.array(stream.prior()["mu"], float), eta, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::vmp.DriftWarning")
def test_forgetting_follows_a_drift():
    """A mean that moves by 0.5 per chunk: with forget=0.5 the final posterior mean is near the
    last chunk's, with forget=1 it lags at the average over all chunks."""
    rng = np.random.default_rng(3)
    centers = np.repeat(np.arange(CHUNKS) * 0.5, 30)
    x = centers + rng.normal(0.0, 0.5, centers.size)
    last = CHUNKS * 0.5 - 0.5
    errors = {}
    for f in (1.0, 0.5):
        stream = _stream(_normal_mean, x, forget=f)
        nat = stream.posterior["mu"]
        errors[f] = abs(nat[0] / (-2 * nat[1]) - last)
    assert errors[0.5] <= 0.5 * errors[1.0], errors


# ----- locals: a mixture against a hand-written SDA-Bayes (serial) ----------------------------
LAM = 1.0  # the mixture's known precision


def _mixture(n):
    with vmp.Model("mixture") as m:
        pi = vmp.Dirichlet("pi", [1.0, 1.0])
        with vmp.Plate("k", 2):
            mu = vmp.Normal("mu", np.array([-1.0, 1.0]), 0.5)
        with vmp.Plate("data", n):
            z = vmp.Categorical("z", pi)
            vmp.Normal("x", mu[z], LAM, observed=np.zeros(n))
    return m


def _mixture_data(n=300, seed=4):
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.4
    return np.where(z, rng.normal(-2.0, 1.0, n), rng.normal(2.5, 1.0, n))


def _responsibilities(x, a, nm):
    """q(z) given q(pi) = Dir(a) and q(mu_k) = N with natural parameters nm = (p m, -p/2)."""
    prec = -2.0 * nm[1]
    mean, second = nm[0] / prec, (nm[0] / prec) ** 2 + 1.0 / prec
    logr = special.digamma(a) - special.digamma(a.sum()) + LAM * np.outer(x, mean) - 0.5 * LAM * second
    logr -= logr.max(1, keepdims=True)
    r = np.exp(logr)
    return r / r.sum(1, keepdims=True)


def _globals_given(x, r, a0, nm0, alpha=None):
    """The globals' coordinate optimum from responsibilities r; with ``alpha`` the population
    target, the statistics scaled by alpha / |S| (McInerney et al. Alg. 1)."""
    s = 1.0 if alpha is None else alpha / len(x)
    a = a0 + s * r.sum(0)
    nm = (nm0[0] + s * LAM * (r * x[:, None]).sum(0), nm0[1] - s * 0.5 * LAM * r.sum(0))
    return a, nm


def _sda_bayes(chunks, sweeps):
    """Broderick et al.'s SDA-Bayes run serially, its primitive batch VB (pi, mu, then z per
    sweep; the first chunk from the prior with q(z) uniform, the others from the last
    posterior with q(z) given it)."""
    a, nm = np.array([1.0, 1.0]), (np.array([-1.0, 1.0]) * 0.5, np.full(2, -0.25))
    first = True
    for x in chunks:
        a0, nm0 = a, nm
        r = np.full((len(x), 2), 0.5) if first else _responsibilities(x, a, nm)
        for _ in range(sweeps):
            a, nm = _globals_given(x, r, a0, nm0)
            r = _responsibilities(x, a, nm)
        first = False
    return a, nm, r


def test_streaming_mixture_is_sda_bayes():
    x = _mixture_data()
    chunks = _split(x, 5)
    model = _mixture(len(chunks[0]))
    stream = model.stream("data", init="prior", iterations=4, tol=0.0)  # few sweeps: the start shows
    for rows in chunks:
        result = stream.update({"x": rows})
    a, nm, r = _sda_bayes(chunks, 4)
    np.testing.assert_allclose(stream.posterior["pi"][0], a - 1.0, rtol=1e-10)
    np.testing.assert_allclose(stream.posterior["mu"][0], nm[0], rtol=1e-10)
    np.testing.assert_allclose(stream.posterior["mu"][1], nm[1], rtol=1e-10)
    np.testing.assert_allclose(result.state.moments["z"][0], r, atol=1e-10)
    assert result.extra["stream"]["chunk"] == 5 and result.extra["stream"]["rows"] == len(chunks[-1])


# ----- population VB: a hand-written McInerney et al. Algorithm 1 -------------------------------
def test_population_vb_is_mcinerney_algorithm_1():
    x = _mixture_data(240, seed=5)
    chunks = _split(x, 4)
    alpha, tau, kappa = 500.0, 2.0, 0.7
    model = _mixture(len(chunks[0]))
    stream = model.stream("data", population=alpha, steps=2, init="prior",
                          step=vmp.RobbinsMonro(tau=tau, kappa=kappa))
    for rows in chunks:
        stream.update({"x": rows})
    a0, nm0 = np.array([1.0, 1.0]), (np.array([-1.0, 1.0]) * 0.5, np.full(2, -0.25))
    a, nm, t = a0, nm0, 0
    for rows in chunks:
        for _ in range(2):  # a step: the whole chunk as the minibatch
            t += 1
            rho = ((t + tau) / (1.0 + tau)) ** -kappa
            r = _responsibilities(rows, a, nm)
            a_hat, nm_hat = _globals_given(rows, r, a0, nm0, alpha)
            a = (1 - rho) * a + rho * a_hat
            nm = tuple((1 - rho) * u + rho * v for u, v in zip(nm, nm_hat))
    assert stream.step == t == 8
    np.testing.assert_allclose(stream.posterior["pi"][0], a - 1.0, rtol=1e-10)
    np.testing.assert_allclose(stream.posterior["mu"][0], nm[0], rtol=1e-10)
    np.testing.assert_allclose(stream.posterior["mu"][1], nm[1], rtol=1e-10)


@pytest.mark.parametrize("step", [vmp.Adaptive(), vmp.RobbinsMonro(tau=2.0, kappa=0.7)], ids=["adaptive", "robbins-monro"])
def test_population_vb_over_chunks_is_one_stochastic_run(step):
    """Chunks that all hold the same rows, each a minibatch: the stream's steps are those of one
    stochastic fit of the population posterior on the rows (the step counter and the schedule's
    state go on from chunk to chunk)."""
    from vmp.inference.population import Population

    x = _mixture_data(60, seed=6)
    stream = _mixture(60).stream("data", population=500.0, steps=3, init="prior", step=step)
    for _ in range(3):
        stream.update({"x": x})
    model = _mixture(60)
    model.set_data({"x": x})
    one = model.fit(method="stochastic", subsample=Population("data", 60, 500.0), iterations=9, init="prior",
                    step=step, progress=False)
    assert stream.step == one.state.step == 9
    for name in ("pi", "mu"):
        for a, b in zip(stream.posterior[name], one.state.natural[name]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ----- the stream's state: checkpoint and resume between chunks -------------------------------
@pytest.mark.parametrize("options", [{"forget": 0.8}, {"population": 300.0, "batch": 20},
                                     {"population": 300.0, "batch": 20, "step": vmp.Adaptive()}],
                         ids=["streaming", "population", "population-adaptive"])
def test_checkpoint_between_chunks_gives_the_same_bits(tmp_path, options):
    x = _mixture_data(200, seed=6)
    chunks = _split(x, 5)
    whole = _mixture(len(chunks[0])).stream("data", iterations=20, **options)
    for rows in chunks:
        last = whole.update({"x": rows})
    first = _mixture(len(chunks[0])).stream("data", iterations=20, **options)
    for rows in chunks[:2]:
        first.update({"x": rows})
    first.save(tmp_path / "stream.npz")
    resumed = _mixture(len(chunks[0])).stream("data", iterations=20, resume=tmp_path / "stream.npz", **options)
    for rows in chunks[2:]:
        again = resumed.update({"x": rows})
    assert resumed.chunks == whole.chunks == 5 and resumed.step == whole.step
    for name in ("pi", "mu"):
        for u, v in zip(whole.posterior[name], resumed.posterior[name]):
            assert np.array_equal(u, v)
    assert np.array_equal(last.elbo, again.elbo)
    assert resumed.bounds == whole.bounds


def test_resume_refuses_another_streams_file(tmp_path):
    stream = _normal_mean(10).stream("data")
    stream.update({"x": np.ones(10)})
    stream.save(tmp_path / "s.npz")
    with pytest.raises(OptionError, match="forget"):
        _normal_mean(10).stream("data", forget=0.5, resume=tmp_path / "s.npz")


# ----- bad input ---------------------------------------------------------------------------------
def test_bad_streams_and_chunks():
    model = _mixture(10)
    with pytest.raises(GraphError, match="plate"):
        model.stream("k")
    for forget in (0.0, 1.5, -1, True):
        with pytest.raises(OptionError, match="forget"):
            model.stream("data", forget=forget)
    for alpha in (0, -3.0, float("inf")):
        with pytest.raises(OptionError, match="population"):
            model.stream("data", population=alpha)
    with pytest.raises(OptionError, match="forget"):
        model.stream("data", forget=0.5, population=100.0)
    with pytest.raises(OptionError, match="batch"):
        model.stream("data", batch=10)
    with pytest.raises(OptionError, match="subsample"):
        model.stream("data", subsample=vmp.Minibatch("data", 5))
    stream = model.stream("data")
    with pytest.raises(ShapeError, match="node 'x'"):
        stream.update({"x": np.zeros((10, 2))})
    with pytest.raises(DataError, match="'x'"):
        stream.update({})
    with pytest.raises(DataError, match="'y'"):
        stream.update({"x": np.zeros(10), "y": np.zeros(10)})
    with pytest.warns(UserWarning, match="empty chunk"):
        assert stream.update({"x": np.zeros(0)}) is None
    assert stream.chunks == 0 and stream.posterior is None


def test_a_global_with_a_random_parent_is_refused():
    with vmp.Model("hierarchy") as m:
        tau = vmp.Gamma("tau", 1.0, 1.0)
        mu = vmp.Normal("mu", 0.0, tau)
        with vmp.Plate("data", 5):
            vmp.Normal("x", mu, 1.0, observed=np.zeros(5))
    with pytest.raises(GraphError, match="'mu' has random parent"):
        m.stream("data")
    m.stream("data", population=100.0)  # population VB keeps the declared prior


def test_a_change_in_the_data_is_reported():
    rng = np.random.default_rng(7)
    stream = _normal_mean(50).stream("data")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            stream.update({"x": rng.normal(1.0, 0.5, 50)})
    with pytest.warns(vmp.DriftWarning, match="chunk 6"):
        result = stream.update({"x": rng.normal(9.0, 0.5, 50)})
    assert result.extra["stream"]["drift"]


# ----- mixtures: the batch clustering, and a drift followed -------------------------------------
def _clusters(n, seed):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    return np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[z] + rng.normal(size=(n, 2))


def test_streamed_mixture_has_the_batch_clustering_and_bound():
    """Ten chunks of a 3-component mixture: the clustering of all the data under the stream's
    globals agrees with the batch fit's (adjusted Rand index >= 0.98) and its bound on all the
    data is within 0.5% of the batch fit's."""
    from sklearn.metrics import adjusted_rand_score

    from vmp.models import gaussian_mixture

    x = _clusters(12000, 9)
    batch = gaussian_mixture(x, 3)
    want = batch.fit().final_elbo
    model = gaussian_mixture(x[:1200], 3)
    stream = model.stream("data")
    for rows in _split(x):
        stream.update({"x": rows})
    got = stream.bound({"x": x})
    assert abs(got - want) <= 0.005 * abs(want)
    ari = adjusted_rand_score(batch["z"].mean.argmax(-1), model["z"].mean.argmax(-1))
    assert ari >= 0.98, ari


@pytest.mark.filterwarnings("ignore::vmp.DriftWarning")
def test_forgetting_follows_moving_mixture_centers():
    """Centers that move linearly over 50 chunks: with forget=0.9 the final centers' error is
    at most half of forget=1's."""
    import itertools

    from vmp.models import gaussian_mixture

    rng = np.random.default_rng(1)
    start = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    speed = np.array([[0.06, 0.06], [-0.04, 0.08], [0.08, -0.04]])
    chunks = []
    for c in range(50):
        z = rng.integers(0, 3, 100)
        chunks.append(start[z] + c * speed[z] + 0.7 * rng.normal(size=(100, 2)))
    final = start + 49 * speed
    error = {}
    for f in (1.0, 0.9):
        model = gaussian_mixture(chunks[0], 3)
        stream = model.stream("data", forget=f)
        for rows in chunks:
            stream.update({"x": rows})
        means = model["theta"].family.parameters(stream.posterior["theta"])["mean"]
        error[f] = min(np.mean(np.linalg.norm(means[list(p)] - final, axis=1))
                       for p in itertools.permutations(range(3)))
    assert error[0.9] <= 0.5 * error[1.0], error


def test_ctrl_c_during_a_chunk_loses_nothing():
    """SIGINT during a chunk's fit: KeyboardInterrupt, the stream still at the chunk before, and
    the chunk given again gives the bits of a stream that was never interrupted."""
    import os
    import signal

    x = _mixture_data(200, seed=10)
    chunks = _split(x, 4)
    whole = _mixture(50).stream("data", iterations=20)
    for rows in chunks:
        whole.update({"x": rows})
    hit = {"armed": False}

    def interrupt(t, fit):
        if hit["armed"] and t == 1:
            hit["armed"] = False
            os.kill(os.getpid(), signal.SIGINT)

    stream = _mixture(50).stream("data", iterations=20, callback=interrupt)
    for rows in chunks[:2]:
        stream.update({"x": rows})
    before = {k: tuple(a.copy() for a in v) for k, v in stream.posterior.items()}
    hit["armed"] = True
    with pytest.raises(KeyboardInterrupt, match="end of chunk 2"):
        stream.update({"x": chunks[2]})
    assert stream.chunks == 2 and stream.model["mu"].mean.shape == (2,)
    for name, arrays in before.items():
        assert all(np.array_equal(a, b) for a, b in zip(arrays, stream.posterior[name]))
    for rows in chunks[2:]:
        stream.update({"x": rows})
    for name in ("pi", "mu"):
        assert all(np.array_equal(a, b) for a, b in zip(whole.posterior[name], stream.posterior[name]))


def test_resume_in_a_fresh_process_gives_the_same_bits(tmp_path):
    """Two chunks here, saved; a new Python process resumes and fits two more: the posterior of
    a stream that ran all four chunks in one go, bit for bit."""
    import subprocess
    import sys
    from pathlib import Path

    x = _mixture_data(200, seed=11)
    chunks = _split(x, 4)
    np.save(tmp_path / "x.npy", x)
    whole = _mixture(50).stream("data", forget=0.9, iterations=20)
    for rows in chunks:
        whole.update({"x": rows})
    first = _mixture(50).stream("data", forget=0.9, iterations=20)
    for rows in chunks[:2]:
        first.update({"x": rows})
    first.save(tmp_path / "stream.npz")
    script = f"""
import numpy as np
from tests.test_stream import _mixture, _split
chunks = _split(np.load({str(tmp_path / "x.npy")!r}), 4)
stream = _mixture(50).stream("data", forget=0.9, iterations=20, resume={str(tmp_path / "stream.npz")!r})
for rows in chunks[2:]:
    stream.update({{"x": rows}})
np.savez({str(tmp_path / "out.npz")!r}, *stream.posterior["pi"], *stream.posterior["mu"])
"""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out:
        got = [out[f"arr_{i}"] for i in range(3)]
    for a, b in zip([*whole.posterior["pi"], *whole.posterior["mu"]], got):
        assert np.array_equal(a, b)


def test_a_chunk_of_the_wrong_kind_names_the_node():
    stream = _dirichlet(10).stream("data")
    with pytest.raises(DataError, match="node 'x'"):
        stream.update({"x": np.full(10, 0.5)})
    with pytest.raises(DataError, match="node 'x'"):
        stream.update({"x": np.full(10, 7)})
    assert stream.chunks == 0


def test_a_design_matrix_streams_with_its_rows():
    """Bayesian linear regression with known noise, its design matrix a vmp.Data input of the
    plate: ten chunks of (y, X) give the closed-form posterior precision I + 4 X^T X and
    natural mean 4 X^T y."""
    rng = np.random.default_rng(12)
    x = rng.normal(size=(200, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.normal(size=200)
    with vmp.Model("regression") as model:
        w = vmp.Gaussian("w", np.zeros(3), np.eye(3))
        with vmp.Plate("data", 20):
            vmp.Normal("y", vmp.dot(w, vmp.Data("X", np.zeros((20, 3)))), 4.0, observed=np.zeros(20))
    stream = model.stream("data")
    for rows, design in zip(_split(y), _split(x)):
        stream.update({"y": rows, "X": design})
    np.testing.assert_allclose(stream.posterior["w"][0], 4.0 * x.T @ y, rtol=1e-12)
    np.testing.assert_allclose(-2.0 * stream.posterior["w"][1], np.eye(3) + 4.0 * x.T @ x, rtol=1e-12)
