"""A fuzzer of vmp's public API: random models, parameters, data and options.

``scenarios()`` is a hypothesis strategy of declarations and fits, mostly valid and sometimes
not (a plate of size 0, NaN or None; a negative or complex parameter; a string that names no
node; ragged or NaN data; an option outside its domain). ``run`` plays one and classifies what
happened:

- ``"fit"``: it ran, every reported number is finite, and a batch bound never decreased;
- ``"diverged"``: a stochastic fit said so (``result.diverged``) or a monitor stopped it;
- ``"refused"``: a vmp error (``vmp.VMPError``) named what was wrong (a plate of 10^12 elements
  included: a ShapeError saying what memory it would need);
- ``"raw"``: any other exception, a MemoryError included (a defect: bad input must give a vmp error);
- ``"nan"``: a fit reported success with a NaN or infinite bound or q (a defect);
- ``"decrease"``: batch VMP lowered its own bound (a defect).

tests/test_fuzz.py runs a CI-sized sample; ``benchmarks/fuzz.py`` a larger one.
"""
from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

import vmp

DEFECTS = ("raw", "nan", "decrease")

#: relative drop of a batch bound between sweeps that counts as a decrease (rounding is ~1e-15)
DECREASE = 1e-9


@dataclass
class Outcome:
    kind: str
    detail: str = ""


@dataclass
class Scenario:
    """A declaration (``build() -> Model``) and what to do with the model afterwards."""

    label: str
    build: Callable[[], Any]
    options: dict = field(default_factory=dict)
    observed: str = "x"
    values: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        values = {k: (f"array{v.shape}" if isinstance(v, np.ndarray) and v.ndim else v)
                  for k, v in self.values.items()}
        return f"Scenario({self.label}, {values}, options={self.options!r})"


# ----- values: mostly valid, sometimes not ------------------------------------------------
BAD_NUMBERS = [float("nan"), float("inf"), -1.0, 0.0, 5e-324, 1e308, 1 + 2j, "abc", object(), None, [1.0, [2.0]]]
BAD_SIZES = [0, -1, 2.5, None, float("nan"), float("inf"), "3", 10 ** 12]


#: the chances (in percent) that a value is invalid, one drawn per scenario: 0 for half of them
#: (valid declarations and options), a few percent for the others
FLAWS = (0, 0, 4, 10)


class Draw:
    """hypothesis's ``draw`` with the scenario's chance (in percent) that a value is invalid,
    drawn from ``flaws``."""

    def __init__(self, draw, flaws=FLAWS):
        self.draw = draw
        self.flaws = draw(st.sampled_from(flaws))

    def __call__(self, strategy):
        return self.draw(strategy)

    def pick(self, good, bad: list):
        if self.flaws and self.draw(st.integers(0, 99)) < self.flaws:
            return self.draw(st.sampled_from(bad))
        return self.draw(good)


def positive(draw: Draw, good=st.floats(0.05, 20.0)) -> Any:
    return draw.pick(good, BAD_NUMBERS)


def real(draw: Draw) -> Any:
    return draw.pick(st.floats(-5.0, 5.0), BAD_NUMBERS)


def size(draw: Draw, lo=1, hi=12) -> Any:
    return draw.pick(st.integers(lo, hi), BAD_SIZES)


def scale_of(draw) -> float:
    return draw(st.sampled_from([1.0, 1.0, 1.0, 1e-6, 1e4, 1e8]))


