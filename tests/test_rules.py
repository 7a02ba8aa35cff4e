"""Every rule against finite differences of the one expected log-density it comes from.

For each case of tests/rule_cases.py and every hidden node the factor touches: the message is
the gradient of E[log p(child | parents)] with respect to that node's moments (central finite
differences along random directions), and E[log p] is linear in each node's moments.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import central_difference, random_natural, randomize, set_moments
from tests.rule_cases import ALLOCATING, CASES
from vmp.graph.expressions import random_nodes


def _setup(case):
    model, child = CASES[case]()
    rng = np.random.default_rng(11)
    randomize(model, rng)
    f = model.compile()[0][child]
    weight = f.child.factor_weights()
    return model, f, weight, rng


def _targets():
    for case in CASES:
        model, f, _, _ = _setup(case)
        for node in f.nodes():
            yield case, node.name


TARGETS = list(_targets())


def test_table_covers_every_rule():
    import vmp

    seen = set()
    for case in CASES:
        model, child = CASES[case]()
        node = model[child]
        for role, expr in node.parents.items():
            seen.add((node.family.name, role, expr.family.name))
    for rule in vmp.rules():
        assert rule in seen, f"no test case exercises rule {rule}"


@pytest.mark.parametrize("case,name", TARGETS)
def test_message_is_gradient_of_expected_log_density(case, name):
    model, f, weight, rng = _setup(case)
    node = model[name]
    msg = f.messages(node, weight)
    base = node.moments
    for _ in range(3):
        # along directions the moments can take: symmetric where they are (x x^T, not z_t z_{t+1}^T)
        direction = []
        for m in base:
            d = rng.normal(size=m.shape)
            if m.ndim >= 2 and m.shape[-1] == m.shape[-2] and np.allclose(m, np.swapaxes(m, -1, -2)):
                d = d + np.swapaxes(d, -1, -2)
            direction.append(d)
        if node is f.child and f.live is not None:
            # a barren element keeps its prior message; the bound does not depend on it
            keep = f.live.reshape(f.live.shape + (1,) * (base[0].ndim - f.live.ndim))
            direction = [d * keep for d in direction]
        fd = central_difference(f, node, weight, direction)
        analytic = sum(float(np.sum(g * d)) for g, d in zip(msg, direction))
        assert fd == pytest.approx(analytic, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("case,name", TARGETS)
def test_expected_log_density_is_linear_in_each_node(case, name):
    model, f, weight, rng = _setup(case)
    node = model[name]
    if case in ALLOCATING and node in random_nodes(model[f.child.name].parents["rate"]):
        pytest.skip("the allocation bound is convex in E[log theta]: tests/test_allocation.py")
    engine_coupled = model.compile()[0][f.child.name].coupled.get(name)
    base = node.moments
    direction = [rng.normal(size=m.shape) for m in base]
    if engine_coupled:
        # elements of a factorized dot meet in one term: linear in each slice along the coupled plate
        axis = node.plates.index(next(iter(engine_coupled)))
        mask = np.zeros(node.plate_shape[axis])
        mask[1] = 1.0
        shape = [1] * len(node.plate_shape)
        shape[axis] = -1
        direction = [d * mask.reshape(shape + [1] * (d.ndim - len(shape))) for d in direction]
    values = []
    for t in (0.0, 1.0, 2.0):
        set_moments(node, [m + t * d for m, d in zip(base, direction)])
        values.append(f.elog(weight, cached=False))
    set_moments(node, base)
    second = values[2] - 2 * values[1] + values[0]
    assert abs(second) <= 1e-8 * (1 + max(abs(v) for v in values))
    assert abs(values[1] - values[0]) > 1e-10, "the factor does not depend on this node"


@pytest.mark.parametrize("case,name", TARGETS)
def test_slice_messages_equal_slices_of_the_full_message(case, name):
    model, f, weight, rng = _setup(case)
    node = model[name]
    full = f.messages(node, weight)
    leaves = [leaf for leaf in f.targets if leaf.node is node]
    for axis, plate in enumerate(node.plates):
        if any(plate not in leaf.plates for leaf in leaves):
            continue  # a gathered plate is never updated slice by slice
        for i in range(plate.size):
            part = f.messages(node, weight, plate, i)
            for a, b in zip(full, part):
                assert np.allclose(np.take(a, i, axis=axis), b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", list(CASES))
def test_cached_elog_equals_fresh_elog(case):
    """The ELBO reuses the partial derivatives cached by the messages: after the q of each node in
    turn changes, the cached value follows the fresh one (a cache that ignored the change would
    return the value before it)."""
    model, f, weight, rng = _setup(case)
    for node in f.nodes():
        f.messages(node, weight)
    assert f.elog(weight) == pytest.approx(f.elog(weight, cached=False), rel=1e-12, abs=1e-12)
    for changed in f.nodes():
        for node in f.nodes():
            f.messages(node, weight)
        before = f.elog(weight)
        changed.set_natural(random_natural(changed, rng))
        fresh = f.elog(weight, cached=False)
        assert fresh != pytest.approx(before, rel=1e-9), f"changing q({changed.name}) changes the bound"
        assert f.elog(weight) == pytest.approx(fresh, rel=1e-12, abs=1e-12), changed.name


@pytest.mark.parametrize("case", list(CASES))
def test_per_element_elog_sums_to_total(case):
    model, f, weight, _ = _setup(case)
    per = f.elog(weight, per_element=True)
    assert per.shape == f.child.plate_shape
    assert np.sum(per) == pytest.approx(f.elog(weight, cached=False), rel=1e-10, abs=1e-10)


def _subset_cases():
    for case, name in TARGETS:
        model, child = CASES[case]()
        node = model[child]
        if node.plates:
            yield case, name


@pytest.mark.parametrize("case,name", list(_subset_cases()))
def test_messages_on_a_subset_equal_masked_full_messages(case, name):
    """A minibatch touches only its rows: the message computed on a subset of the child's
    outermost plate equals the full message with the other rows weighted 0 (restricted to the
    kept elements when the node itself lives on that plate)."""
    from vmp.graph.leaves import Context

    model, f, weight, rng = _setup(case)
    node = model[name]
    plate = f.child.plates[0]
    keep = np.sort(rng.choice(plate.size, size=max(1, plate.size // 2), replace=False))
    mask = np.zeros(plate.size)
    mask[keep] = 1.0
    w = mask.reshape((-1,) + (1,) * (len(f.child.plates) - 1)) * np.ones(f.child.plate_shape)
    if weight is not None:
        w = w * weight
    full = f.messages(node, w)
    ctx = Context(subset={plate.name: keep})
    part = f.messages(node, weight, ctx=ctx)
    for a, b in zip(full, part):
        if plate in node.plates:
            a = np.take(a, keep, axis=node.plates.index(plate))
        assert np.allclose(a, b, rtol=1e-10, atol=1e-10)
    assert f.elog(weight, ctx=ctx) == pytest.approx(f.elog(w, cached=False), rel=1e-10, abs=1e-10)
