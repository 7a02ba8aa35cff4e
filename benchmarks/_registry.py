"""The benchmarks that docs/benchmarks.md tabulates and compare_revisions.py alternates, one line each.

A line names the script (``benchmarks/NAME.py``; ``examples/NAME.py`` in revisions that kept the
benchmarks there), says what it measures, gives the arguments of the table's run and of a quick
run (``{ratings}`` stands for MovieLens's ratings.csv), the figure (a regular expression on the
script's printed output whose group is the number, the last match counting, and its unit) and the
anchor (what the figure is compared with in the same run, and a regular expression of the ratio
the script prints: the figure over the anchor's). To add a benchmark, add its line.
"""
from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: MovieLens ml-latest-small: $VMP_MOVIELENS, else a ``shared/`` folder beside the clone
RATINGS = pathlib.Path(os.environ.get("VMP_MOVIELENS", ROOT.parent / "shared" / "data" / "movielens-small" / "ratings.csv"))


@dataclass(frozen=True)
class Benchmark:
    name: str
    what: str
    args: str
    quick: str
    figure: str
    unit: str
    anchor: str
    ratio: str

    def script(self, root: pathlib.Path) -> pathlib.Path:
        """The script in a checkout: benchmarks/NAME.py, else examples/NAME.py."""
        for folder in ("benchmarks", "examples"):
            if (root / folder / f"{self.name}.py").is_file():
                return root / folder / f"{self.name}.py"
        raise FileNotFoundError(f"{self.name}.py is in neither {root}/benchmarks nor {root}/examples")

    def command(self, quick: bool = False) -> list[str]:
        """The arguments after the script's path."""
        return shlex.split((self.quick if quick else self.args).format(ratings=RATINGS))

    def parse(self, out: str) -> tuple[float | None, float | None]:
        """(figure, ratio to the anchor) read off the printed output; None where not printed."""
        found = [re.findall(pattern, out, re.M) for pattern in (self.figure, self.ratio)]
        return tuple(float(f[-1]) if f else None for f in found)


