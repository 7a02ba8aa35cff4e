"""The local-level model on a simulated random walk with a gap: smoothed and filtered levels with
95% intervals, the missing stretch imputed, and a 40-step forecast (docs/figures/time_series_forecast.png).

    python examples/local_level_forecast.py [--out docs/figures/time_series_forecast.png]
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from models import local_level  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="docs/figures/time_series_forecast.png")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    steps, ahead = 200, 40
    truth = np.cumsum(rng.normal(0.0, 0.3, steps + ahead))
    y = truth[:steps] + rng.normal(0.0, 1.0, steps)
    y[120:135] = np.nan
    model = local_level(y)
    model.fit(iterations=2000)
    smooth, filt = model["level"].smoothed(), model["level"].filtered()
    future = model.forecast(ahead, draws=4000, seed=0)
    sd = 1 / np.sqrt(model["level_precision"].mean[0])
    noise = 1 / np.sqrt(model["noise_precision"].mean)
    print(f"level sd {sd:.3f} (0.3 simulated), noise sd {noise:.3f} (1.0 simulated)")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, h = np.arange(steps), np.arange(steps, steps + ahead)
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(t, y, ".", color="0.55", ms=3, label="y (a gap at 120-134)")
    ax.plot(np.r_[t, h], truth, color="k", lw=0.8, label="simulated level")
    ax.plot(t, filt.mean[0, :, 0], color="tab:orange", lw=1, label="filtered level")
    ax.plot(t, smooth.mean[0, :, 0], color="tab:blue", lw=1.5, label="smoothed level, 95%")
    ax.fill_between(t, smooth.lower[0, :, 0], smooth.upper[0, :, 0], color="tab:blue", alpha=0.2)
    ax.plot(h, future.state_mean[0, :, 0], color="tab:green", lw=1.5, label="forecast level, 95%")
    low, high = future.state_interval()
    ax.fill_between(h, low[0, :, 0], high[0, :, 0], color="tab:green", alpha=0.2)
    ax.fill_between(h, future.lower[0], future.upper[0], color="tab:green", alpha=0.08, label="forecast y, 95%")
    ax.set_xlabel("t")
    ax.legend(loc="upper left", fontsize=8, ncol=2)
    ax.set_title(f"models.local_level: level sd {sd:.2f}, noise sd {noise:.2f}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
