"""Where vmp.Adaptive's rate is right and where it is low: synthetic gradient streams.

Ranganath et al. (2013)'s rule minimizes the expected distance to the step's own target. Two
experiments with the rule itself, vmp.Adaptive(coupled=False) (its ``rate`` on hand-made gradients):

- fixed target: g_t = lambda* - lambda_t + noise. The best any rates can do is the running mean
  of the targets, squared error s / t (s = tr Cov of the noise); the table gives t * rho_t and
  the error over s / t (mean of 20 seeds), and the error of twice the rule.
- two coupled blocks (a bilinear model's u and v in miniature): T_u = mu v + b + noise,
  T_v = mu u + b + noise, under option (a) (v reads the new u) and (b) (one snapshot). Along the
  slow joint mode a node's mean gradient is delta times its distance to the joint optimum
  (delta = 1 - mu under (b), 1 - mu^2 under (a)); minimizing the expected distance to the
  optimum after one step gives the paper's rate divided by delta. Columns: rho_t = t^-0.6, the
  rule, the rule / delta with the true delta (its memory kept at the rule's own rate), the
  rule x 2 with its memory following the larger rate. Error: squared distance to the fixed
  point over that of the start (mean of 10 seeds).

- a drifting target (design 1 of issue 16's late gap: does a node track a moving optimum?):
  g_t = lambda*_t - lambda_t + noise with lambda*_t moving by v a step along a line, or by a
  random walk of step variance v^2; the best constant rate is (4 v^2 / s)^(1/3) for the line
  (lag^2 + noise, minimized) and the Kalman gain K, K^2 / (1 - K) = v^2 / s, for the walk.
  Columns: the mean rate and error (the last 1,000 of 3,000 steps, 3 seeds).
- couplings spread over the dimensions (mu_i = 0 .. 0.98: contractions 1 to 1/50 under option
  (b)): the pooled agreement's zero (target_gain=1) against the default's target below it
  (which acts once the rates taken sum to the horizon, so late).

    python benchmarks/adaptive_coupled.py
"""
from __future__ import annotations

import argparse
import sys
import pathlib

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import vmp  # noqa: E402


def fixed_target(d: int = 20, snr: float = 0.1, steps: int = 400, seed: int = 0, scale: float = 1.0):
    """(rates, squared errors, s) of the rule (times ``scale``, its memory following the rate
    taken) on g_t = lambda* - lambda_t + noise, |lambda*|^2 / s = snr."""
    rng = np.random.default_rng(seed)
    star, s = np.ones(d), d / snr
    lam, schedule = np.zeros(d), vmp.Adaptive(coupled=False)
    st, rates, errors = schedule.start(), [], []
    for t in range(1, steps + 1):
        g = star - lam + np.sqrt(s / d) * rng.normal(size=d)
        tau = st["tau"]
        rho, st = schedule.rate(t, (g,), st)
        if scale != 1:
            rho = min(1.0, scale * rho)
            st["tau"] = max(tau * (1 - rho) + 1, schedule.min_tau)
        lam = lam + rho * g
        rates.append(rho)
        errors.append(float(np.sum((lam - star) ** 2)))
    return np.array(rates), np.array(errors), s


