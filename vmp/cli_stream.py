"""``vmp fit MODEL DATA --stream ROWS``: the model fitted to DATA in chunks of ROWS rows of its
data plate (``model.stream``, docs/streams.md; DATA read a chunk at a time, or ROWS whole
documents of LDA), one line per chunk, then the report of the globals' q with the last chunk's
locals (its ``stream.json``: each chunk's rows, bound per element, the relative change of every
global and the drift flag). ``--forget F`` and ``--population ALPHA``
are the stream's; ``--checkpoint PATH`` writes the stream's state after every chunk and
``--resume PATH`` continues from it (the chunks it has seen are skipped)."""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from .cli_common import CLIError, Cluster, UsageError, call, fit_keywords

#: flags that mean nothing to a stream (each chunk's fit is set by the stream)
REFUSED = {"n_init": "--n-init", "minibatch": "--minibatch", "per_node": "--per-node",
           "checkpoint_every": "--checkpoint-every"}


def options(p) -> None:
    g = p.add_argument_group("streams (docs/streams.md)")
    g.add_argument("--stream", type=_rows, metavar="ROWS",
                   help="fit DATA in chunks of ROWS rows of the data plate: each chunk's posterior is "
                        "the prior of the next (streaming variational Bayes)")
    g.add_argument("--forget", type=_forget, metavar="F",
                   help="with --stream: pull the prior back toward the declared one after each chunk, "
                        "prior = F posterior + (1 - F) declared, F in (0, 1] (default: 1)")
    g.add_argument("--population", type=_alpha, metavar="ALPHA",
                   help="with --stream: population VB, stochastic steps for a population of ALPHA points "
                        "(McInerney et al. 2015) instead of streaming VB")


def _rows(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of rows, got '{text}'")
    return value


def _number(text: str, ok, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'")
    return value


def _forget(text: str) -> float:
    return _number(text, lambda v: 0 < v <= 1, "a number in (0, 1]")


def _alpha(text: str) -> float:
    return _number(text, lambda v: 0 < v < math.inf, "a positive population size")


def check(args) -> None:
    """A UsageError for stream flags without --stream, or --stream with flags it cannot take."""
    if getattr(args, "stream", None) is None:
        given = [f for dest, f in (("forget", "--forget"), ("population", "--population"))
                 if getattr(args, dest, None) is not None]
        if given:
            raise UsageError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to --stream ROWS")
        return
    bad = [flag for dest, flag in REFUSED.items() if getattr(args, dest, None) not in (None, 1, False)]
    if args.method == "stochastic" and args.population is None:
        bad.append("--method stochastic (use --population ALPHA)")
    if args.forget is not None and args.population is not None:
        bad.append("--forget with --population")
    if bad:
        raise UsageError(f"--stream: {', '.join(bad)} cannot be used with a stream")


def describe(args) -> str:
    kind = (f"population VB (alpha = {args.population:g})" if args.population is not None else
            "streaming VB" + (f", forget {args.forget:g}" if args.forget is not None else ""))
    return f"{kind} in chunks of {args.stream} rows"


def run(model, args, blocks=None):
    """The stream over the data of ``model``'s data plate; the last chunk's FitResult, with the
    chunks' records in ``extra['stream_chunks']`` and the model's state the globals' q with the
    last chunk's locals. ``blocks``: the models of DATA's blocks, one per chunk (the data file
    read a block at a time); None: chunks of the rows ``model`` holds."""
    plate = _plate(model)
    with Cluster(args):
        stream = call(lambda: model.stream(plate, **_keywords(args)), f"streaming {model.name}")
        if stream.links and blocks is not None:
            raise CLIError(f"--stream: the data of plate '{plate}' lie on {sorted(set(stream.links.values()))}, "
                           f"and a block of ROWS lines of DATA may split one of its elements; stream it from "
                           f"Python with model.stream('{plate}') (docs/streams.md)")
        chunks = stream.read(_data(model, stream), args.stream) if blocks is None else \
            (_data(m, stream) for m in blocks)
        start, result = stream.chunks, None
        for i, chunk in enumerate(chunks):
            if i < start:
                continue
            result = call(lambda: stream.update(chunk), f"fitting chunk {i + 1} of {model.name}")
            if result is None:
                continue
            _print(result.extra["stream"])
            if getattr(args, "checkpoint", None):
                stream.save(args.checkpoint)
        if result is None:
            raise CLIError(f"--stream: no chunk left to fit ({stream.chunks} chunk(s) were seen already)")
    return result


def _plate(model) -> str:
    """The plate a stream reads: the observed nodes' outermost plate, or the plate their data
    are gathered from (LDA's documents, whose tokens hold the data)."""
    from .errors import VMPError
    from .inference.batch import data_plate
    from .inference.subsample import data_plates, linked_plates

    try:
        plate = data_plate(model, None)
    except VMPError as err:
        raise CLIError(f"--stream: {err}") from None
    return next((p for p in data_plates(model) if plate in linked_plates(model, p)), plate)


def _data(model, stream) -> dict:
    """A chunk of ``stream`` from ``model``'s data: its observed nodes and ``vmp.Data`` inputs
    on the stream's plates."""
    from .graph.replace import plates_of

    data = {n.name: n.data for n in model.nodes.values() if n.observed and n.plates and n.plates[0].name in stream.plates}
    data.update({d.name: d.values for d in model.inputs.values() if any(p.name in stream.plates for p in plates_of(d))})
    return data


def _keywords(args) -> dict:
    keywords = {k: v for k, v in fit_keywords(args).items()
                if v is not None and k not in ("method", "subsample", "checkpoint", "resume")}
    if args.forget is not None:
        keywords["forget"] = args.forget
    if args.population is not None:
        keywords["population"] = args.population
    if getattr(args, "resume", None):
        keywords["resume"] = args.resume
    return keywords


def _print(record: dict) -> None:
    change = ", ".join(f"{k} {v:.3g}" for k, v in record["change"].items() if math.isfinite(v))
    drift = "  (drift: the data may have changed)" if record["drift"] else ""
    print(f"chunk {record['chunk']}: {record['rows']} rows, bound per element {record['bound_per_element']:.6g}"
          + (f", change {change}" if change else "") + drift)


def write(directory, result) -> Path:
    """stream.json in the report directory: the chunks' records."""
    path = Path(directory) / "stream.json"
    path.write_text(json.dumps(result.extra.get("stream_chunks", []), indent=1))
    return path