def data(draw, shape: tuple, kind: str = "real") -> Any:
    """Data of ``shape`` (when it is a valid shape), sometimes with NaN, inf, a wrong shape or
    wrong values."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    try:
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape) or np.prod(shape) > 10 ** 5:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        shape = (3,)
    if kind == "binary":
        x = rng.integers(0, 2, size=shape).astype(float)
    elif kind == "count":
        x = rng.poisson(3.0, size=shape).astype(float)
    elif kind.startswith("category"):
        x = rng.integers(0, int(kind[8:]), size=shape)
    else:
        x = rng.normal(size=shape) * scale_of(draw)
    flaw = draw.pick(st.just("none"), ["nan", "inf", "shape", "negative", "fraction", "scalar", "list"])
    if flaw == "nan" and x.size:
        x = x.astype(float)
        x.flat[0] = np.nan
    elif flaw == "inf" and x.size:
        x = x.astype(float)
        x.flat[0] = np.inf
    elif flaw == "shape":
        x = np.concatenate([x.ravel(), [1.0]])
    elif flaw == "negative" and x.size:
        x = x.astype(float)
        x.flat[0] = -2.0
    elif flaw == "fraction" and x.size:
        x = x.astype(float)
        x.flat[0] = 0.5
    elif flaw == "scalar":
        x = np.float64(0.3)
    elif flaw == "list":
        x = x.tolist()
    return x


# ----- options ------------------------------------------------------------------------------
class Later:
    """An option object made when the scenario is played (its constructor may refuse it)."""

    def __init__(self, text: str, make: Callable[[], Any]):
        self.text, self.make = text, make

    def __repr__(self) -> str:
        return self.text


def later(cls, *args, **kwargs) -> Later:
    text = f"{cls.__name__}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"
    return Later(text, lambda: cls(*args, **kwargs))


def made(value):
    if isinstance(value, Later):
        return value.make()
    if isinstance(value, list):
        return [made(v) for v in value]
    return value


def options(draw, plate: str, n: Any) -> dict:
    method = draw.pick(st.sampled_from(["batch", "stochastic", None]), ["gibbs", 3])
    out: dict = {"iterations": draw.pick(st.integers(0, 15), [-1, 2.5, "10", None, float("nan")]),
                 "seed": draw.pick(st.sampled_from([0, 1, 2, None]), [-1, 2 ** 70, "a", 1.5])}
    if method is not None:
        out["method"] = method
    if draw(st.booleans()):
        out["tol"] = draw.pick(st.sampled_from([1e-6, 1e-3, 0.0]), [float("nan"), -1.0, float("inf"), "small"])
    if method == "stochastic":
        sub = draw.pick(st.sampled_from(["minibatch", "minibatch", "pernode", "none"]), ["bad"])
        if sub == "minibatch":
            out["subsample"] = later(vmp.Minibatch, plate, draw.pick(st.integers(1, 12), [0, -2, 10 ** 6, 1.5]))
        elif sub == "pernode":
            out["subsample"] = later(vmp.PerNode, children=draw(st.integers(1, 5)))
        elif sub == "bad":
            out["subsample"] = draw(st.sampled_from(["minibatch", 3, object()]))
        out["update"] = draw.pick(st.sampled_from(["per-node", "global"]), ["both"])
        step = draw.pick(st.sampled_from(["default", "rm", "constant", "warmup", "adaptive"]), ["bad"])
        if step == "rm":
            out["step"] = later(vmp.RobbinsMonro, tau=draw.pick(st.sampled_from([1.0, 0.0, 10.0]), [-1.0, "a"]),
                                kappa=draw.pick(st.sampled_from([0.6, 0.9, 1.0]), [2.0, 0.2, float("nan")]))
        elif step == "constant":
            out["step"] = later(vmp.Constant, draw.pick(st.sampled_from([0.1, 0.5, 1.0]), [0.0, 1.5, -0.1]))
        elif step == "warmup":
            out["step"] = later(vmp.Warmup, draw.pick(st.sampled_from([1, 5]), [-1, 2.5, 0]))
        elif step == "adaptive":
            out["step"] = later(vmp.Adaptive)
        elif step == "bad":
            out["step"] = draw(st.sampled_from([0.5, "rm", None]))
        if draw(st.booleans()):
            out["monitors"] = draw.pick(st.sampled_from([
                [later(vmp.DomainMonitor, action="backoff")], [later(vmp.ElboMonitor, action="backoff")],
                [later(vmp.NoiseMonitor)], [later(vmp.DomainMonitor, action="stop"),
                                           later(vmp.ElboMonitor, action="warn")], []]),
                [[later(vmp.DomainMonitor, action="explode")], ["x"], "x"])
        if draw(st.integers(0, 3)) == 0:
            out["policies"] = draw.pick(st.sampled_from([
                [later(vmp.SVIPlus, effective=2)],
                [Later("Annealing.linear(5.0, 10)", lambda: vmp.Annealing.linear(5.0, 10))]]),
                [[later(vmp.SVIPlus, effective=-1)], ["svi+"]])
        if draw(st.booleans()):
            out["evaluate_every"] = draw.pick(st.sampled_from([1, 3]), [0, -1, 1.5])
    if draw(st.integers(0, 5)) == 0:
        out["callback"] = draw.pick(st.just(lambda *a, **k: None), [3])
    if draw(st.integers(0, 5)) == 0:
        out["checkpoint"] = draw.pick(st.just(Later("<folder>/fit.npz", lambda: _folder() / "fit.npz")),
                                      [Later("<folder>/missing/fit.npz", lambda: _folder() / "missing" / "fit.npz"),
                                       Later("<folder>", _folder), 3])
        out["checkpoint_every"] = draw.pick(st.sampled_from([None, 1, 4]), [0, -1, 1.5])
    return out


_FOLDER: list = []


def _folder() -> Path:
    """A temporary folder for the scenarios' checkpoints, removed when the process exits."""
    if not _FOLDER:
        _FOLDER.append(tempfile.TemporaryDirectory(prefix="vmp-fuzz-"))
    return Path(_FOLDER[0].name)