def coupled(mu: float, option: str, rule: str, delta: float = 1.0, d: int = 50, snr: float = 0.05,
            steps: int = 100, seed: int = 0) -> float:
    """Squared distance to the fixed point u = v = b / (1 - mu) after ``steps``, over the start's."""
    rng = np.random.default_rng(seed)
    b = np.ones(d)
    star, sigma = b / (1 - mu), np.sqrt(1 / snr)
    x = {"u": np.zeros(d), "v": np.zeros(d)}
    other = {"u": "v", "v": "u"}
    schedule = vmp.Adaptive(coupled=rule == "coupled")
    st = {n: schedule.start() for n in x}

    def pool():
        if rule == "coupled":
            st.update(zip(st, schedule.pool(list(st.values()))))

    def rate(n, g, t):
        if rule == "t^-0.6":
            return t ** -0.6
        tau = st[n]["tau"]
        rho, st[n] = schedule.rate(t, (g,), st[n])
        if rule == "x2":  # the memory follows the larger rate: tau_(t+1) = tau_t (1 - 2 rho) + 1
            rho = min(1.0, 2 * rho)
            st[n]["tau"] = max(tau * (1 - rho) + 1, schedule.min_tau)
        return min(1.0, rho / delta) if rule == "rule / delta" else rho

    for t in range(1, steps + 1):
        if option == "b":
            g = {n: mu * x[other[n]] + b + sigma * rng.normal(size=d) - x[n] for n in x}
            r = {n: rate(n, g[n], t) for n in x}
            x = {n: x[n] + r[n] * g[n] for n in x}
        else:
            for n in ("u", "v"):
                g = mu * x[other[n]] + b + sigma * rng.normal(size=d) - x[n]
                x[n] = x[n] + rate(n, g, t) * g
        pool()
    return float(sum(np.sum((x[n] - star) ** 2) for n in x) / (2 * d * star[0] ** 2))


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print("| |E g_1|^2 / s | t rho_t at t = 10, 50, 100, 400 | error / (s / t) at the same t | the same, rule x 2 |")
    print("|---|---|---|---|")
    at = np.array([10, 50, 100, 400])
    for snr in (1.0, 0.1, 0.01):
        runs = [fixed_target(snr=snr, seed=k) for k in range(20)]
        rho, err = np.mean([r[0] for r in runs], 0), np.mean([r[1] for r in runs], 0)
        s = runs[0][2]
        err2 = np.mean([fixed_target(snr=snr, seed=k, scale=2.0)[1] for k in range(20)], 0)
        print(f"| {snr:g} | {', '.join(f'{v:.2f}' for v in rho[at - 1] * at)} | "
              f"{', '.join(f'{v:.2f}' for v in err[at - 1] / (s / at))} | "
              f"{', '.join(f'{v:.3g}' for v in err2[at - 1] / (s / at))} |")
    rules = ("t^-0.6", "rule", "rule / delta", "x2", "coupled")
    print("\n| steps | option | mu | delta | " + " | ".join(rules) + " |")
    print("|---|---|---|---|" + "---|" * len(rules))
    for steps in (100, 400):
        for option in ("a", "b"):
            for mu in (0.0, 0.5, 0.9):
                delta = 1 - mu if option == "b" else 1 - mu ** 2
                cells = [np.mean([coupled(mu, option, rule, delta, steps=steps, seed=k) for k in range(10)])
                         for rule in rules]
                print(f"| {steps} | ({option}) | {mu} | {delta:.2f} | " + " | ".join(f"{c:.3g}" for c in cells) + " |")
    schedules = {"rule": vmp.Adaptive(coupled=False), "coupled": vmp.Adaptive()}
    print("\n| drift | v | best constant: rate, error | " + " | ".join(schedules) + " |\n|---|---|---|---|---|")
    for walk in (False, True):
        for v in (0.05, 0.2):
            best = np.roots([1.0, v ** 2 / 20, -v ** 2 / 20]).max() if walk else (4 * v ** 2 / 20) ** (1 / 3)
            cells = [np.mean([drifting(sch, v, walk, seed=k) for k in range(3)], 0)
                     for sch in (vmp.Constant(float(best)), *schedules.values())]
            print(f"| {'walk' if walk else 'line'} | {v} | " + " | ".join(f"{r:.3f}, {e:.3g}" for r, e in cells) + " |")
    print("\n| spread, option (b) | target_gain=1 (the zero) | default (1.5) | t^-0.6 |\n|---|---|---|---|")
    for steps in (1000, 2000):
        cells = [np.mean([spread(sch, steps=steps, seed=k) for k in range(6)])
                 for sch in (vmp.Adaptive(target_gain=1.0), vmp.Adaptive(), None)]
        print(f"| {steps} steps | " + " | ".join(f"{c:.3g}" for c in cells) + " |")
    return 0


def drifting(schedule, v: float, walk: bool, d: int = 20, s: float = 20.0, steps: int = 3000, seed: int = 0):
    """(mean rate, mean squared error) over the last 1,000 steps on a target moving by v a step."""
    rng = np.random.default_rng(seed)
    star, lam, line = np.zeros(d), np.zeros(d), np.ones(d) / np.sqrt(d)
    st, rates, errors = schedule.start(), [], []
    for t in range(1, steps + 1):
        star = star + (v * rng.normal(size=d) / np.sqrt(d) if walk else v * line)
        g = star - lam + np.sqrt(s / d) * rng.normal(size=d)
        rho, st = schedule.rate(t, (g,), st)
        [st] = schedule.pool([st])
        lam = lam + rho * g
        rates.append(rho)
        errors.append(float(np.sum((lam - star) ** 2)))
    return float(np.mean(rates[-1000:])), float(np.mean(errors[-1000:]))


def spread(schedule, steps: int, seed: int, d: int = 50, snr: float = 0.05) -> float:
    """Squared distance to the fixed point over the start's, two blocks under option (b) with the
    couplings mu_i = 0 .. 0.98 (``schedule`` None: t^-0.6)."""
    rng = np.random.default_rng(seed)
    mu, b = np.linspace(0.0, 0.98, d), np.ones(d)
    star = b / (1 - mu)
    x = [np.zeros(d), np.zeros(d)]
    st = [schedule.start(), schedule.start()] if schedule else None
    for t in range(1, steps + 1):
        g = [mu * x[1 - i] + b + rng.normal(size=d) / np.sqrt(snr) - x[i] for i in range(2)]
        rho = [t ** -0.6] * 2
        if schedule:
            for i in range(2):
                rho[i], st[i] = schedule.rate(t, (g[i],), st[i])
            st = schedule.pool(st)
        x = [x[i] + rho[i] * g[i] for i in range(2)]
    return float(sum(np.sum((xi - star) ** 2) for xi in x) / (2 * np.sum(star ** 2)))


if __name__ == "__main__":
    sys.exit(main())
