"""The executor protocol and the shape of the code around it, read from the source: every
executor and every handle answers the methods its abstract class declares; no code asks which
executor or which handle it has (no isinstance or ``type(...) is`` on their classes, at most 3
hasattr in vmp/inference and vmp/graph); no import circle; no function in vmp/ longer than 60
lines."""
from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import networkx as nx

import vmp
from vmp.graph.held import Held
from vmp.graph.partial import Filled
from vmp.inference.executor import Executor
from vmp.inference.executor_partitioned import Kept
from vmp.inference.partitioned_step import Remote

ROOT = Path(vmp.__file__).parent


def subclasses(cls) -> list:
    out = []
    for sub in cls.__subclasses__():
        out += [sub] + subclasses(sub)
    return [c for c in out if c.__module__.startswith("vmp.")]


EXECUTORS = subclasses(Executor)  # every executor vmp defines (its modules imported by ``import vmp``)
HANDLES = subclasses(Held)


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ("vmp",) + path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once (the tests only read the trees)."""
    return ast.parse(path.read_text())


@functools.cache
def imports(deferred: bool) -> nx.DiGraph:
    """module -> module it imports (a package's ``__init__`` too: importing a.b runs a first);
    with ``deferred`` the imports inside functions as well, else those run at import time
    (outside ``if TYPE_CHECKING:``). Built once per value of ``deferred``; the tests only read it."""
    mods = modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        tree = parsed(path)
        if deferred:
            statements = list(ast.walk(tree))
        else:
            statements = [s for s in tree.body
                          if not (isinstance(s, ast.If) and "TYPE_CHECKING" in ast.unparse(s.test))]
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for s in statements:
            if isinstance(s, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - (s.level - 1)] if s.level else []
                target = ".".join(base + ([s.module] if s.module else []))
                found = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in s.names]
            elif isinstance(s, ast.Import):
                found = [a.name for a in s.names]
            else:
                continue
            for t in found:
                for k in range(2, t.count(".") + 2):
                    step = ".".join(t.split(".")[:k])
                    if step in mods and step != name and not name.startswith(step + "."):
                        graph.add_edge(name, step)
    return graph


def test_every_executor_and_handle_answers_what_its_class_declares():
    """No abstract method left unanswered (a tuple subclass is not stopped at construction by
    its ABC, so this is the check)."""
    assert {"Serial", "Chunked", "Partitioned", "DaskExecutor"} <= {c.__name__ for c in EXECUTORS}
    assert {Filled, Kept, Remote} <= set(HANDLES)
    for cls in EXECUTORS + HANDLES:
        assert not cls.__abstractmethods__, (cls.__name__, sorted(cls.__abstractmethods__))
    assert {"children", "bound"} <= Executor.__abstractmethods__
    assert {"gathered", "pieces"} <= Held.__abstractmethods__
    for cls in HANDLES:
        assert issubclass(cls, Held)
    for cls in EXECUTORS:
        assert issubclass(cls, Executor)


def test_no_code_asks_which_executor_or_handle_it_has():
    """No isinstance of, or ``type(x) is``, a class of executor or handle (or the task class an
    executor used to inspect) anywhere in vmp; at most 3 hasattr in vmp/inference and vmp/graph."""
    names = {c.__name__ for c in EXECUTORS + HANDLES} | {"Children"}
    found, hasattrs = [], []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if not isinstance(node, (ast.Call, ast.Compare)):
                continue
            text = ast.unparse(node)
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "isinstance" \
                    and {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & names:
                found.append(f"{path.name}: {text}")
            if isinstance(node, ast.Compare) and "type(" in ast.unparse(node.left) \
                    and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops) \
                    and {n.id for c in node.comparators for n in ast.walk(c) if isinstance(n, ast.Name)} & names:
                found.append(f"{path.name}: {text}")
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "hasattr" \
                    and path.parent.name in ("inference", "graph"):
                hasattrs.append(f"{path.name}: {text}")
    assert not found, found
    assert len(hasattrs) <= 3, hasattrs


def test_no_import_circle():
    """No module imports, at import time, a module that imports it back (through any chain)."""
    cycles = list(nx.simple_cycles(imports(deferred=False)))
    assert not cycles, cycles


def test_no_import_circle_through_deferred_imports():
    """Nor through the imports made inside functions: Model's facades reach the layers above the
    graph through ``graph/facades.py`` (registered by ``vmp/facades.py``), the linear maps of an
    expression through ``expressions.MAPS`` (registered by ``linear.py``), and the options import
    the monitors and ``inference/policy.py``, which import nothing of inference."""
    cycles = list(nx.simple_cycles(imports(deferred=True)))
    assert not cycles, cycles


def test_the_command_line_modules_close_no_circle():
    """cli_stream.py reaches cli.py through no import, not even one made inside a function: what both
    need lives in cli_common.py."""
    graph = imports(deferred=True)
    assert nx.has_path(graph, "vmp.cli", "vmp.cli_stream")
    assert not nx.has_path(graph, "vmp.cli_stream", "vmp.cli")
    assert not nx.has_path(graph, "vmp.cli_common", "vmp.cli")


def test_the_predictives_close_no_circle():
    """The prior's draws and the logit predictives import nothing of vmp/predictive.py, not even
    inside a function (the broadcast of natural parameters lives in graph/draws.py, the Predictive
    value in predictive_distribution.py), and the options import nothing of the loop."""
    graph = imports(deferred=True)
    for module in ("vmp.graph.prior", "vmp.predictive_logit", "vmp.predictive_distribution"):
        assert "vmp.predictive" not in set(graph.successors(module)), module
    assert "vmp.inference.loop" not in set(graph.successors("vmp.inference.options"))


def test_fit_results_readers_import_nothing_above_inference():
    """inference/result.py imports no module of the reading layer, even inside its readers
    (``vmp/readers.py`` registers them in ``result.READERS``), and the readers are registered."""
    from vmp.inference.result import READERS

    above = [m for m in imports(deferred=True).successors("vmp.inference.result")
             if m.startswith(("vmp.diagnostics", "vmp.export", "vmp.readers"))]
    assert not above, above
    assert set(READERS) == {"plot", "summary", "to_dataframe", "to_arviz"}


def test_the_graph_imports_nothing_above_it():
    """vmp/graph imports only the family math, the factors, the errors and the registry class, not even inside a
    function: Model's facades (fit, predict, render, ...) and a Gaussian chain's smoothed/filtered
    are the functions ``vmp/facades.py`` registers in ``graph.facades.FACADES``; the monitors and
    ``inference/policy.py``, which the options import, import nothing of inference."""
    from vmp.graph.facades import FACADES

    graph = imports(deferred=True)
    above = sorted({(s, t) for s, t in graph.edges if s.startswith("vmp.graph")
                    and not t.startswith(("vmp.graph", "vmp.factors", "vmp.families", "vmp.errors", "vmp.registry"))})
    assert not above, above
    for module in ("vmp.monitors", "vmp.inference.policy", "vmp.domains"):
        reached = nx.descendants(graph, module)
        assert not {m for m in reached if m.startswith("vmp.inference")}, module
    called = {"fit", "batch", "stochastic", "stream", "infer_locals", "elbo", "predict", "impute", "forecast",
              "to_arviz", "render", "smoothed", "filtered", "state"}
    assert set(FACADES) == called


def test_the_import_walk_sees_a_circle():
    """The walk of the imports finds a circle that is there (two modules of a throwaway package)."""
    graph = nx.DiGraph([("vmp.a", "vmp.b"), ("vmp.b", "vmp.a")])
    assert list(nx.simple_cycles(graph))
    assert ("vmp.inference.engine", "vmp.inference.observed") in imports(deferred=False).edges
    assert ("vmp.inference.engine", "vmp.graph") in imports(deferred=False).edges  # a package's __init__


def long_functions(path: Path, limit: int = 60) -> list[tuple[str, int]]:
    """(name, lines) of each function in ``path`` longer than ``limit`` lines."""
    tree = parsed(path)
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit]


def test_functions_are_short():
    """No function in vmp/ is longer than 60 lines."""
    long = {str(path.relative_to(ROOT)): found for path in sorted(ROOT.rglob("*.py"))
            if (found := long_functions(path))}
    assert not long, long


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (tmp_path / "m.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}")
    assert long_functions(tmp_path / "m.py") == [("long", 61)]


def test_the_protocol_is_what_the_engine_and_the_loop_call():
    """Each operation of the protocol is called outside the executors' own modules (the engine
    and the loop use it), and nothing else of an executor is."""
    declared = {name for name, _ in inspect.getmembers(Executor, inspect.isfunction)}
    assert declared == {"children", "bound", "local", "local_step", "start", "finish", "close"}
    called = set()
    for path in ROOT.rglob("*.py"):
        if path.name.startswith(("executor", "partitioned")):
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Attribute) and "executor" in ast.unparse(node.value).split(".")[-1]:
                called.add(node.attr)
    assert declared - {"close"} <= called, declared - called
    assert called <= declared | {"rows_here", "sums_here", "cuts_data"}, called - declared
