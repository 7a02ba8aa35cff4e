"""A state-space model through the rest of the engine: minibatches of whole sequences, a
checkpoint resumed to the bits of an uninterrupted fit, the diagram (the chain one node with its
self-loop), the summary, pickling."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import vmp
from vmp.models import linear_dynamical_system


def _sequences(seed=0):
    rng = np.random.default_rng(seed)
    return [np.cumsum(rng.normal(size=(n, 2)), 0) + rng.normal(size=(n, 2)) for n in (30, 25, 40, 35, 20, 30)]


@pytest.mark.parametrize("noise", ["diagonal", "full"])
def test_minibatches_of_sequences_rise_and_infer_the_chains(noise):
    model = linear_dynamical_system(_sequences(), 2, output_noise=noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", vmp.DivergenceWarning)
        result = model.fit(method="stochastic", subsample=vmp.Minibatch("sequences", 2), iterations=40, seed=0,
                           evaluate="full", evaluate_every=10)
    bounds = np.asarray(result.history["evaluations"]["elbo"])
    assert bounds[-1] > bounds[0]
    assert "x" not in model.state.natural  # local to the minibatch plate
    model.infer_locals()
    assert model["x"].mean.shape == (6, 40, 2) and np.all(np.isfinite(model["x"].mean))


def test_a_resumed_fit_has_the_bits_of_an_uninterrupted_one(tmp_path):
    path = tmp_path / "lds.npz"
    whole = linear_dynamical_system(_sequences(), 2).fit(iterations=6, tol=0, seed=0)
    model = linear_dynamical_system(_sequences(), 2)
    model.fit(iterations=3, tol=0, seed=0, checkpoint=path)
    resumed = model.fit(iterations=6, tol=0, seed=0, resume=path)
    np.testing.assert_array_equal(resumed.elbo, whole.elbo)
    for name in whole.state.natural:
        for a, b in zip(resumed.state.natural[name], whole.state.natural[name]):
            np.testing.assert_array_equal(a, b)
    again = pickle.loads(pickle.dumps(model))
    assert again.fit(iterations=6, tol=0, seed=0).elbo[-1] == whole.elbo[-1]


def test_the_diagram_draws_the_chain_with_a_self_loop_and_the_summary_names_it():
    model = linear_dynamical_system(_sequences(), 2)
    source = model.render().source
    assert 'x -> x [label=" time: t -> t+1"' in source
    assert "steps(" not in source and "transition" not in source.split("x -> x")[0].split("subgraph")[0]
    result = model.fit(iterations=3, tol=0)
    assert "GaussianMarkovChain" in result.summary(model)


def test_the_diagram_draws_a_learned_map_by_its_rows():
    source = linear_dynamical_system(_sequences(), 2, output_noise="full").render().source
    assert "matrix product, rows over outputs" in source and 'R -> y [label=" precision"]' in source
