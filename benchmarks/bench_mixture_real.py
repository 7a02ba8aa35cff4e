"""Benchmark: the default Gaussian mixture on real data, against scikit-learn's default.

Three labelled data sets: iris (standardized, K = 3), wine (standardized, K = 3) and digits (its
first 10 principal components, K = 10). For each, over --seeds seeds, ``vmp.models.gaussian_mixture(x, K)
.fit(seed=s)`` with every default (a joint Normal-Wishart per component, stick-breaking weights,
k-means start) and scikit-learn's ``BayesianGaussianMixture(n_components=K, random_state=s)``
with every default; the adjusted Rand index of the most probable component of each point against
the labels, and the wall time per fit (the fastest machine share is not guaranteed: the load
average is printed with the table). BLAS runs on one thread in both.

``--variants`` also fits the other choices the builder offers (covariance "joint",
"factorized" or "diag"; weights "dirichlet_process" or "dirichlet"; scikit-learn's beta0 = 1),
the measurement behind the defaults.

    python benchmarks/bench_mixture_real.py                # the defaults, 5 seeds
    python benchmarks/bench_mixture_real.py --variants     # and the alternatives
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from _bench import limit_threads  # noqa: E402

VARIANTS = {
    "joint, dirichlet": dict(weights="dirichlet"),
    "factorized, dirichlet_process": dict(covariance="factorized"),
    "factorized, dirichlet": dict(covariance="factorized", weights="dirichlet"),
    "diag, dirichlet_process": dict(covariance="diag"),
    "joint, dirichlet_process, beta0 = 1": dict(mean_precision=1.0),
}


def data_sets():
    from sklearn import datasets
    from sklearn.decomposition import PCA

    def standard(x):
        return (x - x.mean(0)) / x.std(0)

    iris, wine, digits = datasets.load_iris(), datasets.load_wine(), datasets.load_digits()
    return {"iris": (standard(iris.data), iris.target, 3), "wine": (standard(wine.data), wine.target, 3),
            "digits (10 PCs)": (PCA(10, random_state=0).fit_transform(digits.data), digits.target, 10)}


def sklearn_fit(x, k, seed):
    from sklearn.mixture import BayesianGaussianMixture

    return BayesianGaussianMixture(n_components=k, random_state=seed).fit(x).predict(x)


def vmp_fit(x, k, seed, options):
    from vmp.models import gaussian_mixture

    model = gaussian_mixture(x, k, **options)
    model.fit(seed=seed, progress=False)
    return model["z"].mean.argmax(-1)


def score(fit, y, seeds):
    """(mean adjusted Rand index, the per-seed values, seconds per fit)."""
    from sklearn.metrics import adjusted_rand_score

    aris, start = [], time.perf_counter()
    for seed in range(seeds):
        aris.append(adjusted_rand_score(y, fit(seed)))
    return float(np.mean(aris)), aris, (time.perf_counter() - start) / seeds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--variants", action="store_true", help="also fit the builder's other choices")
    args = p.parse_args()
    threads = limit_threads(1)
    warnings.filterwarnings("ignore")  # scikit-learn's ConvergenceWarning at max_iter = 100
    print(f"BLAS: {threads}; load average before: {os.getloadavg()[0]:.1f}")
    print("| data | N x D | K | scikit-learn ARI | vmp ARI | scikit-learn s/fit | vmp s/fit | vmp / scikit-learn time |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for name, (x, y, k) in data_sets().items():
        theirs = score(lambda s: sklearn_fit(x, k, s), y, args.seeds)
        ours = score(lambda s: vmp_fit(x, k, s, {}), y, args.seeds)
        print(f"| {name} | {x.shape[0]} x {x.shape[1]} | {k} | {theirs[0]:.3f} | {ours[0]:.3f} | {theirs[2]:.3f} | "
              f"{ours[2]:.3f} | {ours[2] / theirs[2]:.1f} |", flush=True)
        rows.append((name, x, y, k, theirs, ours))
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    for name, x, y, k, theirs, ours in rows:
        print(f"{name}: per seed scikit-learn {np.round(theirs[1], 3).tolist()}, vmp {np.round(ours[1], 3).tolist()}")
    if args.variants:
        print("\n| data | variant | vmp ARI | s/fit |\n|---|---|---|---|")
        for name, x, y, k, _, ours in rows:
            print(f"| {name} | joint, dirichlet_process (default) | {ours[0]:.3f} | {ours[2]:.3f} |")
            for label, options in VARIANTS.items():
                mean, _, seconds = score(lambda s: vmp_fit(x, k, s, options), y, args.seeds)
                print(f"| {name} | {label} | {mean:.3f} | {seconds:.3f} |", flush=True)
    shortfall = [name for name, *_, theirs, ours in rows if ours[0] < theirs[0]]
    print("vmp's mean ARI " + ("is below scikit-learn's on " + ", ".join(shortfall) if shortfall
                                else "is at least scikit-learn's on every data set"))


if __name__ == "__main__":
    main()
