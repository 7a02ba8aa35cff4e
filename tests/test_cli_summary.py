"""The posterior table of the command line: summary.csv and posterior.nc in a --report
directory, and ``vmp summary CHECKPOINT``, against ``result.summary(model)`` and the marginals'
closed forms."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from scipy import stats

import vmp
from vmp.cli import main
from vmp.diagnostics import posterior_table
from vmp.models import gaussian_mixture

pd = pytest.importorskip("pandas", reason="reading summary.csv back needs pandas (the dev extra installs it)")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """(data, report directory, checkpoint) of ``vmp fit gaussian_mixture`` on a CSV."""
    tmp = tmp_path_factory.mktemp("fit")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(c, 0.3, size=(30, 2)) for c in [(0, 0), (3, 0), (0, 3)]])
    data = tmp / "points.csv"
    data.write_text("a,b\n" + "\n".join(f"{u:.5f},{v:.5f}" for u, v in x) + "\n")
    x = np.loadtxt(data, delimiter=",", skiprows=1)
    code = main(["fit", "gaussian_mixture", str(data), "-k", "3", "--report", str(tmp / "rep"),
                 "--checkpoint", str(tmp / "fit.npz")])
    assert code == 0
    return x, data, tmp / "rep", tmp / "fit.npz"


def loaded(x, checkpoint):
    model = gaussian_mixture(x, 3)
    return model, vmp.load(checkpoint, model)


def _balanced(text: str) -> tuple[str, str]:
    """(the leading bracketed expression, or the leading word, of ``text``; the rest)."""
    text = text.lstrip()
    if not text.startswith("["):
        word, _, rest = text.partition(" ")
        return word, rest
    depth = 0
    for i, c in enumerate(text):
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth == 0:
            return text[:i + 1], text[i + 1:]
    raise AssertionError(f"unbalanced: {text}")


def _numbers(text: str) -> np.ndarray:
    return np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)])


def printed(text: str, node: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The posterior mean, sd and interval bounds that result.summary prints for ``node``."""
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == [node])
    mean, rest = _balanced(line.partition(" mean ")[2])
    sd, rest = _balanced(rest)
    if sd == "-":
        return _numbers(mean), None, None
    interval, _ = _balanced(rest)
    return _numbers(mean), _numbers(sd), _numbers(interval).reshape(2, -1)


def test_summary_csv_matches_result_summary(fitted):
    x, _, report, checkpoint = fitted
    model, result = loaded(x, checkpoint)
    text = result.summary(model)
    table = pd.read_csv(report / "summary.csv")
    assert list(table.columns) == ["node", "element", "mean", "sd", "lower", "upper"]
    assert list(table["node"].unique()) == ["pi", "theta", "z"]
    for node in ("pi", "theta"):
        rows = table[table["node"] == node]
        mean, sd, bounds = printed(text, node)
        assert np.allclose(rows["mean"], mean, rtol=1e-3, atol=1e-3), node
        if sd is None:
            assert rows["sd"].isna().all() and rows["lower"].isna().all(), node
        else:
            assert np.allclose(rows["sd"], sd, rtol=1e-3, atol=1e-3), node
            assert np.allclose(rows[["lower", "upper"]].to_numpy().T, bounds, rtol=1e-3, atol=1e-3), node
    z = table[table["node"] == "z"]
    assert len(z) == 90 * 3 and z["element"].iloc[4] == "[1, 1]"
    assert np.array_equal(z["mean"].to_numpy().reshape(90, 3), model["z"].mean)  # 17 digits: the same floats


def test_summary_csv_holds_the_closed_form_marginals(fitted):
    """Stick-breaking weights: E[pi_k^2] = E[v_k^2] prod_{j<k} E[(1 - v_j)^2] of Beta sticks, the
    interval against independent draws; a Normal-Wishart mean: the Student-t marginal
    mu_k ~ t_{nu - D + 1}(m_k, W_k^-1 / (beta_k (nu - D + 1))) (Bishop PRML section 10.2)."""
    x, _, report, checkpoint = fitted
    model, _ = loaded(x, checkpoint)
    table = pd.read_csv(report / "summary.csv").set_index(["node", "element"])
    sticks = model["pi"].parameters
    a, b = sticks["alpha"], sticks["beta"]
    e_v, e_v2 = a / (a + b), a * (a + 1) / ((a + b) * (a + b + 1))
    e_w2 = b * (b + 1) / ((a + b) * (a + b + 1))
    first = e_v * np.concatenate([[1.0], np.cumprod(1 - e_v)[:-1]])
    second = e_v2 * np.concatenate([[1.0], np.cumprod(e_w2)[:-1]])
    pi = table.loc["pi"]
    assert np.allclose(pi["mean"], first, rtol=1e-12)
    assert np.allclose(pi["sd"], np.sqrt(second - first ** 2), rtol=1e-10)
    v = np.random.default_rng(3).beta(a, b, size=(100_000, 3))
    draws = v * np.concatenate([np.ones((len(v), 1)), np.cumprod(1 - v, axis=1)[:, :-1]], axis=1)
    assert np.allclose(pi["lower"], np.quantile(draws, 0.025, axis=0), atol=0.01)
    assert np.allclose(pi["upper"], np.quantile(draws, 0.975, axis=0), atol=0.01)
    theta, d = model["theta"].parameters, x.shape[1]
    df = theta["dof"] - d + 1
    shape = np.linalg.inv(theta["scale"]) / (theta["beta"] * df)[:, None, None]
    t_sd = np.sqrt(np.diagonal(shape, axis1=1, axis2=2) * (df / (df - 2))[:, None])
    rows = table.loc["theta"]
    assert np.allclose(rows["mean"], theta["mean"].ravel(), rtol=1e-12)
    assert np.allclose(rows["sd"], t_sd.ravel(), rtol=1e-10)


