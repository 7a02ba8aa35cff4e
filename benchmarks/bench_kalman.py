"""Benchmark: Kalman smoothing inside VMP (vmp.GaussianMarkovChain) against a hand-written RTS
smoother, its cost in T, and the VB linear dynamical system on a long series.

Synthetic data: a 2-D rotation-and-decay state observed through one noisy coordinate
combination, y_t = c . x_t + N(0, r). Times in CPU seconds (the fastest of --repeat after a
warm-up; BLAS on one thread; the machine may be shared):

* ``hand-written``  the anchor, measured in the same run: the covariance-form Kalman filter and
                    RTS smoother a user would write in numpy for this model (Sarkka 2013,
                    algorithms 4.1 and 8.2; the scalar innovation divides instead of inverting);
* ``smoother``      the chain's moments from its natural parameters (what one update of q(x)
                    costs: block cyclic reduction, vmp/families/_cyclic.py);
* ``fit``           ``model.fit(iterations=1)`` on the model with known parameters: the prior
                    start, one update (the exact smoother) and the bound;
* ``T scaling``     the fit at T = 10^4 and 10^6: the ratio against 100 (linear cost);
* ``T = 1,000``     the fit, printed beside RxInfer.jl's published 77 ms for a 2-D linear
                    Gaussian state-space model with known parameters (a different machine and
                    language: for the record, not a ratio);
* ``learning``      ``vmp.models.linear_dynamical_system`` on T = 10^4 steps (D = 2, 3, 4): the
                    largest error of A's eigenvalues and the smoothed signal's RMSE against the
                    Kalman smoother's with the true parameters.

    python benchmarks/bench_kalman.py                 # T = 10^5 for the comparison
    python benchmarks/bench_kalman.py --skip-learning
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench import best_cpu, limit_threads  # noqa: E402

import vmp  # noqa: E402
import vmp.models  # noqa: E402
from vmp.families.gaussian_chain import GaussianMarkovChain  # noqa: E402

ANGLE, DECAY = 0.1, 0.99
A = DECAY * np.array([[np.cos(ANGLE), -np.sin(ANGLE)], [np.sin(ANGLE), np.cos(ANGLE)]])
Q, C, R = 0.05 * np.eye(2), np.array([1.0, 0.5]), 0.5
M0, P0 = np.zeros(2), np.eye(2)


def simulate(steps: int, rng) -> np.ndarray:
    w = rng.multivariate_normal(np.zeros(2), Q, size=steps)
    x = np.empty((steps, 2))
    x[0] = rng.multivariate_normal(M0, P0)
    for t in range(1, steps):
        x[t] = A @ x[t - 1] + w[t]
    return x @ C + np.sqrt(R) * rng.normal(size=steps)


def handwritten(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smoothed means (T, 2) and covariances (T, 2, 2): the Kalman filter, then RTS."""
    steps = len(y)
    mf, pf = np.empty((steps, 2)), np.empty((steps, 2, 2))
    mp, pp = np.empty((steps, 2)), np.empty((steps, 2, 2))
    at = A.T
    m, p = M0, P0
    for t in range(steps):
        if t:
            m, p = A @ m, A @ p @ at + Q
        mp[t], pp[t] = m, p
        pc = p @ C
        gain = pc / (C @ pc + R)
        m = m + gain * (y[t] - C @ m)
        p = p - np.outer(gain, pc)
        mf[t], pf[t] = m, p
    ms, ps = mf.copy(), pf.copy()
    for t in range(steps - 2, -1, -1):
        j = pf[t] @ at @ np.linalg.inv(pp[t + 1])
        ms[t] = mf[t] + j @ (ms[t + 1] - mp[t + 1])
        ps[t] = pf[t] + j @ (ps[t + 1] - pp[t + 1]) @ j.T
    return ms, ps


def model_of(y: np.ndarray) -> vmp.Model:
    with vmp.Model("lgssm") as model:
        with vmp.Plate("time", len(y)):
            x = vmp.GaussianMarkovChain("x", M0, np.linalg.inv(P0), A, np.linalg.inv(Q))
            vmp.Normal("y", vmp.dot(x, C), 1.0 / R, observed=y)
    return model


