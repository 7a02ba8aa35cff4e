"""The state of a fit as one plain value.

A ``State`` holds every hidden node's natural parameters (and the moments that follow from them,
the gradient of the log-normalizer), the step counter, the random generator's state, and the
loop's own state, a :class:`LoopState` (typed fields; the schedules', policies' and monitors'
states inside it are their declared plain data: numbers, strings, lists, dicts, numpy arrays).
Steps never change a State: they return the next one, built with :meth:`State.updated`, which
shares every unchanged array.

``save``/``load`` write one ``.npz`` file: the arrays as entries and everything else as a JSON
document inside it. Nothing is pickled.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..families import _gram
from .checkpoint import readable, reading, write_atomic
from .stopping import Plateau

_META = "__meta__"


@dataclass(frozen=True)
class Stretch:
    """Evaluations of one objective in a row (a fit with policies): the temperatures of the
    policies without own terms when it began (``key``), the values so far, and the constant
    that shifts them to start at the bound (``offset``; ``vmp.inference.objective``)."""

    key: list
    values: list
    offset: float


@dataclass(frozen=True)
class LoopState:
    """What the loop keeps between steps, besides q.

    ``accesses``: observed elements read so far (the x-axis of Paquet's Fig. 2); ``backoff``:
    per stepped node, the factor the monitors' back-offs put on its rate; ``schedules``,
    ``policies``, ``monitors``: their plain-data states (per node; per policy and per monitor,
    in the fit's order); ``best``, ``best_bound``: the stepped nodes' natural parameters at the
    best evaluated bound, which a monitor's back-off returns to; ``objective``: the tempered
    objective's current :class:`Stretch` (with policies); ``plan``: what a checkpoint keeps of
    the subsampling plan; ``plateau``: the stochastic stopping rule's memory (with ``tol``;
    :class:`~vmp.inference.stopping.Plateau`); ``converged``, ``diverged``, ``message``,
    ``decrease``: how the fit ended (``decrease``: where batch VMP's bound fell,
    ``batch.locate_decrease``)."""

    accesses: int = 0
    backoff: dict = field(default_factory=dict)
    schedules: dict = field(default_factory=dict)
    policies: list = field(default_factory=list)
    monitors: list = field(default_factory=list)
    best: dict | None = None
    best_bound: float | None = None
    objective: Stretch | None = None
    plan: dict = field(default_factory=dict)
    plateau: Plateau | None = None
    converged: bool = False
    diverged: bool = False
    message: str = "reached the iteration limit"
    decrease: dict | None = None

    def mapped(self, fn) -> "LoopState":
        """This state with ``fn`` applied to every field's value (to gather or copy arrays)."""
        return replace(self, **{f.name: fn(getattr(self, f.name)) for f in fields(self)})


#: the dataclasses a saved state may hold, by name (nothing else is rebuilt from a file)
_PLAIN = {"LoopState": LoopState, "Stretch": Stretch, "Plateau": Plateau}


@dataclass(eq=False)
class State:
    natural: dict = field(default_factory=dict)  # node name -> tuple of arrays
    moments: dict = field(default_factory=dict)  # node name -> tuple of arrays (derived)
    step: int = 0
    rng: dict | None = None  # numpy bit generator state
    loop: LoopState = field(default_factory=LoopState)

    def updated(self, changes: dict, **fields) -> "State":
        """A new State with ``changes`` {name: (natural, moments)} applied; arrays not named are
        shared with this one."""
        natural, moments = dict(self.natural), dict(self.moments)
        for name, (nat, mom) in changes.items():
            natural[name] = nat if isinstance(nat, tuple) else tuple(nat)  # (an executor's handle stays one)
            moments[name] = mom if isinstance(mom, tuple) else tuple(mom)
        out = State(natural, moments, self.step, self.rng, self.loop)
        for key, value in fields.items():
            setattr(out, key, value)
        return out

    def copy(self) -> "State":
        """A deep copy: no array is shared."""
        return State({k: tuple(np.array(a) for a in v) for k, v in self.natural.items()},
                     {k: tuple(np.array(a) for a in v) for k, v in self.moments.items()},
                     self.step, _copy_plain(self.rng), self.loop.mapped(_copy_plain))

    def generator(self, seed=None) -> np.random.Generator:
        """The random generator at this state (a new one from ``seed`` when none was kept)."""
        rng = np.random.default_rng(seed)
        if self.rng is not None:
            rng.bit_generator.state = _copy_plain(self.rng)
        return rng

    def __eq__(self, other) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return (self.step == other.step and _equal(self.natural, other.natural)
                and _equal(self.rng, other.rng) and _equal(self.loop, other.loop))

    # ----- files ------------------------------------------------------------------------
    def save(self, path, **documents) -> None:
        """Write the state (and any extra JSON-ready ``documents``) to one ``.npz`` file, with the
        root of each q whose precision is factorized from its parts (``families._gram``), which
        :meth:`load` keeps for it again."""
        arrays: dict = {}
        meta = {"step": self.step, "rng": _encode(self.rng, "rng", arrays),
                "natural": {k: [_put(arrays, f"natural/{k}/{i}", a) for i, a in enumerate(v)]
                            for k, v in self.natural.items()},
                "roots": {k: [_put(arrays, f"roots/{k}/{i}", a) for i, a in enumerate(root)]
                          for k, root in ((k, _gram.kept_root(v)) for k, v in self.natural.items()) if root},
                "loop": _encode(self.loop, "loop", arrays),
                "documents": _encode(documents, "documents", arrays)}
        arrays[_META] = np.array(json.dumps(meta))
        write_atomic(path, lambda fh: np.savez_compressed(fh, **arrays))

    @staticmethod
    def load(path, families: dict | None = None) -> tuple["State", dict]:
        """(state, documents) from :meth:`save`'s file. ``families`` {name: Family} gives the
        moments; without it they are left for the model to fill in."""
        readable(path)
        with reading(path):
            with np.load(Path(path), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            meta = json.loads(str(arrays.pop(_META)))
            natural = {k: tuple(arrays[key["__array__"]] for key in keys) for k, keys in meta["natural"].items()}
            for k, keys in meta.get("roots", {}).items():
                _gram.restore(natural[k], *(arrays[key["__array__"]] for key in keys))
            moments = {}
            if families is not None:
                moments = {k: tuple(families[k].moments(v)) for k, v in natural.items() if k in families}
            state = State(natural, moments, int(meta["step"]), _decode(meta["rng"], arrays),
                          _decode(meta["loop"], arrays))
            return state, _decode(meta["documents"], arrays)


def _put(arrays: dict, key: str, value) -> dict:
    arrays[key] = np.asarray(value)
    return {"__array__": key}


def _encode(value, path: str, arrays: dict):
    """JSON-ready copy of ``value`` with numpy arrays moved into ``arrays``."""
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k, f"{path}/k{i}", arrays), _encode(v, f"{path}/{i}", arrays)]
                             for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{path}/{i}", arrays) for i, v in enumerate(value)]}
    if isinstance(value, list):
        if value and all(_number(v) for v in value) and len({type(v) for v in value}) == 1:
            arrays[path] = np.asarray(value)
            return {"__list__": path}
        return [_encode(v, f"{path}/{i}", arrays) for i, v in enumerate(value)]
    if type(value) in _PLAIN.values():
        return {"__dataclass__": type(value).__name__,
                "fields": {f.name: _encode(getattr(value, f.name), f"{path}/{f.name}", arrays) for f in fields(value)}}
    if isinstance(value, np.ndarray):
        return _put(arrays, path, value)
    if isinstance(value, np.generic):
        return _put(arrays, path, value)
    if isinstance(value, float) and not np.isfinite(value):
        return _put(arrays, path, np.float64(value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"State: cannot save a {type(value).__name__} ({path}); keep plain data in the state")


def _decode(value, arrays: dict):
    if isinstance(value, dict):
        if "__array__" in value:
            arr = arrays[value["__array__"]]
            return arr[()] if arr.ndim == 0 and arr.dtype.kind != "U" else arr
        if "__list__" in value:
            return arrays[value["__list__"]].tolist()
        if "__tuple__" in value:
            return tuple(_decode(v, arrays) for v in value["__tuple__"])
        if "__dataclass__" in value:
            return _PLAIN[value["__dataclass__"]](**{k: _decode(v, arrays) for k, v in value["fields"].items()})
        return {_decode(k, arrays): _decode(v, arrays) for k, v in value["__dict__"]}
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def _number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _copy_plain(value):
    if isinstance(value, dict):
        return {k: _copy_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_plain(v) for v in value]
    if isinstance(value, tuple):  # (arrays held in parts, ``graph/gathered.py``, copied as a tuple)
        return tuple(_copy_plain(v) for v in value)
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


def _equal(a: Any, b: Any) -> bool:
    if type(a) in _PLAIN.values() or type(b) in _PLAIN.values():
        return type(a) is type(b) and all(_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    return a == b


class Resumable:
    """What ``resume=`` takes besides a checkpoint's path: a fit in progress (``loop.Fit``) or a
    finished one (``result.FitResult``), each holding the State a resumed fit continues from."""
