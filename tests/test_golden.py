"""Refactors keep the bits: fits recorded before the inference layer owned its state give the
same final natural parameters and the same evaluated bounds."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from tests import golden_fits

GOLDEN = np.load(pathlib.Path(__file__).parent / "data" / "golden_fits.npz")


@pytest.mark.parametrize("name", sorted(golden_fits.FITS))
def test_same_bits_as_recorded(name):
    _, result, natural = golden_fits.run(name)
    keys = [k for k in GOLDEN.files if k.startswith(name + "/") and "#" not in k]
    assert keys
    for key in keys:
        _, node, i = key.split("/")
        np.testing.assert_array_equal(natural[node][int(i)], GOLDEN[key], err_msg=key)
    np.testing.assert_array_equal(np.asarray(result.elbo, float), GOLDEN[f"{name}/#elbo"])


def test_option_b_is_not_option_a():
    """The recorded option (b) run differs from the same run under option (a)."""
    build, kwargs = golden_fits.FITS["pernode_b_mf"]
    model = build()
    model.fit(**dict(kwargs, update="per-node", progress=False))
    a = model["u"].natural[0]
    assert not np.allclose(a, GOLDEN["pernode_b_mf/u/0"])