def fit_time(y: np.ndarray, repeat: int) -> tuple[float, vmp.Model]:
    """One update is the exact smoother with known parameters: the fit stops there (the
    ConvergenceWarning of a one-iteration fit is expected)."""
    model = model_of(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.ConvergenceWarning)
        return best_cpu(lambda: model.fit(iterations=1, progress=False), repeat), model


def comparison(steps: int, repeat: int) -> None:
    y = simulate(steps, np.random.default_rng(0))
    anchor = best_cpu(lambda: handwritten(y), repeat)
    seconds, model = fit_time(y, repeat)
    natural = tuple(np.array(a) for a in model["x"].natural)
    smoother = best_cpu(lambda: GaussianMarkovChain.moments(tuple(a.copy() for a in natural)), repeat)
    ms, ps = handwritten(y)
    p = model["x"].parameters
    gap = max(np.abs(p["mean"] - ms).max(), np.abs(p["covariance"] - ps).max())
    print(f"T = {steps:,}, D = 2: hand-written RTS {anchor:.3f} s; vmp smoother {smoother:.3f} s "
          f"({smoother / anchor:.2f}x); vmp fit(iterations=1) {seconds:.3f} s ({seconds / anchor:.2f}x); "
          f"largest difference of the smoothed moments {gap:.1e}")


def scaling(repeat: int) -> None:
    times = {}
    for steps in (10 ** 3, 10 ** 4, 10 ** 6):
        times[steps] = fit_time(simulate(steps, np.random.default_rng(1)), repeat)[0]
    ratio = times[10 ** 6] / times[10 ** 4]
    print(f"fit at T = 10^4: {times[10 ** 4]:.3f} s, T = 10^6: {times[10 ** 6]:.2f} s; ratio {ratio:.1f} "
          f"({ratio / 100:.2f}x of linear)")
    print(f"fit at T = 1,000: {1e3 * times[10 ** 3]:.1f} ms (RxInfer.jl's published figure for a 2-D model with "
          f"known parameters: 77 ms)")


def learning(steps: int, seed: int = 2) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from tests.test_gaussian_chain import kalman

    rng = np.random.default_rng(seed)
    for d in (2, 3, 4):
        radius = rng.uniform(0.6, 0.95, size=d)
        basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
        a = basis @ np.diag(radius) @ basis.T
        c, q, r = rng.normal(size=(d + 2, d)), 0.1 * np.eye(d), 0.2 * np.eye(d + 2)
        x = np.zeros((steps, d))
        for t in range(1, steps):
            x[t] = a @ x[t - 1] + rng.multivariate_normal(np.zeros(d), q)
        y = x @ c.T + rng.multivariate_normal(np.zeros(d + 2), r, size=steps)
        model = vmp.models.linear_dynamical_system(y, d)
        tick = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", vmp.ConvergenceWarning)
            result = model.fit(iterations=200, tol=1e-7, seed=0, progress=False)
        seconds = time.process_time() - tick
        error = np.max(np.abs(np.sort(np.linalg.eigvals(a)) - np.sort(np.linalg.eigvals(model["A"].mean))))
        ms = kalman(y, np.ones(steps, bool), a, q, c, r, np.zeros(d), np.eye(d))[0]
        true = np.sqrt(np.mean((ms @ c.T - x @ c.T) ** 2))
        found = np.sqrt(np.mean((model["x"].mean[0] @ model["C"].mean.T - x @ c.T) ** 2))
        print(f"learning D = {d}, T = {steps:,}: {result.iterations} iterations, {seconds:.1f} s; eigenvalue error "
              f"{error:.3f}; signal RMSE {found:.4f} against {true:.4f} with the true parameters "
              f"({found / true:.3f}x)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--t", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--learning-t", type=int, default=10_000)
    p.add_argument("--skip-learning", action="store_true")
    args = p.parse_args()
    print(f"BLAS: {limit_threads(1)}; load average {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    comparison(args.t, args.repeat)
    scaling(args.repeat)
    if not args.skip_learning:
        learning(args.learning_t)


if __name__ == "__main__":
    main()
