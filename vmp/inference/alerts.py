"""A monitor's warnings, a few per fit: a monitor with action='warn' warns the first time it finds
a problem with a node (or with the bound), for at most NODES nodes; later findings are counted,
not repeated (each is still an event in ``history["events"]``, and the dashboard draws them as one
band per node with the count). The counts are read from the history's events, so a resumed fit
does not warn again about what it already reported. :meth:`Alerts.summary` gives the counts for
the warning of a fit that diverged."""
from __future__ import annotations

import warnings
from collections import Counter

#: the nodes (or the bound) each monitor warns about at most; findings beyond are counted only
NODES = 3


class Alerts:
    """The warnings of one fit so far, counted by (monitor, node) from ``events`` (the history's)."""

    def __init__(self, events: list):
        self.counts = Counter((e["source"], e["node"]) for e in events if e["action"] == "warn")

    def warn(self, event, category: type[Warning], stacklevel: int) -> None:
        """Count ``event`` (a monitor's finding with action 'warn'); warn if it is the monitor's
        first finding about this node and the monitor has warned about fewer than NODES nodes."""
        key = (event.source, event.node)
        self.counts[key] += 1
        nodes = sum(1 for source, _ in self.counts if source == event.source)
        if self.counts[key] > 1 or nodes > NODES:
            return
        about = f"node '{event.node}'" if event.node else "the bound"
        more = f" and about at most {NODES} nodes" if event.node else ""
        warnings.warn(f"{event.message} ({event.source} warns once about {about}{more}; every finding is "
                      f"counted in result.history['events'])", category, stacklevel=stacklevel + 1)

    def summary(self) -> str:
        """'ElboMonitor warned 95 times about the bound, ...', or '' without warnings."""
        parts = [f"{source} {n} time{'s' * (n > 1)} about {f'node {node!r}' if node else 'the bound'}"
                 for (source, node), n in self.counts.most_common()]
        if not parts:
            return ""
        shown = ", ".join(parts[:NODES]) + (f" and {len(parts) - NODES} more" if len(parts) > NODES else "")
        return f"the monitors warned {sum(self.counts.values())} times ({shown})"