def test_posterior_nc_holds_draws_from_q(fitted):
    az = pytest.importorskip("arviz", reason="posterior.nc is written through ArviZ")
    x, _, report, checkpoint = fitted
    model, _ = loaded(x, checkpoint)
    data = az.from_netcdf(report / "posterior.nc")
    mu = data.posterior["theta"].values[..., -1, :]  # a draw of (Lambda_k, mu_k): mu_k its last row
    assert mu.shape == (1, 500, 3, 2)
    se = mu[0].std(0) / np.sqrt(500)
    assert np.all(np.abs(mu[0].mean(0) - model["theta"].mean) < 5 * se)
    assert np.array_equal(data.observed_data["x"].values, x)
    assert data.posterior.attrs["left_out"] == "none"


def test_vmp_summary_prints_the_saved_fit(fitted, capsys, tmp_path):
    x, data, report, checkpoint = fitted
    model, result = loaded(x, checkpoint)
    code = main(["summary", str(checkpoint), "gaussian_mixture", str(data), "-k", "3", "--csv", str(tmp_path / "t.csv")])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(result.summary(model))
    assert (tmp_path / "t.csv").read_bytes() == (report / "summary.csv").read_bytes()


def test_vmp_summary_of_a_minibatch_fit_infers_the_locals(capsys, tmp_path):
    checkpoint = tmp_path / "svi.npz"
    common = ["gaussian_mixture", "--n", "80", "-k", "2"]
    assert main(["fit", *common, "--minibatch", "data:20", "--iterations", "10", "--checkpoint", str(checkpoint)]) == 0
    capsys.readouterr()
    assert main(["summary", str(checkpoint), *common, "--csv", str(tmp_path / "t.csv")]) == 0
    assert "most probable category counts" in capsys.readouterr().out
    assert (pd.read_csv(tmp_path / "t.csv")["node"] == "z").sum() == 80 * 2


def test_vmp_summary_errors(fitted, capsys, tmp_path):
    x, data, report, checkpoint = fitted
    cases = [(["summary", str(tmp_path / "none.npz"), "gaussian_mixture"], "not found"),
             (["summary", str(report / "summary.csv"), "gaussian_mixture"], "is not a saved fit"),
             (["summary", str(checkpoint), "lda"], "holds node(s) pi, theta, z that model 'lda'"),
             (["summary", str(checkpoint), "gaussian_mixture", str(data), "-k", "4"], "holds node(s)")]
    for argv, words in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)


def test_large_nodes_are_left_out_and_named(fitted, tmp_path):
    x, _, _, checkpoint = fitted
    model, _ = loaded(x, checkpoint)
    with pytest.warns(UserWarning, match=r"left out z \(270 elements\)"):
        table = posterior_table(model, max_elements=100)
    assert set(table["node"]) == {"pi", "theta"}
    az = pytest.importorskip("arviz", reason="posterior.nc is written through ArviZ")
    from vmp.export import write_netcdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_netcdf(model, tmp_path / "p.nc", draws=100, budget=100 * 10)
    data = az.from_netcdf(tmp_path / "p.nc")
    assert set(data.posterior.data_vars) == {"pi"} and data.posterior.attrs["left_out"] == "theta, x, z"


def test_a_scalar_node_is_one_row_with_its_gamma_marginal():
    with vmp.Model("scalar") as model:
        tau = vmp.Gamma("tau", 2.0, 1.0)
        with vmp.Plate("data", 3):
            vmp.Normal("x", 0.0, tau, observed=np.array([1.0, -1.0, 2.0]))
    model.fit()
    table = posterior_table(model)
    a, b = 2.0 + 3 / 2, 1.0 + (1 + 1 + 4) / 2  # the conjugate posterior of a precision
    assert list(table["element"]) == ["[]"] and np.isclose(table["mean"][0], a / b, rtol=1e-12)
    assert np.isclose(table["sd"][0], np.sqrt(a) / b, rtol=1e-12)
    assert np.isclose(table["upper"][0], stats.gamma(a, scale=1 / b).ppf(0.975), rtol=1e-10)