# ----- models -------------------------------------------------------------------------------
def normal_gamma(draw) -> Scenario:
    n = size(draw)
    m0, p0, a, b, obs = real(draw), positive(draw), positive(draw), positive(draw), data(draw, (n,))

    def build():
        with vmp.Model("normal_gamma") as model:
            mu = vmp.Normal("mu", m0, p0)
            tau = vmp.Gamma("tau", a, b)
            with vmp.Plate("data", n):
                vmp.Normal("x", mu, tau, observed=obs)
        return model

    return Scenario("normal_gamma", build, options(draw, "data", n), values=_values(locals()))


def beta_bernoulli(draw) -> Scenario:
    n = size(draw)
    a, b, obs = positive(draw), positive(draw), data(draw, (n,), "binary")

    def build():
        with vmp.Model("beta_bernoulli") as model:
            p = vmp.Beta("p", a, b)
            with vmp.Plate("data", n):
                vmp.Bernoulli("x", p, observed=obs)
        return model

    return Scenario("beta_bernoulli", build, options(draw, "data", n), values=_values(locals()))


def gamma_poisson(draw) -> Scenario:
    n = size(draw)
    a, b, obs = positive(draw), positive(draw), data(draw, (n,), "count")

    def build():
        with vmp.Model("gamma_poisson") as model:
            lam = vmp.Gamma("lam", a, b)
            with vmp.Plate("data", n):
                vmp.Poisson("x", lam, observed=obs)
        return model

    return Scenario("gamma_poisson", build, options(draw, "data", n), values=_values(locals()))


def categorical_mixture(draw) -> Scenario:
    n, k = size(draw, 2), size(draw, 2, 4)
    alpha, m0, p0, a, b = positive(draw), real(draw), positive(draw), positive(draw), positive(draw)
    obs = data(draw, (n,))

    def build():
        with vmp.Model("normal_mixture") as model:
            pi = vmp.Dirichlet("pi", np.full(k, alpha) if isinstance(k, int) and 0 < k <= 1000 and isinstance(alpha, float)
                              else alpha)
            with vmp.Plate("components", k):
                mu = vmp.Normal("mu", m0, p0)
                tau = vmp.Gamma("tau", a, b)
            with vmp.Plate("data", n):
                z = vmp.Categorical("z", pi)
                vmp.Normal("x", mu[z], tau[z], observed=obs)
        return model

    return Scenario("normal_mixture", build, options(draw, "data", n), values=_values(locals()))


def gaussian_mixture(draw) -> Scenario:
    n, d, k = draw(st.integers(6, 40)), draw(st.integers(1, 3)), size(draw, 2, 4)
    obs = data(draw, (n, d))

    def build():
        from vmp.models import gaussian_mixture as gm

        return gm(obs, k)

    return Scenario("gaussian_mixture", build, options(draw, "data", n), values=_values(locals()))


def regression(draw) -> Scenario:
    n, d = size(draw, 2, 20), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    design = rng.normal(size=(n if isinstance(n, int) and 0 < n < 10 ** 4 else 3, d)) * scale_of(draw)
    obs = data(draw, (n,))
    prec, a, b = positive(draw), positive(draw), positive(draw)

    def build():
        with vmp.Model("regression") as model:
            w = vmp.Gaussian("w", np.zeros(d), prec * np.eye(d) if isinstance(prec, float) else prec)
            tau = vmp.Gamma("tau", a, b)
            with vmp.Plate("data", n):
                vmp.Normal("x", vmp.dot(w, design), tau, observed=obs)
        return model

    return Scenario("regression", build, options(draw, "data", n), values=_values(locals()))


