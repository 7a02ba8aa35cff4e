"""Batch VMP's default tol (vmp/inference/options.py, BatchOptions): a mixture with a spare
component that crosses a saddle, one true cluster split between two components, is not stopped
on it."""
import warnings

import numpy as np

from vmp.models import gaussian_mixture


def _three_clusters(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(c, 1.0, size=(300, 2)) for c in ([-4, 0], [0, 3], [4, 0])])


def _fit(x: np.ndarray, **options):
    model = gaussian_mixture(x, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = model.fit(seed=4, progress=False, **options)
    return result, np.sort(np.asarray(model["z"].mean).mean(0))[::-1]


def test_the_default_tol_does_not_stop_a_mixture_on_a_split_cluster():
    """Seed 4: at tol 1e-6 the fit stops after 129 sweeps with the third cluster shared by two
    components (weights near .19 and .15), its bound 4e-3 relative below the fixed point; with the
    default (1e-7) it goes on until the halves merge, where a fit to tol 1e-13 (the fixed point) ends."""
    x = _three_clusters(4)
    early, split = _fit(x, tol=1e-6)
    result, weights = _fit(x)
    exact, _ = _fit(x, tol=1e-13, iterations=3000)
    assert np.sum(split > 0.05) == 4 and early.converged, "the case: tol 1e-6 stops on the saddle"
    assert result.converged and np.sum(weights > 0.05) == 3, weights
    np.testing.assert_allclose(weights[:3], 1 / 3, atol=0.02)
    assert abs(result.elbo[-1] - exact.elbo[-1]) <= 1e-7 * abs(exact.elbo[-1])
    assert early.elbo[-1] < exact.elbo[-1] - 1e-3 * abs(exact.elbo[-1])
