"""The ``vmp`` command: draw a model, fit it to data, or run the demo, writing a report.

    vmp demo [--report DIR] [--n N]             fit a Gaussian mixture to synthetic 2-D clusters
                                                by batch VMP, SVI and SVI+; a report per fit and a
                                                comparison
    vmp fit MODEL [DATA] [-k K] [--report DIR]  fit a model to a data file (synthetic data without)
        [--columns A,B,...]                     CSV/TSV/whitespace text or Parquet; id columns are
                                                renumbered 0..n-1 (ids.json in the report)
        [--minibatch PLATE:SIZE | --per-node C] [--update per-node|global]   (stochastic VMP)
        [--tau T --kappa K --rho1 R --evaluate-every E]
    vmp render MODEL [DATA] [-o FILE]           draw the model (DOT source to stdout without -o)
    vmp summary CHECKPOINT MODEL [DATA] [--csv FILE]   print the posterior summary of a saved fit
                                                (the model built as vmp fit builds it)

MODEL is a name in ``vmp.models.MODELS`` (gaussian_mixture, lda, matrix_factorization) or the path of
a Python file defining ``build(data=None)`` (or a ``model``) that returns a ``vmp.Model``
(:data:`MODEL_FILE_HELP`, shown by ``vmp fit --help``).
Exit status: 0 on success, 2 for wrong arguments, 1 for data, model or fitting errors (a diverged
fit included: its report is still written).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import textwrap
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import cli_stream
from .cli_common import (EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CLIError, Cluster, UsageError, call,
                         fit_keywords, flag_of, integer, positive_int, subsample_of)
from .inference.options import BATCH_ITERATIONS, STOCHASTIC_ITERATIONS, TOL
from .tables import (DataWarning, Table, TableError, counts_rows, looks_like_id, read_blocks, read_table,
                     renumber, warn)


# ----- reading data files: vmp.tables (TableError is reported like a CLIError) ------------------
# ----- the built-in models: data, synthetic data, building --------------------------------------
@dataclass
class ModelSpec:
    """How the command line feeds one builder of ``vmp.models.MODELS``."""

    load: Callable[[Table, list | None], dict]            # (data file, --columns) -> data arrays
    synthetic: Callable[[int, int], dict]                 # (size, seed) -> data arrays
    build: Callable[[Callable, dict, int, dict], Any]     # (builder, data, k, options) -> Model
    default_k: int
    data_help: str
    #: the loader numbers ids over the whole file (a stream then reads DATA whole, not by blocks)
    ids: bool = False


def blobs(n: int, seed: int = 0, clusters: int = 4, spread: float = 5.0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 2-D points from ``clusters`` Gaussian clusters with centres on a circle and random
    elongated covariances; returns (points, true labels)."""
    rng = np.random.default_rng(seed)
    angles = 2 * np.pi * (np.arange(clusters) / clusters + rng.uniform(0, 0.1))
    centres = spread * np.stack([np.cos(angles), np.sin(angles)], 1)
    labels = rng.integers(0, clusters, size=n)
    points = np.empty((n, 2))
    for k in range(clusters):
        a = rng.uniform(0, np.pi)
        rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        chol = rot @ np.diag(rng.uniform(0.4, 1.2, size=2))
        idx = labels == k
        points[idx] = centres[k] + rng.standard_normal((idx.sum(), 2)) @ chol.T
    return points, labels


def _gmm_load(table: Table, columns) -> dict:
    if columns is not None:
        chosen = [table.index(c) for c in columns]
    else:
        ids = [j for j, n in enumerate(table.names) if table.header and looks_like_id(n)]
        chosen = [j for j in range(len(table.names)) if j not in ids] or ids
        if ids and chosen != ids:
            warn(f"data file '{table.path.name}': column(s) {', '.join(repr(table.names[j]) for j in ids)} "
                 f"look like ids and are left out; give --columns to fit them")
    for j in chosen:
        if counts_rows(table.numbers(j, missing=True)):
            warn(f"column '{table.names[j]}' counts the rows (1, 2, 3, ...): it looks like an id, yet "
                 f"it is fitted as a dimension; choose the columns with --columns")
    if columns is not None:
        table.left_out(chosen, "gaussian_mixture", ", ".join(table.names[j] for j in chosen))
    x = np.column_stack([table.numbers(j, missing=True) for j in chosen])
    absent = int(np.isnan(x).sum())
    gaps = f"; {absent:,} missing values, inferred as latent coordinates" if absent else ""
    return {"data": x, "describe": f"{x.shape[0]:,} points in {x.shape[1]} dimensions "
                                   f"({', '.join(table.names[j] for j in chosen)}){gaps}"}


def _gmm_synthetic(n: int, seed: int) -> dict:
    return {"data": blobs(n, seed)[0]}


def _gmm_build(builder, data, k, options):
    return builder(data["data"], k, **options)