def matrix_factorization(draw) -> Scenario:
    rows, cols, k = draw(st.integers(2, 6)), draw(st.integers(2, 6)), draw(st.integers(1, 3))
    n = draw(st.integers(3, 20))
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    users, items = rng.integers(0, rows, n), rng.integers(0, cols, n)
    ratings = data(draw, (n,))

    def build():
        from vmp.models import matrix_factorization as mf

        return mf(users, items, ratings, k, n_users=rows, n_items=cols)

    return Scenario("matrix_factorization", build, options(draw, "ratings", n), observed="r",
                    values=_values(locals()))


def hmm(draw) -> Scenario:
    lengths = draw(st.lists(st.integers(2, 8), min_size=1, max_size=4))
    k = size(draw, 2, 3)
    seqs = [data(draw, (t,)) for t in lengths]

    def build():
        from vmp.models import hmm as h

        return h(seqs, k)

    return Scenario("hmm", build, options(draw, "sequences", len(lengths)), observed="y", values=_values(locals()))


def _values(scope: dict) -> dict:
    return {k: v for k, v in scope.items() if k not in ("draw", "build", "rng")}


MODELS = [normal_gamma, beta_bernoulli, gamma_poisson, categorical_mixture, gaussian_mixture, regression,
          matrix_factorization, hmm]


@st.composite
def scenarios(draw, flaws=FLAWS) -> Scenario:
    """A scenario of one of the MODELS; ``flaws``: the chances that a value is invalid."""
    return draw(st.sampled_from(MODELS))(Draw(draw, flaws))


# ----- playing a scenario -------------------------------------------------------------------
def _finite_q(model) -> bool:
    for node in model.nodes.values():
        if node.observed:
            continue
        for arr in node.natural or ():  # a local after a minibatch fit keeps no q
            if not np.all(np.isfinite(np.asarray(arr))):
                return False
    return True


def _decrease(result) -> str | None:
    bounds = np.asarray(result.history["evaluations"]["elbo"], float)
    if bounds.size < 2:
        return None
    drops = bounds[:-1] - bounds[1:]
    worst = int(np.argmax(drops))
    if drops[worst] > DECREASE * max(1.0, abs(bounds[worst])):
        return f"bound {bounds[worst]:.10g} -> {bounds[worst + 1]:.10g} at evaluation {worst + 1}"
    return None


def _after(model, scenario: Scenario, result) -> Outcome:
    if result.diverged:
        return Outcome("diverged", result.message)
    if not np.all(np.isfinite(result.elbo)) or not _finite_q(model):
        return Outcome("nan", f"elbo={result.final_elbo}, message={result.message!r}")
    method = scenario.options.get("method") or ("stochastic" if "subsample" in scenario.options else "batch")
    if method == "batch":
        decrease = _decrease(result)
        if decrease is not None:
            return Outcome("decrease", decrease)
    value = model.elbo()
    if not np.isfinite(value):
        return Outcome("nan", f"model.elbo()={value}")
    if scenario.observed in model.nodes and model.nodes[scenario.observed].observed:
        pred = model.predict(scenario.observed, draws=20)
        if not np.all(np.isfinite(np.asarray(pred.mean, float))):
            return Outcome("nan", "predict mean")
        if not np.all(np.isfinite(np.asarray(pred.sample(3), float))):
            return Outcome("nan", "predict sample")
    return Outcome("fit")


def run(scenario: Scenario, trace: bool = False) -> Outcome:
    """Play ``scenario`` and classify the outcome (see the module docstring); ``trace`` prints
    the traceback of a raw error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = scenario.build()
            result = model.fit(progress=False, **{k: made(v) for k, v in scenario.options.items()})
            return _after(model, scenario, result)
        except vmp.VMPError as err:
            return Outcome("refused", f"{type(err).__name__}: {err}")
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as err:  # noqa: BLE001: any other exception is what the fuzzer looks for
            if trace:
                import traceback

                traceback.print_exc()
            return Outcome("raw", f"{type(err).__name__}: {err}")
