"""New data in a declared model: ``model.set_data``.

The data of observed nodes and the values of ``vmp.Data`` inputs (constants, or the rows of a
gather ``u[vmp.Data("users", rows)]``) are replaced in place; a plate whose size the new data
imply is resized, with every node on it re-shaped (its constant
parameters broadcast again, its factor rebuilt). The q of nodes off the changed plates (the
globals) is kept; the q of hidden nodes on them (the locals) is dropped and inferred again from
the new data given the globals (``model.infer_locals``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import GraphError, ShapeError
from .expressions import Constant, Data, Expression, Gather, PlatedConstant, _plated
from .node import Node


def set_data(model, changes: dict, masks: dict, sizes: dict | None = None) -> None:
    """Replace the data; new data refused (a DataError, a ShapeError) leave the model as it was.
    ``sizes``: new sizes of plates no data lie on (the documents of new tokens, whose gather
    index is among the changes)."""
    held = _held(model)
    try:
        _set_data(model, changes, masks, sizes or {})
    except Exception:
        for obj, attrs in held:
            obj.__dict__.clear()
            obj.__dict__.update(attrs)
        raise


def _held(model) -> list:
    """(object, a copy of its attributes, and of the dicts among them: a node's parents) for
    what ``_set_data`` changes before it can refuse the data: nodes, plates, the inputs' uses
    and the model itself."""
    objects = [model, *model.nodes.values(), *model.plates.values(), *model.inputs.values()]
    objects += [use for data in model.inputs.values() for use, _, _ in data.uses]
    return [(obj, {k: dict(v) if type(v) is dict else v for k, v in obj.__dict__.items()}) for obj in objects]


def _set_data(model, changes: dict, masks: dict, given: dict) -> None:
    targets = {name: _target(model, name) for name in changes}
    sizes = {**_new_sizes(model, targets, changes), **given}
    resized = {name for name, size in sizes.items() if model.plates[name].size != size}
    touched = set(resized) | {p.name for t in targets.values() for p in plates_of(t)}
    _check_resizable(model, resized, targets)
    for name in resized:
        model.plates[name].size = sizes[name]
    reweighted = {id(use) for t in targets.values() if isinstance(t, Data) for use, _, _ in t.uses
                  if isinstance(use, Node)}
    for node in model.nodes.values():
        if any(p.name in resized for p in node.plates):
            _reshape(node, id(node) in reweighted)
    for name, target in targets.items():
        if isinstance(target, Data):
            _replace_input(target, changes[name])
        else:
            if target.clamp is not None:
                target.observed, target.clamp = True, None
            target.mask = None
            target._set_data(changes[name], masks.get(name))
            target.__dict__.pop("_factor_weights", None)
    for node in model.nodes.values():
        if node.observed and node.name not in targets and any(p.name in resized for p in node.plates):
            node._set_data(np.broadcast_to(node._fill_value(), node.plate_shape + node._data_event_shape()),
                           np.zeros(node.plate_shape, bool))  # held-out: unknown, to predict
    for node in model.nodes.values():
        if node.derived:
            node.follow_data()
        if node.observed and (node.name in targets or any(p.name in resized for p in node.plates)):
            node.factor.observe(node.data)  # terms of the data alone: the base measure, a Poisson's zeros
    model._compiled = None
    _refresh_locals(model, touched)


def _target(model, name: str):
    if name in model.inputs:
        return model.inputs[name]
    if name in model.nodes and (model.nodes[name].observed or model.nodes[name].clamp is not None):
        return model.nodes[name]
    known = ", ".join([n.name for n in model if n.observed or n.clamp is not None] + list(model.inputs)) or "none"
    raise GraphError(f"model '{model.name}': set_data('{name}'): no observed node or vmp.Data input of that "
                     f"name (data: {known})")


def plates_of(target) -> tuple:
    """The plates the leading axes of a target's values lie on (a gather's rows: its plate)."""
    if isinstance(target, Data):
        if not target.uses:
            return ()
        use = target.uses[0][0]
        return (use.plate,) if isinstance(use, Gather) else use.plates
    return target.plates


def _new_sizes(model, targets: dict, changes: dict) -> dict:
    """The plate sizes the new data imply (their leading axes), checked for agreement."""
    sizes: dict = {}
    for name, target in targets.items():
        plates = plates_of(target)
        shape = np.shape(changes[name])
        if len(shape) < len(plates):
            raise ShapeError(f"set_data('{name}'): the data have shape {shape}, fewer axes than the plates "
                             f"{[p.name for p in plates]}")
        for plate, size in zip(plates, shape):
            if sizes.setdefault(plate.name, size) != size:
                raise ShapeError(f"set_data('{name}'): plate '{plate.name}' would have size {size} here and "
                                 f"{sizes[plate.name]} from another input")
    return sizes


def _walk(expr: Expression):
    yield expr
    for inner in expr.inputs():
        yield from _walk(inner)


def _check_resizable(model, resized: set, targets: dict) -> None:
    """Refuse, naming the culprit, what cannot follow a plate's new size: a gather's index, and
    a constant with values along the plate that no new data replace."""
    if not resized:
        return
    replaced = {id(use[0]) for t in targets.values() if isinstance(t, Data) for use in t.uses}
    for node in model.nodes.values():
        for role, expr in node.parents.items():
            for e in _walk(expr):
                on = [p.name for p in getattr(e, "plates", ()) if p.name in resized]
                if isinstance(e, Gather) and e.node.plates[0].name in resized and id(e) not in replaced:
                    raise GraphError(f"set_data: node '{node.name}' reads the gather '{e.name}' from plate "
                                     f"'{e.node.plates[0].name}' with a fixed index; for plate "
                                     f"'{e.node.plates[0].name}' to change size, declare the index with "
                                     f"vmp.Data(name, rows) and give its new rows")
                if isinstance(e, Gather) and e.plate.name in resized and id(e) not in replaced:
                    raise GraphError(f"set_data: node '{node.name}' reads the gather '{e.name}', whose index "
                                     f"is fixed; for plate '{e.plate.name}' to change size, declare the index "
                                     f"with vmp.Data(name, rows) and give its new rows")
                if isinstance(e, PlatedConstant) and on and id(e) not in replaced and not _broadcast(e.value, e.plates, resized):
                    raise GraphError(f"set_data: node '{node.name}': the constant '{e.name}' varies along plate "
                                     f"{on}; declare it with vmp.Data(name, values) and give its new values")


def _broadcast(arr: np.ndarray, plates: tuple, resized: set) -> bool:
    """Whether ``arr`` is constant along the axes of the resized plates (a broadcast view)."""
    return all(arr.shape[i] == 1 or arr.strides[i] == 0 for i, p in enumerate(plates) if p.name in resized)


def _rebroadcast(arr: np.ndarray, shape: tuple, plates: tuple, node, what: str) -> np.ndarray:
    if arr.shape[:len(plates)] == shape[:len(plates)]:
        return arr
    if not _broadcast(arr, plates, {p.name for p in plates}):
        raise GraphError(f"set_data: node '{node.name}': its {what} varies along its plates and cannot follow "
                         f"the new plate size; rebuild the model")
    first = arr[tuple(slice(0, 1) for _ in plates)]
    return np.broadcast_to(first, shape)


def _reshape(node, reweighted: bool = False) -> None:
    """Give a node on a resized plate its new plate shape: constants broadcast again, factor
    rebuilt; its weights broadcast again unless new ones are given (``reweighted``)."""
    node.plate_shape = tuple(p.size for p in node.plates)
    for role, expr in node.parents.items():
        if isinstance(expr, Constant) and not isinstance(expr, PlatedConstant):
            value = _rebroadcast(expr.value, node.plate_shape + expr.value.shape[len(expr.value.shape) - len(node._role_event(role)):],
                                 node.plates, node, role)
            node.parents[role] = Constant(expr.family, value, label=expr.name)
    if node.multiplicity is not None and not node.derived and not reweighted:
        node.multiplicity = _rebroadcast(node.multiplicity, node.plate_shape, node.plates, node, "weights")
    node.weights = node.multiplicity
    node.factor = node._make_factor()
    node.__dict__.pop("_factor_weights", None)
    if node.clamp is not None:  # a partially observed node with children: observed again until compiled
        node.observed, node.clamp = True, None
    node.barren = None


def _replace_input(data: Data, values) -> None:
    data.values = values
    for use, event, where in data.uses:
        if isinstance(use, Gather):
            use.set_index(values, where)
            continue
        if isinstance(use, Node):  # the node's weights
            use.multiplicity = use.weights = use._check_weights(np.asarray(values))
            use.__dict__.pop("_factor_weights", None)
            continue
        new = _plated(values, use.family, use.plates, event, f"{where}, data '{data.name}'")
        use.value, use.moments = new.value, new.moments


def _refresh_locals(model, touched: set) -> None:
    """Drop the q of hidden nodes on the changed plates; infer them again when a fit exists."""
    state = model.state
    if state is None or not state.natural:
        return
    drop = [n.name for n in model if n.name in state.natural and any(p.name in touched for p in n.plates)]
    model.state = dataclasses.replace(state, natural={k: v for k, v in state.natural.items() if k not in drop},
                                      moments={k: v for k, v in state.moments.items() if k not in drop})
    model.compile()
    hidden = [n for n in model if not n.observed and n.name not in model.state.natural]
    if hidden:
        model.infer_locals()
