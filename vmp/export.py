"""Draws from q as ArviZ InferenceData (optional: ``pip install arviz`` or ``pip install 'vmp[arviz]'``)."""
from __future__ import annotations

import numpy as np

from .graph.data import is_lazy


def to_arviz(model, draws: int = 1000, seed: int | None = 0, predictive: bool = True, result=None,
             nodes=None):
    """InferenceData with one chain of ``draws`` independent draws: ``posterior`` from q of every
    hidden node that has one, ``posterior_predictive`` from ``model.predict`` of every observed
    node (when ``predictive``), ``observed_data`` (a partially observed node's data too, NaN at its
masked entries, whose draws are in ``posterior``); plate axes are named dimensions with integer
    coordinates. A fit's final and initial ELBO go to the attributes when ``result`` is given.
    The draws are exact draws from q (independent, so ArviZ's ESS equals ``draws``). ``nodes``
    (names) keeps only those nodes' draws."""
    try:
        import arviz as az
    except ImportError:
        raise ImportError("to_arviz needs ArviZ, which is not installed: pip install arviz "
                          "(or install vmp with the extra: pip install 'vmp[arviz]')") from None
    rng = np.random.default_rng(seed)
    state = model.state
    keep = (lambda n: True) if nodes is None else (lambda n: n.name in nodes)  # noqa: E731
    hidden = [n for n in model if not n.observed and state is not None and n.name in state.natural and keep(n)]
    observed = [n for n in model if n.observed and not is_lazy(n.data) and keep(n)]
    posterior = {n.name: n.sample(draws, rng)[None] for n in hidden}
    pp = {n.name: model.predict(n.name).sample(draws, rng)[None] for n in observed} if predictive else {}
    partial = [n for n in hidden if n.has_data and not is_lazy(n.data)]  # masked entries latent
    data = {n.name: np.asarray(n.data) for n in observed}
    for n in partial:
        x = np.asarray(n.data, float)
        data[n.name] = np.where(n.mask.reshape(n.mask.shape + (1,) * (x.ndim - n.mask.ndim)), x, np.nan)
    dims = {n.name: [p.name for p in n.plates] for n in hidden + observed}
    coords = {p.name: np.arange(p.size) for p in model.plates.values()}
    attrs = {"model": model.name}
    if result is not None:
        attrs.update(elbo=result.final_elbo, converged=int(result.converged), iterations=result.iterations)
    return az.from_dict(posterior=posterior, posterior_predictive=pp or None, observed_data=data or None,
                        coords=coords, dims=dims, attrs=attrs)


def write_netcdf(model, path, draws: int = 500, seed: int | None = 0, budget: int = 2_000_000, result=None):
    """Write :func:`to_arviz`'s InferenceData to ``path`` (netCDF, ``az.to_netcdf``), with the
    nodes whose draws (``draws`` times their size) fit, smallest first, in ``budget`` numbers;
    the nodes left out are named in the file's ``left_out`` attribute. Returns the path, or None
    without ArviZ."""
    try:
        import arviz  # noqa: F401
    except ImportError:
        return None
    state = model.state
    sizes = {n.name: np.prod(n.plate_shape + n._data_event_shape(), dtype=np.int64) * draws for n in model
             if (n.observed and not is_lazy(n.data)) or (state is not None and n.name in state.natural)}
    kept, total = set(), 0
    for name in sorted(sizes, key=sizes.get):
        if total + sizes[name] <= budget:
            kept.add(name)
            total += sizes[name]
    data = to_arviz(model, draws, seed, result=result, nodes=kept)
    for group in data.groups():
        data[group].attrs["left_out"] = ", ".join(sorted(set(sizes) - kept)) or "none"
    data.to_netcdf(str(path))
    return path
