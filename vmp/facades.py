"""The functions behind the declaration layer's facades (``graph/facades.py``): ``model.fit``,
``batch``, ``stochastic``, ``stream``, ``infer_locals``, ``elbo``, ``predict``, ``impute``,
``forecast``, ``to_arviz``, ``render``, a Gaussian chain's ``smoothed`` and ``filtered``, and the
empty State of a model. They are functions of inference and of the reading layer, which import
the graph; this module registers them in ``graph.facades.FACADES`` when vmp is imported. The
reading modules (predictions, time series, export, the diagram) load on a facade's first call."""
from __future__ import annotations

from .graph.facades import FACADES
from .inference import Fit, State, Stream, fit
from .inference.engine import Engine
from .inference.steps import complete


def batch(model, **options):
    """A batch VMP fit to step by hand."""
    return Fit(model, method="batch", **options)


def stochastic(model, **options):
    """A stochastic VMP fit to step by hand."""
    return Fit(model, method="stochastic", **options)


def infer_locals(model, iterations: int, tol: float) -> State:
    """The model's State with the hidden nodes it lacks inferred on all data given the others."""
    engine = Engine(model)
    state = model.current_state()
    missing = [n for n in engine.hidden if n.name not in state.natural]
    return complete(engine, state, missing, iterations, tol)


def elbo(model) -> float:
    """The exact evidence lower bound of the model's current q."""
    return Engine(model).elbo(model.current_state())


def predict(model, name: str, draws: int, seed, prior: bool):
    """``vmp.predictive.predict``, or ``prior_predict`` with ``prior``."""
    from .predictive import predict as posterior, prior_predict

    return (prior_predict if prior else posterior)(model, name, draws, seed)


def impute(model, name: str, draws: int, seed):
    """``vmp.predictive.impute``."""
    from .predictive import impute as masked

    return masked(model, name, draws, seed)


def forecast(model, steps: int, name, **options):
    """``vmp.time_series.forecast``."""
    from .time_series import forecast as ahead

    return ahead(model, steps, name, **options)


def smoothed(chain, level: float):
    """``vmp.time_series.smoothed``."""
    from .time_series import smoothed as states

    return states(chain, level)


def filtered(chain, level: float):
    """``vmp.time_series.filtered``."""
    from .time_series import filtered as states

    return states(chain, level)


def to_arviz(model, draws: int, seed, predictive: bool):
    """``vmp.export.to_arviz``."""
    from .export import to_arviz as draws_of

    return draws_of(model, draws, seed, predictive)


def render(model, filename, **options):
    """``vmp.render.render``."""
    from .render import render as diagram

    return diagram(model, filename, **options)


FACADES.update(fit=fit, batch=batch, stochastic=stochastic, stream=Stream, infer_locals=infer_locals,
               elbo=elbo, predict=predict, impute=impute, forecast=forecast, smoothed=smoothed,
               filtered=filtered, to_arviz=to_arviz, render=render, state=State)