BENCHMARKS = (
    Benchmark("bench_mixture", "batch VMP, Gaussian mixture, N = 100,000, K = 10, D = 2", "--dims 2", "--n 20000 --dims 2 --iterations 10 --no-tracemalloc --rounds 1", r"^ ?2 vmp +\d+ +\S+ +(\S+)", "s per iteration", "scikit-learn BayesianGaussianMixture (k-means start)", r"D=2: vmp / sklearn-kmeans = (\S+)x"),
    Benchmark("bench_bmf_movielens", "batch VMP, matrix factorization on MovieLens (100,836 ratings), K = 5", "{ratings} --k 5 --only structured", "{ratings} --k 5 --only structured --iterations 5 --repeat 1", r"^structured +\d+ +\S+ +\S+ +\S+ +(\S+)", "CPU s per sweep", "a hand-written numpy VB sweep", r"with the bound, \S+x \(CPU (\S+)x\)"),
    Benchmark("bench_lda", "stochastic VMP with its defaults and default diagnostics, LDA on 3,762 news articles, K = 10, minibatches of 64, 10 passes, 5 seeds (held-out log-likelihood against scikit-learn and gensim: docs/stochastic.md)", "", "--seeds 0 --batches 40", r"^vmp: (\S+) ms per minibatch", "wall ms per minibatch", "scikit-learn online LDA (partial_fit), alternated minibatch by minibatch", r"^vmp against scikit-learn: .*?wall time per minibatch (\S+)x"),
    Benchmark("bench_stopping", "where tol=1e-3 (patience on the evaluated bound) stops stochastic fits with the defaults, LDA on the news corpus and a Gaussian mixture of 10^5 points (judged on its exact bound), 5 seeds each: S / P, P the step from which the bound stays within 1 tol of its plateau (goal 1 to 2; docs/stopping.md)", "--only lda mixture-1e5 --seeds 0 1 2 3 4", "--only lda --seeds 0 --steps 300", r"^stops S / P: (\S+)", "S / P", "patience alone (5 evaluations, no growing window)", r"; ratio (\S+)$"),
    Benchmark("bench_hmm", "forward-backward of 200 chains of 100 steps, K = 3", "", "--repeat 2", r"^forward-backward .*?: (\S+) ms CPU", "ms", "a hand-written scaled forward-backward in numpy", r"ns per step\), (\S+) x hand-written"),
    Benchmark("bench_dask", "batch VMP sweep, mixture N = 10^7, K = 10, D = 4, 2 Dask workers", "", "--n 1000000 --sweeps 2", r"^\| Dask, \d+ workers \| (\S+)", "s per sweep", "Serial in the same process", r"^\| Dask, \d+ workers \| \S+ \((\S+)x serial\)"),
    Benchmark("bench_kalman", "Gaussian Markov chain, T = 10^5, D = 2, known parameters: fit(iterations=1)", "--skip-learning", "--t 10000 --repeat 1 --skip-learning", r"vmp fit\(iterations=1\) (\S+) s", "CPU s", "a hand-written numpy Kalman filter and RTS smoother", r"vmp fit\(iterations=1\) \S+ s \((\S+)x\)"),
    Benchmark("bench_stream", "streaming VB, Gaussian mixture K = 3, D = 2: one chunk's update at the 100th chunk of 1,000 rows", "", "--chunks 10", r"^update at chunk \d+: (\S+) s", "CPU s per chunk", "batch VMP refit on the 100,000 rows seen", r"update / refit = (\S+)x"),
    Benchmark("bench_stream_lda", "LDA, K = 10, on 3,386 news articles streamed in arrival order in chunks of 256 documents: population VB (alpha = 3,386, one step on the whole chunk per chunk, bench_lda's step sizes, 10 passes over the stream), 3 seeds: held-out log-likelihood per word (goal: within 0.02 of the anchor's; docs/streams.md)", "--population 3386 --passes 10 --batch 256 --steps 1 --seeds 0 1 2", "--population 3386 --passes 1 --batch 256 --steps 1 --anchor-passes 1", r"^held-out log-likelihood per word: stream (\S+),", "held-out log-likelihood per word", "stochastic VMP with bench_lda's setting (minibatches of 64 drawn from all the documents, 10 passes)", r"^stream / stochastic = (\S+)x"),
    Benchmark("bench_logistic", "batch VMP, logistic regression on 10^5 x 20 (Polya-gamma), fit to tol 1e-6", "--sizes 1e4 1e6", "--sizes 1e4 --steps 20", r"CPU time: vmp's fit (\S+) s", "CPU s", "scikit-learn LogisticRegression (lbfgs) fit", r"CPU time: .*: (\S+) x$"),
    Benchmark("bench_scale", "stochastic mixture fit, 200 steps, defaults, N = 10^7 from a memmap", "", "--sizes 1e4 1e6 --steps 100", r"^ +\d+ +(?:memmap|memory) +(\S+)", "s per fit", "the same fit at N = 10^4", r"ratio (\S+)$"),
)


def run(bench: Benchmark, root: pathlib.Path = ROOT, quick: bool = False, timeout: float = 3600) -> dict:
    """Run one benchmark of the checkout at root with this Python (its vmp first on the path):
    the command, the figure, the ratio, the load average before and after, the wall time, and the
    output's last lines when the figure was not found."""
    args = bench.command(quick)
    script = bench.script(root)
    env = dict(os.environ, PYTHONPATH=str(root))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(script), *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
    figure, ratio = bench.parse(done.stdout)
    shown = (bench.quick if quick else bench.args).format(ratings="path/to/ratings.csv")
    record = dict(name=bench.name, command=f"python {script.relative_to(root)} {shown}".strip(),
                  figure=figure, unit=bench.unit, ratio=ratio, anchor=bench.anchor,
                  load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2),
                  seconds=round(time.perf_counter() - start, 1))
    if figure is None or done.returncode:
        record["error"] = (done.stdout + done.stderr).strip().splitlines()[-8:]
    return record


def select(names: list[str] | None) -> list[Benchmark]:
    """The registered benchmarks of these names (all when none), or SystemExit naming the unknown."""
    known = {b.name: b for b in BENCHMARKS}
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise SystemExit(f"unknown benchmarks {unknown}; registered: {sorted(known)}")
    return [known[n] for n in names] if names else list(BENCHMARKS)
