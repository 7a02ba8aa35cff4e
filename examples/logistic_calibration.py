"""Calibration of Bayesian logistic regression (``vmp.models.logistic_regression``) on held-out
data: breast_cancer (scikit-learn), standardized, 5 stratified folds; the held-out P(y = 1) of
vmp's predictive (integrating over q(w)) and of scikit-learn's LogisticRegression(C = 1) at the
same L2 penalty, in a reliability diagram (10 bins) with each one's log-loss and expected
calibration error. Writes docs/figures/calibration.png (or ``--out``).

    python examples/logistic_calibration.py [--out docs/figures/calibration.png]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def held_out():
    """(y, vmp's P(y = 1), scikit-learn's) over the 5 folds' held-out rows."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from vmp.models import logistic_regression

    x, y = load_breast_cancer(return_X_y=True)
    ys, ours, theirs = [], [], []
    for train, test in StratifiedKFold(5, shuffle=True, random_state=0).split(x, y):
        scale = StandardScaler().fit(x[train])
        x_train, x_test = scale.transform(x[train]), scale.transform(x[test])
        model = logistic_regression(x_train, y[train], prior_precision=1.0)
        model.fit(iterations=500, tol=1e-7, seed=0, progress=False)
        model.set_data("X", x_test)
        ours.append(model.predict("y").mean)
        theirs.append(LogisticRegression(C=1.0, max_iter=5000).fit(x_train, y[train]).predict_proba(x_test)[:, 1])
        ys.append(y[test])
    return np.concatenate(ys), np.concatenate(ours), np.concatenate(theirs)


def reliability(y, p, bins: int = 10):
    """(mean prediction, observed frequency, count) per probability bin, and the expected
    calibration error sum_b n_b / n |frequency_b - mean_b|."""
    which = np.minimum((p * bins).astype(int), bins - 1)
    n = np.bincount(which, minlength=bins)
    mean = np.bincount(which, p, bins) / np.maximum(n, 1)
    freq = np.bincount(which, y, bins) / np.maximum(n, 1)
    return mean[n > 0], freq[n > 0], n[n > 0], float(np.sum(n * np.abs(freq - mean)) / len(y))


def log_loss(y, p) -> float:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "figures" / "calibration.png"))
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y, ours, theirs = held_out()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--")
    for label, p, marker in (("vmp (predictive over q(w))", ours, "o"), ("scikit-learn, C = 1", theirs, "s")):
        mean, freq, n, ece = reliability(y, p)
        ax.plot(mean, freq, marker=marker, label=f"{label}: log-loss {log_loss(y, p):.4f}, ECE {ece:.3f}")
        print(f"{label}: held-out log-loss {log_loss(y, p):.5f}, expected calibration error {ece:.4f}")
    ax.set_xlabel("predicted P(y = 1), benign (bin mean)")
    ax.set_ylabel("observed frequency")
    ax.set_title("breast_cancer, 5 folds, held-out")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
