"""Running from a source checkout (``PYTHONPATH=<repository>``, nothing installed): the
repository's top-level ``models/`` folder is importable as ``vmp.models``, as it is after
``pip install`` (where setup.py maps the folder onto ``vmp.models``)."""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

_FOLDER = Path(__file__).resolve().parent.parent / "models"


class _ModelsFolder(importlib.abc.MetaPathFinder):
    """Finds ``vmp.models`` in the checkout's ``models/`` folder; consulted after the regular
    finders, so an installed ``vmp.models`` always wins."""

    def find_spec(self, fullname, path=None, target=None):
        init = _FOLDER / "__init__.py"
        if fullname != "vmp.models" or not init.is_file():
            return None
        return importlib.util.spec_from_file_location(fullname, init,
                                                      submodule_search_locations=[str(_FOLDER)])


def install() -> None:
    if not any(isinstance(f, _ModelsFolder) for f in sys.meta_path):
        sys.meta_path.append(_ModelsFolder())
