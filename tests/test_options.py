"""The options of a fit: one check for the Python API and the command line, and iterations=0."""
from __future__ import annotations

import numpy as np
import pytest

import vmp
from tests.golden_fits import _blobs
from models import gaussian_mixture
from vmp.cli import main
from vmp.inference import fit as inference_fit


def _model():
    return gaussian_mixture(_blobs(40), 2)


def _same_q(a, b) -> None:
    assert a.natural.keys() == b.natural.keys()
    for name in a.natural:
        for x, y in zip(a.natural[name], b.natural[name]):
            np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("options", [dict(method="batch"),
                                     dict(method="stochastic", subsample=vmp.Minibatch("data", 10))],
                         ids=["batch", "stochastic"])
def test_iterations_zero_is_the_initial_q_everywhere(options):
    """model.fit, vmp.inference.fit, model.batch/stochastic and Fit give the initial q and its
    bound, and no step, for iterations=0."""
    initial = vmp.Fit(_model(), seed=5, **options)
    method = options["method"]
    by_hand = getattr(_model(), method)(seed=5, iterations=0, **{k: v for k, v in options.items() if k != "method"})
    results = [_model().fit(iterations=0, seed=5, **options), inference_fit(_model(), iterations=0, seed=5, **options),
               by_hand.run().result()]
    for result in results:
        assert result.iterations == 0 and len(result.history["iteration"]) == 0
        np.testing.assert_array_equal(result.elbo, initial.recorder.elbo)
        _same_q(result.state, initial.state)
    assert initial.state.step == 0 and np.isfinite(initial.recorder.elbo[0])


def test_the_command_line_fits_zero_iterations(capsys, tmp_path):
    x = _blobs(30)
    path = tmp_path / "points.csv"
    path.write_text("a,b\n" + "\n".join(f"{u:.5f},{v:.5f}" for u, v in x) + "\n")
    assert main(["fit", "gaussian_mixture", str(path), "-k", "2", "--iterations", "0"]) == 0
    assert "fitting" in capsys.readouterr().out


@pytest.mark.parametrize("api,flags,api_text,cli_text", [
    (dict(method="batch", subsample=vmp.Minibatch("data", 5)), ["--method", "batch", "--minibatch", "data:5"],
     "subsample= applies to method='stochastic', not batch VMP", "--minibatch applies to --method stochastic, not batch VMP"),
    (dict(method="stochastic"), ["--method", "stochastic"],
     "method='stochastic' needs subsample=vmp.Minibatch(plate, size)", "--method stochastic needs --minibatch PLATE:SIZE"),
    (dict(n_init=2, checkpoint="c.npz"), ["--n-init", "2", "--checkpoint", "c.npz"],
     "n_init= restarts the fit from new seeds: it does not combine with checkpoint=",
     "--n-init restarts the fit from new seeds: it does not combine with --checkpoint"),
    (dict(subsample=vmp.Minibatch("data", 100)), ["--minibatch", "data:100"],
     "Minibatch: size 100 exceeds plate 'data' (40 elements)", "--minibatch: size 100 exceeds plate 'data' (40 elements)"),
    (dict(subsample=vmp.Minibatch("rows", 5)), ["--minibatch", "rows:5"],
     "has no plate named 'rows'; its plates: components, data (data plates: data)",
     "has no plate named 'rows'; its plates: components, data (data plates: data)"),
], ids=["misplaced", "no-subsample", "n_init", "minibatch-size", "minibatch-plate"])
def test_the_api_and_the_command_line_refuse_the_same_options(api, flags, api_text, cli_text, tmp_path, capsys):
    """One check (vmp.inference.options, Minibatch.check) for both: the same rule, the option
    named as each caller spells it."""
    with pytest.raises(vmp.VMPError) as info:
        _model().fit(iterations=2, **api)
    assert api_text in str(info.value)
    path = tmp_path / "points.csv"
    path.write_text("a,b\n" + "\n".join(f"{u:.5f},{v:.5f}" for u, v in _blobs(40)) + "\n")
    assert main(["fit", "gaussian_mixture", str(path), "-k", "2", "--iterations", "2", *flags]) == 2
    assert cli_text in capsys.readouterr().err


def test_resume_takes_a_fit_in_progress_or_a_finished_one():
    """resume= continues a Fit or a FitResult to the bits of the uninterrupted fit, and refuses an
    object that holds no fit."""
    options = dict(method="stochastic", subsample=vmp.Minibatch("data", 10), seed=3, progress=False)
    whole = _model().fit(iterations=6, **options)
    running = _model().stochastic(**{k: v for k, v in options.items() if k != "method"})
    running.run(3)
    finished = _model().fit(iterations=3, **options)
    for first in (running, finished):
        _same_q(_model().fit(iterations=6, resume=first, **options).state, whole.state)
    with pytest.raises(vmp.OptionError, match="resume="):
        _model().fit(iterations=6, resume=object(), **options)
