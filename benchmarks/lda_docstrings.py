"""Measurement: topics of SciPy's docstrings, LDA with each library's defaults, against their modules.

The corpus: the docstrings of the public functions and classes of twelve SciPy subpackages (each
name in the subpackage's ``__all__`` that is a function or a class and has a docstring of at
least 30 words; one document per distinct docstring), as a new user would take them from the
installed SciPy. Words: scikit-learn's CountVectorizer (English stop words, words in at least 3
and at most half of the docstrings). K = the number of subpackages. Each document's main topic
(the largest of its topic proportions) is compared with its subpackage by the adjusted Rand index.

vmp: ``vmp.sklearn.LatentDirichletAllocation(n_components=K, random_state=seed)``, its defaults
(batch VMP); scikit-learn: ``LatentDirichletAllocation(n_components=K, random_state=seed)``, its
defaults (batch variational Bayes, 10 passes). 5 seeds.

    python benchmarks/lda_docstrings.py [--seeds 0 1 2 3 4]
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import pathlib
import sys
import time
import warnings

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _bench import limit_threads  # noqa: E402

SUBPACKAGES = ("cluster.hierarchy", "fft", "integrate", "interpolate", "io", "linalg", "ndimage", "optimize",
               "signal", "sparse.linalg", "spatial", "stats")


def docstrings(min_words: int = 30) -> tuple[list[str], np.ndarray, list[str]]:
    """(the docstrings, their subpackage's index, the subpackages)."""
    texts, labels, seen = [], [], set()
    for i, name in enumerate(SUBPACKAGES):
        module = importlib.import_module(f"scipy.{name}")
        for attr in sorted(getattr(module, "__all__", [])):
            obj = getattr(module, attr, None)
            if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                continue
            doc = inspect.getdoc(obj) or ""
            if len(doc.split()) < min_words or doc in seen:
                continue
            seen.add(doc)
            texts.append(doc)
            labels.append(i)
    return texts, np.asarray(labels), list(SUBPACKAGES)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = ap.parse_args(argv)
    from sklearn.decomposition import LatentDirichletAllocation as SkLDA
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics import adjusted_rand_score

    import vmp.sklearn

    texts, labels, names = docstrings()
    x = CountVectorizer(stop_words="english", min_df=3, max_df=0.5).fit_transform(texts)
    keep = np.asarray(x.sum(1)).ravel() > 0
    x, labels = x[keep], labels[keep]
    k = len(names)
    print(f"{x.shape[0]} docstrings of {k} SciPy subpackages ({', '.join(names)}), {x.shape[1]} words, "
          f"{int(x.sum())} tokens; K = {k}; BLAS: {limit_threads(1)}")
    print("| seed | vmp ARI | scikit-learn ARI | vmp s | scikit-learn s |")
    print("|---|---|---|---|---|")
    scores = {"vmp": [], "scikit-learn": []}
    for seed in args.seeds:
        row = {}
        for name, make in (("vmp", lambda: vmp.sklearn.LatentDirichletAllocation(n_components=k, random_state=seed)),
                           ("scikit-learn", lambda: SkLDA(n_components=k, random_state=seed))):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theta = make().fit_transform(x)
            row[name] = (adjusted_rand_score(labels, theta.argmax(1)), time.perf_counter() - t0)
            scores[name].append(row[name][0])
        print(f"| {seed} | {row['vmp'][0]:.3f} | {row['scikit-learn'][0]:.3f} | {row['vmp'][1]:.1f} | "
              f"{row['scikit-learn'][1]:.1f} |", flush=True)
    print(f"| mean | {np.mean(scores['vmp']):.3f} | {np.mean(scores['scikit-learn']):.3f} | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
