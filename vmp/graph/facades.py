"""What the declaration layer answers with the layers above it: ``model.fit``, ``batch``,
``stochastic``, ``stream``, ``infer_locals`` and ``elbo`` (``vmp.inference``), ``model.predict`` and
``impute`` (``vmp.predictive``), ``model.forecast`` and a Gaussian chain's ``smoothed`` and
``filtered`` (``vmp.time_series``), ``model.to_arviz`` (``vmp.export``), ``model.render``
(``vmp.render``), and the empty State a model's nodes write their q into (``state``). Those layers
import the graph; their functions are held here by name, registered by ``vmp/facades.py`` when vmp
is imported, so that the graph imports nothing above it."""
from __future__ import annotations

from ..registry import Registry

#: the functions behind the facades, by name: registered by ``vmp/facades.py`` when vmp is imported
FACADES = Registry("vmp/facades.py")
#: the function of the layers above the graph behind the facade ``name``
facade = FACADES.lookup
