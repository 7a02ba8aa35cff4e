"""Time to a bound (the demo's larger data set), checked against the histories read by hand."""
import numpy as np

import vmp
from vmp.cli import blobs
from vmp.diagnostics.race import race_table, race_verdict, time_to_bound
from vmp.models import gaussian_mixture


def test_time_to_bound_reads_the_first_evaluation_past_each_target():
    x, _ = blobs(3000, 0)
    fits = {
        "batch": gaussian_mixture(x, 4).fit(iterations=4, seed=0, progress=False),
        "svi": gaussian_mixture(x, 4).fit(method="stochastic", subsample=vmp.Minibatch("data", 100),
                                          iterations=40, evaluate_every=10, evaluate="full", seed=0,
                                          progress=False),
    }
    gaps = (0.05, 0.01, 0.0)
    rows = time_to_bound(fits, gaps)
    best = max(float(np.max(r.history["evaluations"]["elbo"])) for r in fits.values())
    for row, gap in zip(rows, gaps):
        target = best - gap * abs(best)
        assert row["target"] == target
        for label, result in fits.items():
            h = result.history
            elbo, at = np.asarray(h["evaluations"]["elbo"]), np.asarray(h["evaluations"]["iteration"])
            first = next((i for i, e in enumerate(elbo) if e >= target), None)
            if first is None:
                assert row[label] is None
                continue
            seconds = float(np.sum(np.asarray(h["step_seconds"])[:at[first]]))
            assert row[label][1] == at[first]
            assert abs(row[label][0] - seconds) < 1e-9
    assert sum(row[label] is not None for label in fits for row in rows[-1:]) == 1  # only the best hits gap 0
    table = race_table(rows, list(fits))
    assert table.count("\n") == 2 + len(gaps) and "5.0% of the best" in table
    assert "reached within 0.0% first" in race_verdict(rows, "svi", "batch")
