"""The evaluator with its strategies gives the reference evaluator's messages and bounds on
every ``vmp.models`` builder (and a mixture whose folded message sits beside terms that do not
fold), through the default and every strategy but one (tests/reference_check.py). Models with a
partially observed node run the Clamp's path here and the data/latent split of the engine in
tests/test_reference_fits.py."""
from __future__ import annotations

import inspect

import pytest

import vmp
from tests.reference_check import VARIANTS, compare
from tests.reference_models import BUILDERS, OTHERS
from vmp.graph.strategies import DEFAULT

MODELS = {**BUILDERS, **OTHERS}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_strategy_gives_the_reference_numbers(name):
    compare(MODELS[name](), VARIANTS)


def test_every_builder_is_compared():
    """Each builder that ``vmp.models`` exports has an entry in tests/reference_models.py."""
    from vmp import models

    exported = {name for name in dir(models) if not name.startswith("_") and inspect.isfunction(getattr(models, name))
                and getattr(models, name).__module__.startswith(models.__name__ + ".")}
    missing = [name for name in exported if not any(key == name or key.startswith(name + "_") for key in BUILDERS)]
    assert exported and not missing


def test_the_reference_alone_is_a_model_option():
    """``model.compile(strategies=())`` binds every factor to the reference evaluator (no
    strategy), keeps that choice when the factors are bound again, and refuses an unknown name."""
    model = BUILDERS["gaussian_mixture"]()
    factors, _ = model.compile(strategies=())
    assert all(f.strategies == {} for f in factors.values())
    model._compiled = None
    assert all(f.strategies == {} for f in model.compile()[0].values())
    assert set(model.compile(strategies=DEFAULT)[0]["x"].strategies) == set(DEFAULT)
    with pytest.raises(vmp.OptionError, match="folded"):
        model.compile(strategies=("folded",))
