"""The stacks of active models and plates entered with ``with``."""
from __future__ import annotations

_MODELS: list = []
_PLATES: list = []


def current_model():
    from ..errors import GraphError

    if not _MODELS:
        raise GraphError("declare nodes inside `with vmp.Model(name):`")
    return _MODELS[-1]


def active_plates() -> tuple:
    return tuple(_PLATES)
