"""``Gaussian.pin``: q(x_m | x_o) in the D x D layout, for a stack of elements with different
missing patterns, against scipy's conditional Gaussian element by element."""
from __future__ import annotations

import numpy as np
from scipy import stats

from vmp.families import Gaussian


def _stack(seed=0, n=40, d=4):
    rng = np.random.default_rng(seed)
    natural = Gaussian.random_natural(rng, (n,), (d,))
    observed = rng.random((n, d)) > 0.5
    return natural, observed, rng.normal(size=(n, d))


def test_pinned_moments_and_entropy_are_the_conditional_gaussians():
    natural, observed, x = _stack()
    pinned = Gaussian.pin(natural, observed, x)
    mean, second = Gaussian.moments(pinned)
    entropy = Gaussian.entropy(pinned)
    p = Gaussian.parameters(natural)
    for i, o in enumerate(observed):
        m = ~o
        assert np.allclose(mean[i, o], x[i, o], rtol=1e-14, atol=1e-14)  # exactly x_o at the node (Clamp)
        if not m.any():
            assert abs(entropy[i]) < 1e-12
            continue
        s = p["covariance"][i]
        gain = s[np.ix_(m, o)] @ np.linalg.inv(s[np.ix_(o, o)]) if o.any() else np.zeros((m.sum(), 0))
        cm = p["mean"][i, m] + gain @ (x[i, o] - p["mean"][i, o])
        cc = s[np.ix_(m, m)] - gain @ s[np.ix_(o, m)]
        assert np.allclose(mean[i, m], cm, atol=1e-10)
        assert np.allclose(second[i][np.ix_(m, m)], cc + np.outer(cm, cm), atol=1e-10)
        assert np.allclose(second[i][np.ix_(m, o)], np.outer(cm, x[i, o]), atol=1e-10)
        assert abs(entropy[i] - stats.multivariate_normal(cm, cc).entropy()) < 1e-10


def test_pin_is_affine_and_idempotent():
    """A blend of pinned parameters is pinned (stochastic steps keep q conditional), and pinning
    twice is pinning once."""
    natural, observed, x = _stack(1)
    other = Gaussian.random_natural(np.random.default_rng(2), (40,), (4,))
    a, b = Gaussian.pin(natural, observed, x), Gaussian.pin(other, observed, x)
    blend = tuple(0.3 * u + 0.7 * v for u, v in zip(natural, other))
    for u, v, w in zip(Gaussian.pin(blend, observed, x), a, b):
        np.testing.assert_allclose(u, 0.3 * v + 0.7 * w, rtol=1e-12, atol=1e-12)
    for u, v in zip(Gaussian.pin(a, observed, x), a):
        np.testing.assert_allclose(u, v, rtol=1e-14, atol=1e-14)


def test_pinned_moments_are_the_gradient_of_the_log_normalizer():
    """Finite differences of A at the pinned parameters in a masked entry give its moment."""
    natural, observed, x = _stack(3, n=6)
    pinned = Gaussian.pin(natural, observed, x)
    mean, second = Gaussian.moments(pinned)
    h = 1e-6
    for i, o in enumerate(observed):
        for j in np.nonzero(~o)[0]:
            up, down = [tuple(a.copy() for a in pinned) for _ in range(2)]
            up[0][i, j] += h
            down[0][i, j] -= h
            grad = (Gaussian.log_normalizer(up)[i] - Gaussian.log_normalizer(down)[i]) / (2 * h)
            assert abs(grad - mean[i, j]) < 1e-6
            up, down = [tuple(a.copy() for a in pinned) for _ in range(2)]
            up[1][i, j, j] += h
            down[1][i, j, j] -= h
            grad = (Gaussian.log_normalizer(up)[i] - Gaussian.log_normalizer(down)[i]) / (2 * h)
            assert abs(grad - second[i, j, j]) < 1e-5 * max(1.0, abs(second[i, j, j]))
