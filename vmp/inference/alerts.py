"""A monitor's warnings, once per node: the first time a monitor with action='warn' finds a
problem with a node (or with the bound) it warns; later findings about the same node are counted,
not repeated (each is still an event in ``history["events"]``, and the dashboard draws them as
one band with the count). The counts are plain data in the fit's State, so a resumed fit does
not warn again about what it already reported."""
from __future__ import annotations

import warnings


def warn_once(counts: dict, source: str, node: str | None, problem: str, category: type[Warning],
              stacklevel: int) -> dict:
    """``counts`` with this finding added; a warning only at the first finding of ``source`` about
    ``node``."""
    key = f"{source}:{node or ''}"
    seen = counts.get(key, 0)
    if not seen:
        about = f"node '{node}'" if node else "the bound"
        warnings.warn(f"{problem} ({source} warns once about {about}; repeats are counted in "
                      f"result.history['events'])", category, stacklevel=stacklevel + 1)
    return {**counts, key: seen + 1}
