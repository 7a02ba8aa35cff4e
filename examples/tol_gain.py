"""Stopping rules that read the global parameters, replayed on the mixture SVI runs of
examples/tol_replay.py (docs/stopping.md: not adopted).

Records the same fits (the bound evaluated at every step on an evaluate_every=5 fit's subsample)
with the global nodes' natural parameters and gradients g_t = lambda^temp - lambda at every
step (:class:`Recording`), and replays, against the trend's P (tol_replay.plateau_trend), at
evaluation spacings 1, 2, 5, 10 and tol 3e-4, 1e-3 (1e-4 on seeds 0-11), beside vmp's curve rule:

- G_t, the bound one batch coordinate pass over the global nodes would still gain. For a
  conjugate node with the others held, L(q) = const - KL(q || q*), q* the coordinate optimum
  whose natural parameter is the expected target lambda* (Winn & Bishop 2005, eq. (5)); SVI
  estimates lambda* - lambda (the natural gradient, Hoffman et al. 2013) by g_t, and an
  average gbar of recent g's with less noise: G_t = sum over nodes of KL(q_lambda ||
  q_(lambda + gbar)) (Family.kl), ~ 1/2 gbar^T F gbar, which carries a noise bias
  1/2 tr(F Var gbar). The g's of odd and even steps are averaged apart (gA, gB, exponential
  averages of ``memory`` steps each): gbar = (gA + gB) / 2 and d = gA - gB, Var d = 4 Var gbar
  for independent g's, so the bias would be KL(q_lambda || q_(lambda + d)) / 4 ("G - bias").
  Consecutive g's are not independent (g_(t+1) carries -rho_t g_t through lambda_(t+1)), and
  this estimate overshoots (measured).
- scikit-learn's mean change: the mean relative change of the global natural parameters over
  the last ``memory`` steps, against c tol.
- the bound's rise since t/2 extrapolated with G's decay (:func:`decay`);
- both G and the curves (stop when both say so);
- with ``--noise``, the curves on the bound corrected for its noise floor (:func:`noise_floor`,
  :func:`corrected`): SVI's iterate at rate rho sits rho tr(F Sigma) / (2 (2 - rho)) below the
  optimum in expectation (the stationary variance of the step, rho Sigma / (2 - rho), in the
  bound's quadratic form; tr(F Sigma) read as the mean KL(q_lambda || q_(lambda + g_t -
  g_(t-1))) of consecutive gradients), so the rise still to come from the noise alone, to the
  run's last step T, is that gap at t minus the gap at T.

    python examples/tol_gain.py [--grid] [--noise] [--record] [--held-out] [--realistic SEED ... [--config C]]
    (raw recordings cached in .cache/tol_gain/*.npz, not committed; about 2.5 s of CPU per
    N = 3,000 run, 11-14 s per realistic run; replaying: 66 s, --grid: a few minutes more.
    From a fresh checkout, no arguments: seeds 0-11 recorded and replayed, about 41 s of CPU;
    the held-out tables need ``--held-out`` first, the realistic ones ``--realistic 0 1`` with
    ``--config 0`` and ``--config 3``)
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import vmp  # noqa: E402
from tol_replay import CONFIGS, REALISTIC_CONFIGS, blobs, mixture_data, plateau_trend, rise_left  # noqa: E402
from vmp.inference.stopping import TOL_MIN, TOL_PATIENCE, headroom  # noqa: E402
from vmp.inference.schedules import RobbinsMonro, Schedule  # noqa: E402
from vmp.models import gaussian_mixture  # noqa: E402

CACHE = ROOT / ".cache" / "tol_gain"

#: the first evaluation any rule may stop at (vmp's curve rule: TOL_MIN + TOL_PATIENCE - 1)
FIRST = TOL_MIN + TOL_PATIENCE - 1


#: steps of memory of each half's exponential average of the gradients
GAIN_MEMORY = 20
#: halvings of a direction tried when lambda + direction leaves the natural-parameter domain
GAIN_HALVINGS = 30


def average(avg: dict | None, gradients: dict, t: int, memory: float = GAIN_MEMORY) -> dict:
    """The running averages after step ``t`` with ``gradients`` {node: g_t}: step t's parity
    picks the half; its weight is max(1/n, 1/memory) for the n-th g of that half."""
    avg = {"n": [0, 0], "g": [{}, {}]} if avg is None else avg
    half = t % 2
    n = avg["n"][half] + 1
    w = max(1.0 / n, 1.0 / memory)
    old = avg["g"][half]
    new = {name: [np.asarray(g, float) if name not in old else old[name][i] + w * (np.asarray(g, float) - old[name][i])
                  for i, g in enumerate(grad)] for name, grad in gradients.items()}
    counts = list(avg["n"])
    counts[half] = n
    return {"n": counts, "g": [new, avg["g"][1]] if half == 0 else [avg["g"][0], new]}


def divergence(family, natural: tuple, direction: tuple, moments: tuple | None = None) -> float:
    """sum over elements of KL(q_lambda || q_(lambda + direction)); an element whose lambda +
    direction leaves the domain reads 4^k KL(q_lambda || q_(lambda + direction / 2^k)) at the
    first k that stays in it (equal to second order: KL is quadratic near lambda)."""
    plates = family.plate_shape(natural)
    scale = np.ones(plates)
    for _ in range(GAIN_HALVINGS):
        other = tuple(a + _expand(scale, n) * d for a, d, n in zip(natural, direction, family.event_ndims))
        ok = family.valid(other)
        if ok.all():
            break
        scale = np.where(ok, scale, scale / 2.0)
    else:
        raise FloatingPointError(f"{family.name}: no step along the averaged gradient stays in the domain")
    return float(np.sum(family.kl(natural, other, moments) / scale ** 2))


def parts(families: dict, natural: dict, avg: dict, moments: dict | None = None) -> tuple[float, float]:
    """(sum over nodes of KL(q_lambda || q_(lambda + gbar)), of KL(q_lambda || q_(lambda + d)) / 4),
    gbar = (gA + gB) / 2, d = gA - gB: the bound one coordinate pass over the global nodes would
    gain, and its noise bias (the module's docstring). ``families`` and ``natural`` per node;
    (inf, 0) until both halves hold every node."""
    a, b = avg["g"]
    total = bias = 0.0
    for name, family in families.items():
        if name not in a or name not in b:
            return np.inf, 0.0
        m = None if moments is None else moments[name]
        mean = tuple(0.5 * (x + y) for x, y in zip(a[name], b[name]))
        spread = tuple(x - y for x, y in zip(a[name], b[name]))
        total += divergence(family, natural[name], mean, m)
        bias += 0.25 * divergence(family, natural[name], spread, m)
    return total, bias


def _expand(scale: np.ndarray, event_ndims: int) -> np.ndarray:
    return scale.reshape(scale.shape + (1,) * event_ndims)



class Recording(Schedule):
    """A node's schedule that hands each step's gradient g_t = lambda^temp - lambda (the loop
    computes it for a schedule with ``needs_gradient``) to ``sink[name]`` and otherwise is
    ``inner``: the fit's trajectory is the one ``inner`` alone gives (checked bit for bit on seed 0
    with RobbinsMonro and with Adaptive(coupled=False)). One object per node: a schedule that
    pools the nodes it steps (Adaptive(coupled=True)) would be pooled per node here."""
    needs_gradient = True

    def __init__(self, inner: Schedule, name: str, sink: dict):
        self.inner, self.name, self.sink = inner, name, sink

    def __call__(self, t: int) -> float:
        return self.inner(t)

    def start(self, axes=0, own_draws=False, exact=None):
        return self.inner.start(axes, own_draws, exact)

    def samples_wanted(self, st) -> int:
        return self.inner.samples_wanted(st)

    def prime(self, gradients, st):
        return self.inner.prime(gradients, st)

    def rate(self, t, gradient, st):
        self.sink[self.name] = tuple(np.array(g) for g in gradient)
        return self.inner.rate(t, gradient if self.inner.needs_gradient else None, st)

    def rate_before(self, t, st):
        return self.inner.rate_before(t, st)

    def pool(self, states):
        return self.inner.pool(states)


def record(x: np.ndarray, k: int, size: int, seed: int, iterations: int, step=None) -> dict:
    """One fit with the bound at every step on an evaluate_every=5 fit's subsample; per step the
    natural parameters and gradients of the stepped nodes (:class:`Recording`)."""
    model = gaussian_mixture(x, k)
    nat, grad, sink = [], [], {}

    def keep(t, fit):
        nat.append({n.name: [np.array(a) for a in fit.state.natural[n.name]] for n in fit.plan.stepped})
        grad.append(dict(sink))

    names = list(families_of(x.shape[1], k))
    schedules = {n: Recording(RobbinsMonro() if step is None else step, n, sink) for n in names}
    r = model.fit(method="stochastic", subsample=vmp.Minibatch("data", size, evaluation_size=5 * size),
                  evaluate_every=1, seed=seed, progress=False, iterations=iterations, callback=keep,
                  step=schedules)
    out = {"elbo": np.asarray(r.history["evaluations"]["elbo"]), "names": np.array(names)}
    for n in names:
        for i in range(len(nat[0][n])):
            out[f"nat/{n}/{i}"] = np.stack([s[n][i] for s in nat])
            out[f"grad/{n}/{i}"] = np.stack([s[n][i] for s in grad])
    out["change"] = np.array([np.mean([r.history["change"][n][j] for n in names]) for j in range(iterations)])
    return out


def _step(step):
    """tol_replay.CONFIGS's step: None, ("rm", kappa) or ("adaptive",)."""
    if step is None:
        return None
    return vmp.Adaptive(coupled=False) if step[0] == "adaptive" else vmp.RobbinsMonro(kappa=step[1])


