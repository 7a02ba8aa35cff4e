"""Reproduce Paquet's Fig. 2: stochastic VMP on Bayesian matrix factorization of MovieLens.

Paquet's model as written: fully factorized q(u_mk) q(v_nk), r_mn ~ N(u_m . v_n, 1) on the raw
(uncentered) star ratings, rho_t = rho1 * t^-0.6, per-node child subsampling with C children.
Options (a) per-node and (b) global; C in {1, 2, 5, 20}; rho1 = 1 against rho1 = 1/512 for (a)
and 1/64 for (b). Plots the ELBO against observed-node accesses on log axes and prints the final
training RMSE of every run.

    python benchmarks/paquet_fig2.py [ratings.csv] [--iterations 300] [--out docs/figures/paquet_fig2.png]

With ``--adaptive`` it runs the rule alone, vmp.Adaptive(coupled=False) (Ranganath et al. 2013, no tuning), for the
same options and C, each until ``--accesses`` observed-node accesses, and compares its bound
with the fixed-rate runs saved in ``--out``'s JSON at 10^6 and 10^7 accesses (log-linear
interpolation; "-" where a run did not get that far), and draws them (the runs of
the defaults, dotted) with the fixed-rate runs in ``paquet_fig2_adaptive.png`` (with
``--replot`` from the saved JSON):

    python benchmarks/paquet_fig2.py --adaptive --accesses 1e7 [--children 1 2 5 20] [--replot]

``--samples n`` (the Monte Carlo start), ``--per element`` (one rate per user and per item) and
``--coupled`` (the rule times the factor shared by u and v, vmp.Adaptive()'s default) run
those options of vmp.Adaptive, under keys that name them (the coupled runs dash-dotted in the
figure). Every adaptive run records ``rate_trace``: each node's rate after steps 1, 2, 3, 5, 10,
20, 50, 100, 200, 500, 1000 (mean, 10/50/90% quantiles over its elements, elements 0 to 2; and
the factor f of a coupled run).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vmp  # noqa: E402
from vmp.models import matrix_factorization  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "data" / "movielens-small" / "ratings.csv"
CEILING = 1e8


def load(path: pathlib.Path):
    if not path.exists():
        sys.exit(f"ratings file not found: {path} (give the path of MovieLens ratings.csv)")
    d = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
    _, users = np.unique(d[:, 0], return_inverse=True)
    _, items = np.unique(d[:, 1], return_inverse=True)
    return users, items, d[:, 2]


def rmse(model, users, items, ratings) -> float:
    u, v = model["u"].mean, model["v"].mean
    pred = np.sum(u[users] * v[items], axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sqrt(np.mean((pred - ratings) ** 2)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ratings", nargs="?", type=pathlib.Path, default=DEFAULT)
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--budget", type=float, default=None,
                    help="fixed-rate runs: stop at this many accesses (or --iterations, whichever first)")
    ap.add_argument("--factors", type=int, default=10)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--structured", action="store_true", help="structured q(u_m) instead of Paquet's q(u_mk)")
    ap.add_argument("--center", action="store_true", help="subtract the mean rating")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "figures" / "paquet_fig2.png")
    ap.add_argument("--replot", action="store_true", help="redraw the figure from the saved JSON")
    ap.add_argument("--adaptive", action="store_true",
                    help="run vmp.Adaptive(coupled=False) and compare with the saved runs")
    ap.add_argument("--accesses", type=float, default=1e7, help="--adaptive: accesses each run goes to")
    ap.add_argument("--children", type=int, nargs="+", default=[1, 2, 5, 20])
    ap.add_argument("--options", nargs="+", default=["per-node", "global"], choices=["per-node", "global"])
    ap.add_argument("--samples", type=int, default=0, help="--adaptive: vmp.Adaptive(samples=...), the Monte Carlo start")
    ap.add_argument("--per", default="auto", choices=["auto", "element", "node"],
                    help="--adaptive: vmp.Adaptive(per=...): one rate per plate element or per node")
    ap.add_argument("--coupled", action="store_true",
                    help="--adaptive: vmp.Adaptive(coupled=True), the rule times the factor of the gradients' agreement")
    ap.add_argument("--seed", type=int, default=0, help="the fits' seed (keys name it when not 0)")
    ap.add_argument("--backoff", action="store_true",
                    help="--adaptive: DomainMonitor and ElboMonitor back off (factor 2) instead of the defaults")
    args = ap.parse_args(argv)
    if args.adaptive:
        return adaptive(args)
    if args.replot:
        plot(json.loads(args.out.with_suffix(".json").read_text()), args.out)
        print(f"wrote {args.out}")
        return 0
    users, items, ratings = load(args.ratings)
    if args.center:
        ratings = ratings - ratings.mean()
    saved = args.out.with_suffix(".json")
    runs = json.loads(saved.read_text()) if saved.exists() else {}
    budget = args.budget
    for option, small in (("per-node", 1 / 512), ("global", 1 / 64)):
        for c in args.children if option in args.options else []:
            for rho1 in (1.0, small):
                model = matrix_factorization(users, items, ratings, args.factors, factorized=not args.structured,
                                             noise_precision=1.0)
                t0, c0 = time.perf_counter(), time.process_time()
                res = model.fit(method="stochastic", subsample=vmp.PerNode(children=c), update=option,
                                step=vmp.RobbinsMonro(tau=0.0, kappa=0.6, rho1=rho1),
                                iterations=args.iterations, evaluate_every=args.every, seed=args.seed, progress=False,
                                callback=None if budget is None else
                                lambda t, fit: fit.state.loop.accesses < budget)
                ev = res.history["evaluations"]
                err = rmse(model, users, items, ratings) if not res.diverged else float("inf")
                key = f"({'a' if option == 'per-node' else 'b'}) C={c} rho1={rho1:g}{_seed(args)}"
                runs[key] = {"accesses": ev["accesses"].tolist(), "elbo": ev["elbo"].tolist(), "rmse": err,
                             "diverged": bool(res.diverged), "message": res.message, "iterations": res.iterations,
                             "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}
                saved.write_text(json.dumps(runs, indent=1))
                print(f"{key:28s} rmse {err:10.4g}  final ELBO {ev['elbo'][-1]:14.6g}  "
                      f"{'DIVERGED ' if res.diverged else ''}{time.perf_counter() - t0:6.1f}s", flush=True)
    plot(runs, args.out)
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


def adaptive(args) -> int:
    users, items, ratings = load(args.ratings)
    saved = json.loads(args.out.with_suffix(".json").read_text())
    out = args.out.with_name(args.out.stem + "_adaptive.json")
    runs = json.loads(out.read_text()) if out.exists() else {}
    budget = args.accesses
    monitors = [vmp.DomainMonitor(action="backoff"), vmp.ElboMonitor(action="backoff")] if args.backoff else None
    for option in args.options:
        for c in [] if args.replot else args.children:
            key = (f"({'a' if option == 'per-node' else 'b'}) C={c} adaptive{'+backoff' if args.backoff else ''}"
                   f"{'' if args.samples == 0 else f' samples={args.samples}'}{'' if args.per == 'auto' else f' per={args.per}'}{' coupled' if args.coupled else ''}{_seed(args)}")
            model = matrix_factorization(users, items, ratings, args.factors, factorized=True, noise_precision=1.0)
            t0, c0 = time.perf_counter(), time.process_time()
            schedule = vmp.Adaptive(samples=args.samples, per=args.per, coupled=args.coupled)
            trace: dict = {}
            res = model.fit(method="stochastic", subsample=vmp.PerNode(children=c), update=option,
                            step=schedule, iterations=10 ** 6, evaluate_every=args.every, seed=args.seed, monitors=monitors,
                            callback=lambda t, fit: _trace(t, fit, schedule, trace)
                            and fit.state.loop.accesses < budget, progress=False)
            ev = res.history["evaluations"]
            err = rmse(model, users, items, ratings) if not res.diverged else float("inf")
            runs[key] = {"accesses": ev["accesses"].tolist(), "elbo": ev["elbo"].tolist(), "rmse": err,
                         "diverged": bool(res.diverged), "message": res.message, "iterations": res.iterations,
                         "rho_last": {n: float(r[-1]) for n, r in res.history["rho"].items()},
                         "rho_first100": {n: r[:100].tolist() for n, r in res.history["rho"].items()},
                         "rate_trace": trace,
                         "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0}
            out.write_text(json.dumps(runs, indent=1))
            print(f"{key:24s} rmse {err:8.4g}  final ELBO {ev['elbo'][-1]:12.6g}  {res.iterations} its  "
                  f"{'DIVERGED ' if res.diverged else ''}{time.perf_counter() - t0:6.1f}s", flush=True)
    print(table(runs, saved))
    plot({**saved, **{k: v for k, v in runs.items() if k.endswith((" adaptive", " adaptive coupled"))}},
         out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")
    return 0


TRACE_STEPS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


def _seed(args) -> str:
    return "" if args.seed == 0 else f" seed={args.seed}"


def _trace(t: int, fit, schedule, trace: dict) -> bool:
    """At the steps of TRACE_STEPS, each node's rate after step t's gradient (the rate its next
    average gives): mean, 10/50/90% quantiles over its elements, and elements 0 to 2."""
    if t in TRACE_STEPS:
        for name, st in fit.state.loop.schedules.items():
            r = np.ravel(schedule.rate_before(t, st))
            trace.setdefault(name, {})[t] = {"mean": float(r.mean()), "q": np.quantile(r, [0.1, 0.5, 0.9]).tolist(),
                                             "first": r[:3].tolist(), **({"f": float(np.exp(st["log_f"]))}
                                                                         if "log_f" in st else {})}
    return True


def at(run: dict, accesses: float) -> float:
    """The bound at ``accesses`` (linear in log accesses between evaluations), nan past the run."""
    acc, elbo = np.array(run["accesses"], float), np.array(run["elbo"], float)
    if run["diverged"] or acc[-1] < accesses:
        return float("nan")
    return float(np.interp(np.log(accesses), np.log(np.maximum(acc, 1.0)), elbo))


def table(runs: dict, saved: dict) -> str:
    """Markdown: the bound of each adaptive run and of the fixed-rate runs at 10^6 and 10^7 accesses
    and where the shorter fixed-rate run ended."""
    rows = ["| run | accesses | adaptive | rho1 = 1 | hand-tuned rho1 | adaptive better than both |",
            "|---|---|---|---|---|---|"]
    for key, run in runs.items():
        opt, c = key.split()[:2]
        seed = next((" " + w for w in key.split() if w.startswith("seed=")), "")
        one, tuned = (f"{opt} {c} rho1={r}{seed}" for r in ("1", "0.00195312" if opt == "(a)" else "0.015625"))
        if one not in saved:  # compared with the fixed-rate runs of seed 0
            one, tuned = (k.replace(seed, "") for k in (one, tuned))
        if run["diverged"]:
            rows.append(f"| {key} | {run['accesses'][-1]:.3g} | **diverged** | | | no |")
            continue
        fixed_end = min(saved[one]["accesses"][-1], saved[tuned]["accesses"][-1])
        points = {1e6, 1e7} | ({float(fixed_end)} if min(abs(np.log10(fixed_end) - 6), abs(np.log10(fixed_end) - 7)) > 0.05
                               else set())
        for a in sorted(points):
            mine, v1, vt = at(run, a), at(saved[one], a), at(saved[tuned], a)
            if np.isnan(mine):
                continue
            fixed = [v for v in (v1, vt) if not np.isnan(v)]
            better = "yes" if fixed and all(mine > v for v in fixed) else ("no" if fixed else "-")
            cells = [f"{v:.6g}" if not np.isnan(v) else ("diverged" if saved[k]["diverged"] else "-")
                     for v, k in ((v1, one), (vt, tuned))]
            rows.append(f"| {key} | {a:.3g} | {mine:.6g} | {cells[0]} | {cells[1]} | {better} |")
    return "\n".join(rows)


def plot(runs: dict, out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, opt in zip(axes, ("(a)", "(b)")):
        for key, run in runs.items():
            if not key.startswith(opt) or "seed=" in key:  # seed 0's runs only
                continue
            acc = np.maximum(np.array(run["accesses"], float), 1.0)
            with np.errstate(over="ignore", invalid="ignore"):
                neg = -np.array(run["elbo"], float)
            ok = np.isfinite(neg) & (neg > 0)
            style = "-" if "rho1=1 " in key + " " else ("-." if "coupled" in key else (":" if "adaptive" in key else "--"))
            shown = np.minimum(neg[ok], CEILING)
            line, = ax.plot(acc[ok], shown, style, label=key[4:] + (" (diverged)" if run["diverged"] else ""))
            if run["diverged"] or np.any(neg[ok] > CEILING):
                ax.plot(acc[ok][-1:], [CEILING], "x", color=line.get_color(), markersize=9)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(1e5, CEILING * 3)
        ax.set_xlabel("observed-node accesses")
        ax.set_title(f"option {opt}: {'per-node' if opt == '(a)' else 'global'} updates")
        ax.legend(fontsize=7)
    axes[0].set_ylabel(f"-ELBO (clipped at {CEILING:.0e}; x = diverged)")
    fig.suptitle("Stochastic VMP on MovieLens matrix factorization (Paquet Fig. 2)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