def _id_columns(table: Table, picked: dict, roles: tuple[str, ...]) -> tuple[dict, dict]:
    """Renumber the id columns of ``picked`` (role -> (column, values)) into 0-based indices;
    returns (role -> indices, role -> {"column", "ids"}) for the report's ids.json."""
    indices, ids = {}, {}
    for role in roles:
        column, values = picked[role]
        indices[role], original = renumber(table, column, values)
        ids[role] = {"column": column, "ids": original.tolist()}
    return indices, ids


def _mf_load(table: Table, columns) -> dict:
    picked = table.pick([("users", ("user", "row")), ("items", ("item", "col", "movie")),
                         ("ratings", ("rating", "value", "score"))], columns, "matrix_factorization")
    index, ids = _id_columns(table, picked, ("users", "items"))
    ratings = picked["ratings"][1]
    return {"users": index["users"], "items": index["items"], "ratings": ratings, "ids": ids,
            "describe": f"{ratings.size:,} ratings of {len(ids['items']['ids']):,} items by "
                        f"{len(ids['users']['ids']):,} users"}


def _mf_synthetic(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_users, n_items = max(2, n // 10), max(2, n // 15)
    u, v = rng.standard_normal((n_users, 2)), rng.standard_normal((n_items, 2))
    users, items = rng.integers(0, n_users, size=n), rng.integers(0, n_items, size=n)
    ratings = np.sum(u[users] * v[items], 1) + 0.3 * rng.standard_normal(n)
    return {"users": users, "items": items, "ratings": ratings}


def _mf_build(builder, data, k, options):
    return builder(data["users"], data["items"], data["ratings"], k, **options)


def _lda_load(table: Table, columns) -> dict:
    picked = table.pick([("documents", ("doc",)), ("words", ("word", "term", "token")),
                         ("counts", ("count", "n", "freq"))], columns, "lda")
    index, ids = _id_columns(table, picked, ("documents", "words"))
    name, counts = picked["counts"]
    bad = (counts != np.round(counts)) | (counts <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableError(f"{table.place(i)}: column '{name}' must hold positive integers, found "
                         f"{counts[i]:g}")
    return {"documents": index["documents"], "words": index["words"], "counts": counts, "ids": ids,
            "describe": f"{counts.size:,} (document, word) counts, {len(ids['documents']['ids']):,} "
                        f"documents, {len(ids['words']['ids']):,} words"}


def _lda_synthetic(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n_docs, n_words, n_topics = max(2, n // 20), 30, 3
    topics = rng.dirichlet(np.full(n_words, 0.1), size=n_topics)
    docs, words, counts = [], [], []
    for d in range(n_docs):
        mix = rng.dirichlet(np.full(n_topics, 0.3))
        c = rng.multinomial(40, mix @ topics)
        for w in np.flatnonzero(c):
            docs.append(d), words.append(w), counts.append(c[w])
    return {"documents": np.array(docs), "words": np.array(words), "counts": np.array(counts, float),
            "n_words": n_words}


def _lda_build(builder, data, k, options):
    extra = {"n_words": data["n_words"]} if "n_words" in data else {}
    return builder(data["documents"], data["words"], data["counts"], k, **{**extra, **options})


SPECS: dict[str, ModelSpec] = {
    "gaussian_mixture": ModelSpec(_gmm_load, _gmm_synthetic, _gmm_build, 5,
                                  "a numeric table, one point per row (columns named like ids are "
                                  "left out; empty cells and NA are missing values)"),
    "matrix_factorization": ModelSpec(_mf_load, _mf_synthetic, _mf_build, 3,
                                      "rows user,item,rating (any integer ids, renumbered 0..n-1)", ids=True),
    "lda": ModelSpec(_lda_load, _lda_synthetic, _lda_build, 3,
                     "rows doc,word,count (any integer ids, renumbered 0..n-1)", ids=True),
}


# ----- inference methods --------------------------------------------------------------------
#: ``--method``'s choices (default: stochastic with --minibatch or --per-node, else batch)
METHODS = ("batch", "stochastic")


def check_method_options(args) -> None:
    """fit()'s own check of the options the flags give (``vmp.inference.options.check``), a
    UsageError naming the flags; ``args.method`` set to the method fit() will run."""
    from .errors import CheckpointError, OptionError
    from .inference.options import check, check_restarts

    keywords = fit_keywords(args)
    try:
        check_restarts(args.n_init, keywords, lambda name: flag_of(args, name))
        args.method = check(keywords, lambda name: flag_of(args, name)).method
    except OptionError as err:
        raise UsageError(str(err)) from None
    except CheckpointError as err:
        raise CLIError(str(err)) from None


def check_minibatch(model, args) -> None:
    """``Minibatch.check``: the model has the data plate --minibatch names, with SIZE elements."""
    from .errors import VMPError

    if args.method != "stochastic" or args.minibatch is None:
        return
    try:
        subsample_of(args).check(model, "--minibatch")
    except VMPError as err:
        raise UsageError(str(err)) from None


def _describe_method(args) -> str:
    starts = f", best of {args.n_init} starts (seeds {args.seed} to {args.seed + args.n_init - 1})" \
        if args.n_init > 1 else ""
    if args.method == "batch":
        return "batch VMP" + starts
    sub = (f"minibatches of {args.minibatch[1]} ({args.minibatch[0]} plate)"
           if args.minibatch is not None else f"{args.per_node} children per node")
    step = (", adaptive steps (the rule alone)" if getattr(args, "adaptive_rule", False)
            else ", adaptive steps" if args.adaptive else "")
    return f"stochastic VMP ({sub}, {args.update or 'per-node'} update{step}){starts}"


# ----- the demo: one entry per inference method compared -------------------------------------
@dataclass
class DemoFit:
    """One fit of the demo: ``label`` names its sub-report directory, ``fit(model, args)``
    returns the FitResult. Adding a method to the demo is adding an entry to DEMO_FITS."""

    label: str
    title: str
    fit: Callable


def _demo_batch(model, args):
    return model.fit(method="batch", iterations=args.iterations, tol=args.tol, seed=args.seed)


def _demo_svi(model, args):
    from .inference import Minibatch, RobbinsMonro

    size = min(args.batch_size, args.n)
    return model.fit(method="stochastic", subsample=Minibatch("data", size),
                     step=RobbinsMonro(tau=1.0, kappa=0.7), iterations=args.svi_iterations,
                     evaluate_every=args.evaluate_every, seed=args.seed)


def _demo_svi_plus(model, args):
    from .inference import Minibatch, RobbinsMonro
    from .policies import SVIPlus

    size = min(args.batch_size, args.n)
    return model.fit(method="stochastic", subsample=Minibatch("data", size),
                     step=RobbinsMonro(tau=1.0, kappa=0.7), iterations=args.svi_iterations,
                     evaluate_every=args.evaluate_every, seed=args.seed,
                     policies=[SVIPlus(effective=lambda t: min(size, 0.4 * size + t / 10))])


DEMO_FITS: list[DemoFit] = [
    DemoFit("batch", "batch VMP (every node updated from all the data each sweep)", _demo_batch),
    DemoFit("svi", "stochastic VMP, SVI (minibatches of the data plate; Robbins-Monro steps "
                   "tau=1, kappa=0.7)", _demo_svi),
    DemoFit("svi_plus", "SVI+ (Paisley et al.: the same minibatches weighted to an effective batch "
                        "size M_t = min(|S|, 0.4|S| + t/10), annealing the gradient noise)", _demo_svi_plus),
]


# ----- building a model from the command line -----------------------------------------------
def _literal(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _options(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise UsageError(f"--option expects NAME=VALUE, got '{pair}'")
        out[key.strip()] = _literal(value.strip())
    return out


def _known_models() -> dict:
    from . import models

    return models.MODELS


def _describe_known(known) -> str:
    return ", ".join(sorted(known))


def _load_module(path: Path):
    if not path.exists():
        raise CLIError(f"model file '{path}' not found")
    if path.is_dir():
        raise CLIError(f"model file '{path}' is a directory")
    name = f"_vmp_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CLIError(f"cannot load model file '{path}' (is it a Python file?)")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's code: report where, without a traceback
        raise CLIError(f"error in model file '{path}'{_where(err, path)}: {type(err).__name__}: {err}") from None
    return module


def _where(err: BaseException, path: Path) -> str:
    if isinstance(err, SyntaxError) and err.lineno:
        return f", line {err.lineno}"
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if Path(f.filename).resolve() == path.resolve()]
    return f", line {frames[-1].lineno}" if frames else ""


def _user_model(path: Path, data_path: str | None, options: dict, columns: list[str] | None,
                table: Table | None = None):
    from .graph.model import Model

    module = _load_module(path)
    build = getattr(module, "build", None)
    if callable(build):
        kwargs = dict(options)
        if data_path is not None:
            table = read_table(data_path) if table is None else table
            if columns is not None:
                chosen = [table.index(c) for c in columns]
                table.left_out(chosen, f"'{path.name}'", ", ".join(table.names[j] for j in chosen))
                kwargs["data"] = np.column_stack([table.numbers(j) for j in chosen])
            else:
                kwargs["data"] = table.values
        try:
            model = build(**kwargs)
        except TypeError as err:
            if any(s in str(err) for s in ("keyword argument", "positional argument")):
                raise UsageError(f"build() in '{path}': {err}") from None
            raise CLIError(f"build() in '{path}' failed{_where(err, path)}: TypeError: {err}") from None
        except Exception as err:
            raise CLIError(f"build() in '{path}' failed{_where(err, path)}: {type(err).__name__}: {err}") from None
    elif hasattr(module, "model"):
        if data_path is not None or options:
            raise UsageError(f"model file '{path}' defines 'model', not build(data=None): it takes "
                             f"no DATA or --option")
        model = module.model
    else:
        raise CLIError(f"model file '{path}' defines neither build(data=None) nor model")
    if not isinstance(model, Model):
        raise CLIError(f"model file '{path}': expected a vmp.Model, got {type(model).__name__}")
    return model


def build_model(args, table: Table | None = None):
    """The vmp.Model that MODEL, DATA and the model options of ``args`` describe, and what was
    read: {"describe": text, "ids": {role: {"column", "ids"}}} (empty without a data file; a model
    file without one: {"source": whose data}). ``table``: the rows of DATA to build it from
    (a stream's chunk), instead of the whole file."""
    options = _options(args.option)
    if args.columns is not None and args.data is None:
        raise UsageError("--columns chooses columns of DATA; give a data file")
    known = _known_models()
    name = args.model
    if name in known:
        spec = SPECS.get(name)
        if spec is None:
            raise CLIError(f"model '{name}' has no command-line data loader yet; use a Python file "
                           f"defining build(data=None)")
        if args.factorized:
            if name != "matrix_factorization":
                raise UsageError(f"--factorized applies to matrix_factorization, not {name}")
            options["factorized"] = True
        k = spec.default_k if args.components is None else args.components
        if k < 1:
            raise UsageError(f"--components must be a positive integer, got {k}")
        if args.data:
            data = spec.load(read_table(args.data) if table is None else table, args.columns)
        else:
            data = spec.synthetic(args.n, args.seed)
        info = {key: data.pop(key) for key in ("describe", "ids") if key in data}
        return call(spec.build, f"model {name}", known[name], data, k, options), info
    path = Path(name)
    if path.suffix == ".py" or path.exists():
        if args.components is not None or args.factorized:
            raise UsageError("-k/--components and --factorized apply to the built-in models; give a "
                             "model file's options with --option NAME=VALUE")
        info = {} if args.data else {"source": f"the data of {path.name}'s build(data=None)"}
        return _user_model(path, args.data, options, args.columns, table), info
    raise UsageError(f"unknown model '{name}': choose one of {_describe_known(known)}, or give the "
                     f"path of a Python file defining build(data=None)")


# ----- commands -----------------------------------------------------------------------------
def _fit(model, args):
    with Cluster(args):
        result = call(lambda: model.fit(n_init=args.n_init, **fit_keywords(args)),
                       f"fitting {model.name} ({args.method})")
    if not result.diverged:
        model.infer_locals()  # the report shows every node; a minibatch fit kept only the globals
    return result


def _report(model, result, directory, ids: dict | None = None) -> list[Path]:
    """Write the report; with ``ids``, also ids.json: for each id column, the original id of each
    0-based index the model uses ({"users": {"column": "userId", "ids": [1, 2, ...]}})."""
    import json

    from .diagnostics import write_report

    try:
        paths = write_report(model, result, directory)
        if ids:
            path = Path(directory) / "ids.json"
            path.write_text(json.dumps(ids))
            paths.append(path)
        return paths
    except OSError as err:
        raise CLIError(f"cannot write the report to '{directory}': {err.strerror or err}") from None


def check_report_dir(directory) -> None:
    """Refuse, before any fitting, a report directory that cannot be written (a file, a parent
    that is a file, no permission); create it otherwise."""
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise CLIError(f"--report: '{path}' exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CLIError(f"--report: cannot create the directory '{path}': {err.strerror or err}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise CLIError(f"--report: the directory '{path}' is not writable")


def _print_paths(directory, paths) -> None:
    print(f"report written to {Path(directory).resolve()}/:")
    for p in paths:
        print(f"  {p.name}")


def cmd_render(args) -> int:
    from .render import diagram, write

    model, _ = build_model(args)
    dot = diagram(model)
    if args.output is None:
        sys.stdout.write(dot.source)
        return EXIT_OK
    try:
        path = write(dot, args.output)
    except ValueError as err:
        raise UsageError(str(err)) from None
    except OSError as err:
        raise CLIError(f"cannot write '{args.output}': {err.strerror or err}") from None
    print(f"diagram written to {path}")
    return EXIT_OK


def _block_models(model, args, blocks):
    """The models of the blocks of DATA a stream reads (``--stream ROWS`` rows each, read one
    at a time): ``model`` (built from the first), then each later block's, built the same way;
    None without a data file (the model holds all its data)."""
    if blocks is None:
        return None

    def models():
        yield model
        for table in blocks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # (said for the first block)
                yield build_model(args, table)[0]

    return models()


def cmd_fit(args) -> int:
    cli_stream.check(args)
    if args.stream is None:
        check_method_options(args)
    if args.report:
        check_report_dir(args.report)
    blockwise = args.stream and args.data and not getattr(SPECS.get(args.model), "ids", False)
    blocks = read_blocks(args.data, args.stream) if blockwise else None
    model, info = build_model(args, None if blocks is None else next(blocks))
    check_minibatch(model, args)
    source = (f"{args.data} ({info['describe']})" if "describe" in info else args.data) or \
        info.get("source", f"synthetic data (n={args.n}, seed={args.seed})")
    how = cli_stream.describe(args) if args.stream else _describe_method(args)
    print(f"fitting {model!r} to {source} with {how}")
    result = cli_stream.run(model, args, _block_models(model, args, blocks)) if args.stream else _fit(model, args)
    print()
    print(result.summary(model))
    if args.report:
        paths = _report(model, result, args.report, info.get("ids"))
        _print_paths(args.report, paths + ([cli_stream.write(args.report, result)] if args.stream else []))
    if getattr(args, "checkpoint", None):
        print(f"checkpoint written to {Path(args.checkpoint).resolve()} (continue with --resume)")
    if result.interrupted:
        print(f"vmp fit: interrupted after {result.iterations} steps", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result.diverged:
        print(f"vmp fit: error: the fit diverged: {result.message}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _demo_model(x, args):
    from . import models

    # Wishart prior with E[Lambda_k] = K S^-1 (S the data covariance): a priori each component
    # spans about 1/K of the data. The builder's default, E[Lambda_k] = S^-1, lets one
    # component cover several clusters, and batch VMP then often stops with clusters merged.
    d = x.shape[1]
    dof = d + 2.0
    scale = args.components * np.linalg.inv(np.cov(x, rowvar=False) + 1e-6 * np.eye(d)) / dof
    return call(models.gaussian_mixture, "model gaussian_mixture", x, args.components,
                 alpha=args.alpha, dof=dof, scale=scale)


def _demo_large(args, report: Path) -> list[Path]:
    """The same mixture on ``args.large`` points, batch VMP against SVI (minibatches of 200):
    seconds of steps until the exact bound is within a gap of the best either reached
    (``vmp.diagnostics.race``); written to ``report/large.md``."""
    from .diagnostics.race import final_bounds, race_table, race_verdict, time_to_bound
    from .inference import Minibatch, RobbinsMonro

    x, _ = blobs(args.large, args.seed + 1, clusters=args.clusters)
    print()
    print(f"== a larger data set: {args.large:,} points; batch VMP ({args.large_sweeps} sweeps) against "
          f"SVI (minibatches of 200, {args.large_steps} steps, the exact bound every 10 steps)")
    results = {
        "batch VMP": call(lambda: _demo_model(x, args).fit(
            method="batch", iterations=args.large_sweeps, tol=0, seed=args.seed, progress=False),
            "fitting the larger data set (batch)"),
        "SVI": call(lambda: _demo_model(x, args).fit(
            method="stochastic", subsample=Minibatch("data", 200), step=RobbinsMonro(tau=1.0, kappa=0.7),
            iterations=args.large_steps, evaluate_every=10, evaluate="full", seed=args.seed,
            progress=False), "fitting the larger data set (SVI)"),
    }
    rows = time_to_bound(results)
    table = race_table(rows, list(results))
    verdict = (f"On {args.large:,} points (seconds of steps; evaluations not counted; this machine, "
               f"this run): " + race_verdict(rows, "SVI", "batch VMP") + "; " + final_bounds(results)
               + ". One SVI step touches 200 points whatever N is, a batch sweep all of them.")
    print(table)
    print(verdict)
    path = report / "large.md"
    try:
        path.write_text(f"# Time to a bound on {args.large:,} points\n\n{table}\n{verdict}\n", encoding="utf-8")
    except OSError as err:
        raise CLIError(f"cannot write the report to '{report}': {err.strerror or err}") from None
    return [path]


def _demo_selection(text: str | None) -> list[DemoFit]:
    known = {f.label: f for f in DEMO_FITS}
    if text is None:
        return list(DEMO_FITS)
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageError(f"--methods: unknown {', '.join(unknown) or 'empty list'}; choose from "
                         f"{', '.join(known)}")
    return [known[n] for n in dict.fromkeys(names)]


def cmd_demo(args) -> int:
    from .diagnostics import comparison_rows, comparison_table, write_comparison

    if args.n < 2:
        raise UsageError(f"--n must be at least 2, got {args.n}")
    if args.components < 1 or args.clusters < 1:
        raise UsageError("--components and --clusters must be positive")
    if args.large < 0 or args.large == 1:
        raise UsageError(f"--large must be 0 (skip) or at least 2, got {args.large}")
    chosen = _demo_selection(args.methods)
    check_report_dir(args.report)
    x, _ = blobs(args.n, args.seed, clusters=args.clusters)
    print(f"demo: {args.n} points in {args.clusters} Gaussian clusters (seed {args.seed}); "
          f"fitting a Bayesian Gaussian mixture with {args.components} components by "
          f"{', '.join(f.label for f in chosen)}")
    report = Path(args.report)
    fits = {}
    failed = False
    for entry in chosen:
        model = _demo_model(x, args)
        result = call(entry.fit, f"fitting {model.name} ({entry.label})", model, args)
        if not result.diverged:
            model.infer_locals()
        fits[entry.label] = (model, result)
        failed |= bool(result.diverged)
        print()
        print(f"== {entry.label}: {entry.title}")
        print(result.summary(model))
        _print_paths(report / entry.label, _report(model, result, report / entry.label))
    try:
        paths = write_comparison(fits, report)
    except OSError as err:
        raise CLIError(f"cannot write the report to '{report}': {err.strerror or err}") from None
    print()
    print(comparison_table(comparison_rows(fits)))
    if len(fits) > 1:
        print(f"On {args.n:,} points a batch sweep is cheap, so batch VMP usually ends higher and "
              f"sooner; SVI pays off when one sweep over the data is expensive (its step costs the "
              f"same at any N): see the larger data set below and docs/getting-started.md.")
    _print_paths(report, paths)
    if args.large:
        _print_paths(report, _demo_large(args, report))
    for label, (_, result) in fits.items():
        if result.diverged:
            print(f"vmp demo: error: the {label} fit diverged: {result.message}", file=sys.stderr)
    return EXIT_ERROR if failed else EXIT_OK


# ----- argument parsing ---------------------------------------------------------------------


def _count(text: str) -> int:
    return integer(text, 0, "a non-negative integer")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'") from None
    if not value > 0 or not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line plus the usage, exit 2
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _plate_size(text: str) -> tuple[str, int]:
    plate, sep, size = text.rpartition(":")
    if not sep or not plate.strip():
        raise argparse.ArgumentTypeError(f"expected PLATE:SIZE, e.g. data:50, got '{text}'")
    return plate.strip(), positive_int(size)


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got '{text}'")
    return value


def _fit_options(p) -> None:
    p.add_argument("--method", choices=METHODS, default=None,
                   help="inference method (default: stochastic with --minibatch or --per-node, else batch)")
    p.add_argument("--iterations", type=_count, default=None, metavar="N",
                   help=f"batch: sweeps at most (default: {BATCH_ITERATIONS}, warning if the fit has not "
                        f"converged by then); stochastic: steps (default: {STOCHASTIC_ITERATIONS}); 0: the initial "
                        f"q only")
    p.add_argument("--tol", type=_positive_float, default=None,
                   help=f"batch: stop when the relative ELBO change is below this (default: {TOL:g}); "
                        "stochastic: stop when the mean of the last 5 evaluations of the bound has not "
                        "improved by more than this, relative and beyond its standard error, on the mean of "
                        "5 evaluations before the last max(5 evaluations, 3/4 of the run) (default: run "
                        "--iterations steps)")
    p.add_argument("--n-init", type=positive_int, default=1, metavar="N",
                   help="fit N times from seeds SEED, SEED + 1, ... and keep the fit with the best final "
                        "bound (local optima: mixtures, LDA, HMMs; default: 1)")
    g = p.add_argument_group("stochastic VMP (--method stochastic)")
    g.add_argument("--minibatch", type=_plate_size, metavar="PLATE:SIZE",
                   help="SVI: each step draws SIZE elements of the data plate PLATE (e.g. data:50)")
    g.add_argument("--per-node", type=positive_int, metavar="C",
                   help="each node update draws C of the children of each element (Paquet Alg. 1)")
    g.add_argument("--update", choices=("per-node", "global"),
                   help="per-node: each node's new q is used by the next; global: all targets "
                        "from one snapshot (default: per-node)")
    g.add_argument("--tau", type=_finite_float, metavar="TAU",
                   help="step size rho_t = rho1 ((t + tau) / (1 + tau))^-kappa: delay (default: 1)")
    g.add_argument("--kappa", type=_finite_float, metavar="KAPPA",
                   help="forgetting rate, in [0, 1]; (0.5, 1] for convergence (default: 0.6)")
    g.add_argument("--rho1", type=_finite_float, metavar="RHO1",
                   help="first step size, in (0, 1] (default: 1)")
    g.add_argument("--adaptive", action="store_true",
                   help="step sizes from the gradients (vmp.Adaptive(): each node's rate from Ranganath et al. "
                        "2013 times a factor the nodes share) instead of --tau/--kappa/--rho1")
    g.add_argument("--adaptive-rule", action="store_true",
                   help="as --adaptive, with Ranganath et al.'s rule alone (vmp.Adaptive(coupled=False): "
                        "for a fit with one small stepped node)")
    g.add_argument("--evaluate-every", type=positive_int, metavar="K",
                   help="evaluate the bound every K steps (default: 10); with --minibatch on a fixed "
                        "subsample of the data plate, with its standard error")
    s = p.add_argument_group("state (checkpoint and resume)")
    s.add_argument("--checkpoint", metavar="PATH",
                   help="write the fit's state to PATH (.npz) at the end, on Ctrl-C/SIGTERM and every "
                        "--checkpoint-every steps")
    s.add_argument("--checkpoint-every", type=positive_int, metavar="K",
                   help="also write the checkpoint every K steps")
    s.add_argument("--resume", metavar="PATH",
                   help="continue the fit saved in PATH up to --iterations steps in all "
                        "(same model, data and options)")
    Cluster.options(p.add_argument_group("cluster (pip install 'vmp[dask]'; see docs/scale.md)"))


def _column_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected column names or positions separated by commas, "
                                         f"got '{text}'")
    return names


def _model_options(p) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="gaussian_mixture, lda, matrix_factorization, or a Python file defining "
                        "build(data=None)")
    p.add_argument("data", metavar="DATA", nargs="?",
                   help="data file; without it the built-in models use synthetic data. "
                        + "; ".join(f"{k}: {s.data_help}" for k, s in SPECS.items()))
    p.add_argument("-k", "--components", "--topics", "--factors", dest="components",
                   type=positive_int, metavar="K",
                   help="components (gaussian_mixture), topics (lda) or factors "
                        "(matrix_factorization)")
    p.add_argument("--factorized", action="store_true",
                   help="matrix_factorization: fully factorized q(u_mk) q(v_nk)")
    p.add_argument("-O", "--option", action="append", metavar="NAME=VALUE",
                   help="another keyword for the model builder, e.g. -O alpha=0.1 (repeatable)")
    p.add_argument("--columns", type=_column_list, metavar="A,B,...",
                   help="the columns of DATA to read, by header name or 1-based position, in the "
                        "order the model reads them (matrix_factorization: user,item,rating; lda: "
                        "doc,word,count; gaussian_mixture: the dimensions); the others are left out "
                        "with a warning")
    p.add_argument("--n", type=positive_int, default=200,
                   help="size of the synthetic data when DATA is not given (default: 200)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def load_fit(path, model):
    """The FitResult saved at ``path`` (``vmp fit --checkpoint``, ``result.save``) with its
    state set on ``model``; a CLIError when the file cannot be read or holds another model's
    nodes (names, or plate sizes)."""
    import zipfile

    from .errors import CheckpointError
    from .inference import load
    from .inference.state import State

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"checkpoint '{p}' not found")
    if not zipfile.is_zipfile(p):
        raise CLIError(f"checkpoint '{p}' is not a saved fit (the .npz file of vmp fit --checkpoint or "
                       f"result.save)")
    try:
        state, _ = State.load(p)
    except CheckpointError as err:
        raise CLIError(f"cannot read checkpoint '{p}' (a file of vmp fit --checkpoint or result.save): "
                       f"{err}") from None
    model.compile()  # (a partially observed node is hidden once compiled)
    hidden = {n.name: n for n in model if not n.observed}
    wrong = [name for name, natural in state.natural.items() if name not in hidden
             or np.shape(natural[0])[:len(hidden[name].plate_shape)] != hidden[name].plate_shape]
    if wrong:
        raise CLIError(f"checkpoint '{p}' holds node(s) {', '.join(sorted(wrong))} that model '{model.name}' as "
                       f"built here lacks or sizes otherwise (its hidden nodes: {', '.join(hidden)}); give "
                       f"the MODEL, DATA and options it was fitted with")
    try:
        return load(p, model)
    except CheckpointError as err:
        raise CLIError(f"{err}; give the MODEL, DATA and options it was fitted with") from None


def cmd_summary(args) -> int:
    model, _ = build_model(args)
    result = load_fit(args.checkpoint, model)
    if not result.diverged and any(n.name not in model.state.natural for n in model if not n.observed):
        model.infer_locals()  # a minibatch fit kept only the globals (as vmp fit's report)
    print(result.summary(model), end="")
    if args.csv:
        from .diagnostics import write_summary_csv

        try:
            print(f"posterior table written to {write_summary_csv(model, args.csv).resolve()}")
        except OSError as err:
            raise CLIError(f"cannot write '{args.csv}': {err.strerror or err}") from None
    return EXIT_OK


def _version() -> str:
    from . import __version__

    return __version__


#: a complete model file: the example of ``vmp fit --help`` and of docs/getting-started.md
MODEL_FILE_EXAMPLE = """\
import numpy as np
import vmp

def build(data=None, k=3, alpha=1.0):
    if data is None:  # the file's own data when no DATA is given
        rng = np.random.default_rng(0)
        data = np.concatenate([rng.normal(c, 1.0, size=(100, 2)) for c in (-4, 0, 4)])
    with vmp.Model("mixture") as model:
        pi = vmp.Dirichlet("pi", alpha=np.full(k, alpha))
        with vmp.Plate("components", k):
            mu = vmp.Gaussian("mu", mean=np.zeros(2), precision=0.01 * np.eye(2))
            lam = vmp.Wishart("Lambda", dof=2, scale=np.eye(2))
        with vmp.Plate("data", len(data)):
            z = vmp.Categorical("z", pi)
            vmp.Gaussian("x", mean=mu[z], precision=lam[z], observed=data)
    return model
"""

#: the format of a model file (MODEL given as a path), shown by ``vmp fit --help`` and ``vmp render --help``
MODEL_FILE_HELP = f"""\
A model file is a Python file that defines build(data=None), returning a vmp.Model (or a
module-level `model`, which takes no DATA and no --option). DATA, when given, is read as a
table and passed as data= (an N x columns float array; --columns picks and orders the
columns); without DATA build() gets data=None and uses its own. Each --option NAME=VALUE
becomes a keyword argument of build() (VALUE read as a Python literal). For example, mixture.py:

{textwrap.indent(MODEL_FILE_EXAMPLE, "    ")}
then: vmp fit mixture.py points.csv --columns x,y -O k=4 --report out
      vmp fit mixture.py --minibatch data:50      (stochastic VMP on the file's own data)
      vmp render mixture.py -o mixture.svg
"""


def _summary_parser(sub) -> None:
    p = sub.add_parser("summary", help="print the posterior summary of a saved fit",
                       description="Read a fit saved by vmp fit --checkpoint (or result.save) into the model "
                                   "MODEL [DATA] built as vmp fit builds it (the same options), and print "
                                   "its summary; --csv also writes the posterior table (the report's "
                                   "summary.csv).")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="the saved fit (.npz)")
    _model_options(p)
    p.add_argument("--csv", metavar="FILE", help="also write the posterior table (node, element, mean, sd, "
                                                 "95%% interval) to FILE")
    p.set_defaults(func=cmd_summary)


def _demo_parser(sub) -> None:
    """The ``demo`` command's arguments."""
    p = sub.add_parser("demo", help="fit a Gaussian mixture to synthetic 2-D clusters by batch VMP, "
                                    "SVI and SVI+; write the reports and a comparison",
                       description="Generate a seeded 2-D dataset of a few Gaussian clusters, fit a "
                                   "Bayesian Gaussian mixture by each method (batch VMP, stochastic "
                                   "VMP with minibatches: SVI, and SVI+), write one report per method "
                                   "into DIR/<method>/ (diagram, dashboard, history JSON, summary, "
                                   "cluster plot) and a comparison into DIR (comparison.md, "
                                   "comparison.png); then race batch VMP against SVI to a bound on "
                                   "--large points (DIR/large.md).")
    p.add_argument("--report", default="report", metavar="DIR", help="report directory (default: report)")
    p.add_argument("--n", type=positive_int, default=500, help="number of points (default: 500)")
    p.add_argument("--clusters", type=positive_int, default=4, help="true clusters (default: 4)")
    p.add_argument("-k", "--components", type=positive_int, default=8,
                   help="mixture components to fit (default: 8; unneeded ones are switched off)")
    p.add_argument("--alpha", type=_positive_float, default=0.1,
                   help="Dirichlet concentration of the weights (default: 0.1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--methods", metavar="LIST",
                   help=f"comma-separated fits to run, of {', '.join(f.label for f in DEMO_FITS)} "
                        f"(default: all)")
    p.add_argument("--iterations", type=positive_int, default=500, metavar="N",
                   help="batch: sweeps at most (default: 500)")
    p.add_argument("--tol", type=_positive_float, default=1e-6,
                   help="batch: stop when the relative ELBO change is below this (default: 1e-6)")
    p.add_argument("--svi-iterations", type=positive_int, default=400, metavar="N",
                   help="svi: steps (default: 400)")
    p.add_argument("--batch-size", type=positive_int, default=50, metavar="S",
                   help="svi: points per minibatch (default: 50)")
    p.add_argument("--evaluate-every", type=positive_int, default=25, metavar="K",
                   help="svi: evaluate the full ELBO every K steps (default: 25)")
    p.add_argument("--large", type=int, default=1_000_000, metavar="N",
                   help="then race batch VMP against SVI to a bound on N points, with no reports "
                        "(default: 1000000; 0 skips it)")
    p.add_argument("--large-sweeps", type=positive_int, default=3, metavar="N",
                   help="larger data set: batch sweeps (default: 3)")
    p.add_argument("--large-steps", type=positive_int, default=40, metavar="N",
                   help="larger data set: SVI steps (default: 40)")
    p.set_defaults(func=cmd_demo)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vmp", description="Variational message passing on Bayesian networks.",
                     epilog="Exit status: 0 success, 1 data/model/fit error, 2 wrong arguments.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.add_argument("--version", action="version", version=f"vmp {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    _demo_parser(sub)

    p = sub.add_parser("fit", help="fit a model and print its summary (and write a report)",
                       epilog=MODEL_FILE_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    _model_options(p)
    _fit_options(p)
    cli_stream.options(p)
    p.add_argument("--report", metavar="DIR", help="write the report into DIR")
    p.set_defaults(func=cmd_fit)

    _summary_parser(sub)
    p = sub.add_parser("render", help="draw a model's network", epilog=MODEL_FILE_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _model_options(p)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="image file (.svg, .png, .pdf) or .dot; without it the DOT source is printed")
    p.set_defaults(func=cmd_render)
    return parser


def main(argv=None) -> int:
    """Run the command line; return the exit status (0 ok, 1 error, 2 wrong arguments)."""
    parser = make_parser()
    if not (sys.argv[1:] if argv is None else argv):  # bare "vmp": the help, not just an error
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help (0) or a usage error (2), already printed
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning  # printed when they happen, before a long fit
        try:
            code = args.func(args)
        except (CLIError, TableError) as err:
            print(f"vmp {args.command}: error: {err}", file=sys.stderr)
            code = getattr(err, "code", EXIT_ERROR)
        except KeyboardInterrupt:
            print("vmp: interrupted", file=sys.stderr)
            code = 130
        except BrokenPipeError:  # stdout closed early (vmp fit ... | head): stop quietly
            _silence_stdout()
            return EXIT_ERROR
        except Exception as err:
            if args.debug:
                raise
            print(f"vmp {args.command}: internal error: {type(err).__name__}: {err} (run with "
                  f"--debug for the traceback)", file=sys.stderr)
            code = EXIT_ERROR
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_ERROR
    return code


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"vmp: warning: {message}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