def families_of(x_dim: int, k: int) -> dict:
    """The mixture's global nodes' families (vmp.models.gaussian_mixture)."""
    model = gaussian_mixture(np.zeros((4, x_dim)), k)
    fit = model.stochastic(subsample=vmp.Minibatch("data", 2), iterations=1, progress=False)
    return {node.name: node.family for node in fit.plan.stepped}


def load(path: pathlib.Path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def series(run: dict, families: dict, memory: float) -> np.ndarray:
    """After every step t = 1..T, (KL(q_lambda || q_(lambda + gbar)), KL(q_lambda || q_(lambda + d)) / 4)
    summed over the global nodes (the fit's statistic and its noise-bias estimate, replayed from
    the recording; :mod:`vmp.inference.gain`)."""
    names = [str(n) for n in run["names"]]
    index = {n: sorted(int(k.split("/")[2]) for k in run if k.startswith(f"nat/{n}/")) for n in names}
    steps = len(run["elbo"]) - 1
    avg, out = None, np.full((steps, 2), np.inf)
    for j in range(steps):
        grads = {n: tuple(run[f"grad/{n}/{i}"][j] for i in index[n]) for n in names}
        avg = average(avg, grads, j + 1, memory)
        if j >= 1:
            nat = {n: tuple(run[f"nat/{n}/{i}"][j] for i in index[n]) for n in names}
            out[j] = parts(families, nat, avg)
    return out


def flags_stop(its: np.ndarray, ok: np.ndarray, patience: int = 2, first: int = FIRST) -> int | None:
    """The first evaluated step with ``ok`` at ``patience`` evaluations in a row, from the
    ``first``-th evaluation on."""
    run = 0
    for j, good in enumerate(ok):
        run = run + 1 if good else 0
        if run >= patience and j + 1 >= first:
            return int(its[j])
    return None


def noise_floor(run: dict, families: dict) -> np.ndarray:
    """Per step t = 1..T, sum over the global nodes of KL(q_lambda || q_(lambda + g_t - g_(t-1))):
    E = 2 * 1/2 tr(F Var g) for uncorrelated g's (inf at the first step)."""
    names = [str(n) for n in run["names"]]
    index = {n: sorted(int(k.split("/")[2]) for k in run if k.startswith(f"nat/{n}/")) for n in names}
    out = np.full(len(run["elbo"]) - 1, np.inf)
    for j in range(1, len(out)):
        out[j] = sum(divergence(families[n], tuple(run[f"nat/{n}/{i}"][j] for i in index[n]),
                                tuple(run[f"grad/{n}/{i}"][j] - run[f"grad/{n}/{i}"][j - 1] for i in index[n]))
                     for n in names)
    return out


def noise_gap(t, trace: np.ndarray, step=RobbinsMonro()) -> np.ndarray:
    """rho_t tr(F Sigma) / (2 (2 - rho_t)): the expected distance of the iterate's bound below the
    optimum at rate rho_t, with ``trace`` = tr(F Sigma)."""
    rho = np.array([step(int(u)) for u in np.atleast_1d(t)])
    return rho * trace / (2.0 * (2.0 - rho))


class Replay:
    """Per run, the per-evaluation readings the rules compare with tol |b|, cached per spacing:
    the curve rule's headroom (at upper limits z + noise z), G_t at memories, the mean change."""

    def __init__(self, run: dict, families: dict):
        self.run, self.families, self.b = run, families, run["elbo"]
        self.it = np.arange(len(self.b))
        self._g, self._h, self._n = {}, {}, {}

    def evaluations(self, every: int) -> np.ndarray:
        return np.arange(every, len(self.b), every)

    def gain(self, memory: float) -> np.ndarray:
        if memory not in self._g:
            self._g[memory] = series(self.run, self.families, memory)
        return self._g[memory]

    def headroom(self, every: int, z: tuple) -> np.ndarray:
        if (every, z) not in self._h:
            its = self.evaluations(every).astype(float)
            v = self.b[its.astype(int)]
            h = np.full(len(its), np.inf)
            for j in range(TOL_MIN - 1, len(its)):
                h[j] = headroom(its[:j + 1], v[:j + 1], *z)[0]
            self._h[every, z] = h
        return self._h[every, z]


    def corrected(self, every: int, z: tuple, memory: int = 20) -> np.ndarray:
        """The curves' headroom on b_t + noise gap_t, plus the noise gap's fall from t to T, with
        tr(F Sigma) the mean of :func:`noise_floor` over the last ``memory`` steps (at step 1,
        step 2's: the first difference of gradients)."""
        if (every, z) not in self._n:
            if "floor" not in self._n:
                self._n["floor"] = noise_floor(self.run, self.families)
            floor = self._n["floor"]
            its = self.evaluations(every)
            trace = np.array([np.mean(floor[max(1, t - memory):max(2, t)]) for t in its])  # step 1: step 2's
            v = self.b[its] + noise_gap(its, trace)
            h = np.full(len(its), np.inf)
            last = len(self.b) - 1
            for j in range(TOL_MIN - 1, len(its)):
                h[j] = (headroom(its[:j + 1].astype(float), v[:j + 1], *z)[0]
                        + noise_gap(its[j], trace[j])[0] - noise_gap(last, trace[j])[0])
            self._n[every, z] = h
        return self._n[every, z]


def corrected(z):
    return lambda r, tol, every: r.corrected(every, z) <= tol * np.abs(r.b[r.evaluations(every)])


def curves(z):
    return lambda r, tol, every: r.headroom(every, z) <= tol * np.abs(r.b[r.evaluations(every)])


def gain_rule(memory, c, debias=False):
    def ok(r, tol, every):
        its = r.evaluations(every)
        g = r.gain(memory)[its - 1]
        with np.errstate(invalid="ignore"):  # inf - inf before both halves hold a gradient: not a stop
            return g[:, 0] - (g[:, 1] if debias else 0.0) <= c * tol * np.abs(r.b[its])
    return ok


def mean_change(memory, c):
    """scikit-learn-like: the mean over the last ``memory`` steps of the relative change of the
    global natural parameters at most c tol."""
    def ok(r, tol, every):
        its = r.evaluations(every)
        ch = r.run["change"]
        return np.array([ch[max(0, t - memory):t].mean() for t in its]) <= c * tol
    return ok


def decay(memory, c, frac=0.5):
    """The bound's rise since frac t extrapolated with G's decay: if the rise per step is
    proportional to G_s and G decays geometrically, the rise still to come is (b_t - b_(frac t))
    G_t / (G_(frac t) - G_t), whatever the factor and the rate; at most c tol |b| (inf while G does
    not decay)."""
    def ok(r, tol, every):
        its = r.evaluations(every)
        g = r.gain(memory)[:, 0]
        back = np.maximum((frac * its).astype(int) // every * every, every)
        rise, now, then = r.b[its] - r.b[back], g[its - 1], g[back - 1]
        with np.errstate(all="ignore"):
            left = np.where(then > now, np.maximum(rise, 0.0) * now / (then - now), np.inf)
        return left <= c * tol * np.abs(r.b[its])
    return ok


def both(*rules):
    return lambda r, tol, every: np.logical_and.reduce([rule(r, tol, every) for rule in rules])


RULES = {
    "curves, z = 2 + 2 (vmp)": curves((2.0, 2.0)),
    "curves, z = 1.5 + 1.5": curves((1.5, 1.5)),
    "G <= tol |b|, memory 10": gain_rule(10, 1.0),
    "G <= 0.5 tol |b|, memory 20": gain_rule(20, 0.5),
    "G - bias <= tol |b|, memory 10": gain_rule(10, 1.0, debias=True),
    "mean change <= 30 tol, memory 40": mean_change(40, 30.0),
    "curves 1.5 + 1.5 and G <= tol |b|, memory 40 (chosen on seeds 0-11)": both(curves((1.5, 1.5)), gain_rule(40, 1.0)),
}


def table(title: str, replays: list, tols, spacings, rules: dict = RULES) -> dict:
    """Per rule: within 10% of the trend's P, early (before 0.9 P) with the rise they leave, never
    stopped, median stop - P (steps and fraction of P)."""
    print(f"\n{title}\n| rule | within 10% | early | early leaving > 2 tol | max left (tol) | never stopped | "
          "stop - P, median (steps) | (stop - P) / P, median |\n|---|---|---|---|---|---|---|---|")
    out = {}
    for name, rule in rules.items():
        rows = []
        for tol in tols:
            for every in spacings:
                for r in replays:
                    stop = flags_stop(r.evaluations(every), rule(r, tol, every))
                    p = plateau_trend(r.it, r.b, tol)
                    end = int(r.it[-1]) if stop is None else stop
                    rows.append((end, p, stop is None, rise_left(r.it, r.b, end, tol)))
        within = sum(abs(s - p) <= 0.1 * p for s, p, _, _ in rows)
        early = [left for s, p, _, left in rows if s < 0.9 * p]
        never = sum(n for _, _, n, _ in rows)
        print(f"| {name} | {within} of {len(rows)} | {len(early)} | {sum(x > 2 for x in early)} | "
              f"{max(early, default=0):.1f} | {never} | {np.median([s - p for s, p, _, _ in rows]):.0f} | "
              f"{np.median([(s - p) / p for s, p, _, _ in rows]):.2f} |", flush=True)
        out[name] = (within, len(early), sum(x > 2 for x in early))
    return out


def grid(replays: list) -> None:
    """The choice on seeds 0-11 (tol 3e-4, 1e-3, 1e-4; spacings 1, 2, 5, 10)."""
    rules = {}
    for memory in (5, 10, 20, 40):
        for c in (0.25, 0.5, 1.0, 2.0):
            rules[f"G, memory {memory}, c {c:g}"] = gain_rule(memory, c)
            rules[f"G - bias, memory {memory}, c {c:g}"] = gain_rule(memory, c, debias=True)
            for z in ((0.0, 0.0), (1.0, 1.0), (1.5, 1.5), (2.0, 2.0)):
                rules[f"curves {z[0]:g} + {z[1]:g} and G, memory {memory}, c {c:g}"] = both(curves(z), gain_rule(memory, c))
    for memory in (10, 40):
        for c in (3.0, 10.0, 30.0, 100.0):
            rules[f"mean change, memory {memory}, c {c:g}"] = mean_change(memory, c)
        for c in (0.5, 1.0, 2.0):
            for frac in (0.5, 0.75):
                rules[f"decay, memory {memory}, c {c:g}, since {frac:g} t"] = decay(memory, c, frac)
    table("grid, seeds 0-11", replays, (3e-4, 1e-3, 1e-4), (1, 2, 5, 10), rules)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--record", action="store_true", help="record seeds 0-11 again (else from the cache)")
    ap.add_argument("--grid", action="store_true", help="the choice of the constants on seeds 0-11")
    ap.add_argument("--noise", action="store_true", help="the curves on the bound corrected for its noise floor")
    ap.add_argument("--held-out", action="store_true", help="record the held-out runs (tol_replay.CONFIGS)")
    ap.add_argument("--realistic", type=int, nargs="*", default=[],
                    help="record these seeds of a realistic configuration (about 11 to 25 s of CPU each)")
    ap.add_argument("--config", type=int, default=0, help="which of tol_replay.REALISTIC_CONFIGS (default 0)")
    args = ap.parse_args(argv)
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.held_out:
        for g, (name, n, k, size, step, seeds) in enumerate(CONFIGS):
            for seed in seeds:
                path = CACHE / f"held{g}_{seed}.npz"
                if not path.exists():
                    c0 = time.process_time()
                    np.savez(path, **record(blobs(n, seed), k, size, seed, 400, _step(step)))
                    print(f"{name}, seed {seed}: {time.process_time() - c0:.1f} s CPU", flush=True)
    name, d, k, separation, kappa, steps, _, size = REALISTIC_CONFIGS[args.config]
    for seed in args.realistic:
        path = CACHE / f"real{args.config}_{seed}.npz"
        if not path.exists():
            c0 = time.process_time()
            np.savez(path, **record(mixture_data(100_000, d, k, separation, seed), k, size, seed, steps,
                                    None if kappa is None else RobbinsMonro(kappa=kappa)))
            print(f"{name}, seed {seed}: {time.process_time() - c0:.1f} s CPU", flush=True)
    for seed in range(12):
        path = CACHE / f"train_{seed}.npz"
        if args.record or not path.exists():
            c0 = time.process_time()
            np.savez(path, **record(blobs(3000, seed), 3, 500, seed, 400))
            print(f"seed {seed}: {time.process_time() - c0:.1f} s CPU", flush=True)
    c0 = time.process_time()
    fam = families_of(2, 3)
    train = [Replay(load(CACHE / f"train_{seed}.npz"), fam) for seed in range(12)]
    if args.grid:
        grid(train)
    if args.noise:
        rules = {"curves, z = 2 + 2 (vmp)": RULES["curves, z = 2 + 2 (vmp)"],
                 **{f"noise-corrected curves, z = {z[0]:g} + {z[1]:g}": corrected(z)
                    for z in ((2.0, 2.0), (1.5, 1.5), (1.0, 1.0), (0.0, 0.0))}}
        table("noise-corrected curves, seeds 0-11", train, (3e-4, 1e-3, 1e-4), (1, 2, 5, 10), rules)
        table("the same at the tests' setting", train, (3e-4,), (5,), rules)
        return 0
    table("seeds 0-11, tol 3e-4, 1e-3, 1e-4 (chosen on these)", train, (3e-4, 1e-3, 1e-4), (1, 2, 5, 10))
    table("seeds 0-11 at the tests' setting (tol 3e-4, every 5 steps)", train, (3e-4,), (5,))
    held = {}
    for g, (name, n, k, size, step, seeds) in enumerate(CONFIGS):
        paths = [CACHE / f"held{g}_{seed}.npz" for seed in seeds]
        if all(p.exists() for p in paths):
            held[name] = [Replay(load(p), fam if k == 3 else families_of(2, k)) for p in paths]
    if held:
        before = [r for name in list(held)[:-1] for r in held[name]]
        table(f"held out before ({len(before)} runs), tol 3e-4, 1e-3", before, (3e-4, 1e-3), (1, 2, 5, 10))
        last = list(held.values())[-1]
        table(f"held out, seeds 18-29 ({len(last)} runs), tol 3e-4, 1e-3", last, (3e-4, 1e-3), (1, 2, 5, 10))
    for c, (name, d, k, *_) in enumerate(REALISTIC_CONFIGS):
        real = sorted(CACHE.glob(f"real{c}_*.npz"))
        if real:
            table(f"{name}, seeds {[p.stem.split('_')[1] for p in real]}, tol 1e-4, 3e-4, 1e-3",
                  [Replay(load(p), families_of(d, k)) for p in real], (1e-4, 3e-4, 1e-3), (1, 5, 10, 25))
    print(f"{time.process_time() - c0:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
