"""A Gaussian mixture that follows a stream: sensor readings arrive in chunks from a CSV file, and
the clusters' centers drift. Streaming VB with forget=1 (every chunk counts forever) against
forget=0.9 (old chunks fade), and population VB; per chunk the bound per reading and how far the
fitted centers are from the true ones (docs/streams.md).

    python examples/stream_mixture.py [--chunks 40] [--rows 500] [--drift 0.05]
"""
from __future__ import annotations

import argparse
import itertools
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import gaussian_mixture  # noqa: E402

START = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
SPEED = np.array([[1.0, 1.0], [-0.7, 1.3], [1.3, -0.7]])


def readings(chunks: int, rows: int, drift: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The readings (chunks * rows x 2) and the true centers at each chunk."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, chunks * rows)
    at = np.repeat(np.arange(chunks), rows)
    centers = START[None] + drift * np.arange(chunks)[:, None, None] * SPEED[None]
    return centers[at, z] + 0.7 * rng.normal(size=(chunks * rows, 2)), centers


def error(model, stream, centers: np.ndarray) -> float:
    """The mean distance of the fitted centers to the true ones (best matching)."""
    means = model["theta"].family.parameters(stream.posterior["theta"])["mean"]
    return min(float(np.mean(np.linalg.norm(means[list(p)] - centers, axis=1)))
               for p in itertools.permutations(range(3)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=40)
    p.add_argument("--rows", type=int, default=500)
    p.add_argument("--drift", type=float, default=0.05, help="how far the centers move per chunk")
    args = p.parse_args()
    x, centers = readings(args.chunks, args.rows, args.drift)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "readings.csv"
        np.savetxt(path, x, delimiter=",", header="a,b", comments="")
        runs = {"forget=1": {}, "forget=0.9": {"forget": 0.9}, "population=5000": {"population": 5000.0}}
        print(f"{'chunk':>5} " + " ".join(f"{name:>30}" for name in runs))
        streams = {}
        for name, options in runs.items():
            model = gaussian_mixture(x[:args.rows], 3)
            streams[name] = (model, model.stream("data", **options))
        readers = {name: stream.read(path, args.rows) for name, (_, stream) in streams.items()}
        for c in range(args.chunks):
            cells = []
            for name, (model, stream) in streams.items():
                result = stream.update(next(readers[name]))
                per = result.extra["stream"]["bound_per_element"]
                cells.append(f"bound {per:8.3f}, error {error(model, stream, centers[c]):6.3f}")
            if c % max(args.chunks // 10, 1) == 0 or c == args.chunks - 1:
                print(f"{c + 1:>5} " + " ".join(f"{cell:>30}" for cell in cells))


if __name__ == "__main__":
    main()
