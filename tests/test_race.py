"""Time to a bound (the demo's larger data set), checked against the histories read by hand."""
import numpy as np

import vmp
from vmp.cli import blobs
from vmp.diagnostics.race import final_bounds, race_table, race_verdict, time_to_bound
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
    winner = max(fits, key=lambda k: fits[k].history["evaluations"]["elbo"][-1])
    assert final_bounds(fits).startswith(f"{winner} ended higher")


def test_race_verdict_calls_near_ties_ties():
    rows = [{"gap": 0.01, "target": -1.0, "a": (1.0, 10), "b": (1.1, 1)},
            {"gap": 0.005, "target": -1.0, "a": (1.0, 10), "b": (3.0, 2)},
            {"gap": 0.002, "target": -1.0, "a": None, "b": (3.0, 2)}]
    text = race_verdict(rows, "a", "b")
    assert text == ("both reached within 1.0% in about the same time; a reached within 0.5% first (3.0x "
                    "sooner); b reached within 0.2% first")
