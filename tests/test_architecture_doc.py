"""docs/architecture.md matches the code: every file it names exists, and every ``name.attr`` it
names (a module's function or class, a class's method or attribute, read from the source) is
there."""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from functools import lru_cache
from pathlib import Path

import pytest

import vmp

REPO = Path(vmp.__file__).parent.parent
DOC = REPO / "docs" / "architecture.md"
#: placeholders of the recipes ("to add an executor, touch vmp/inference/executor_NAME.py")
PLACEHOLDERS = re.compile(r"(^|/|_)(x|NAME)\.py$")
#: the doc's names of instances, by their class
INSTANCES = {"model": "Model", "node": "Node", "result": "FitResult", "state": "State", "engine": "Engine",
             "ctx": "Context", "family": "Family", "loop": "LoopState"}
#: other libraries' names (and the standard library's)
OUTSIDE = {"np", "numpy", "networkx", "functools"}


@lru_cache(maxsize=None)
def index(root: Path) -> tuple[dict, dict]:
    """(module stem -> its top-level names, class name -> (its attributes, its bases' names))."""
    modules, classes = {}, {}
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = set()
        for n in tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                names.update(x.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                             for x in ast.walk(t) if isinstance(x, ast.Name))
            elif isinstance(n, ast.ImportFrom):
                names.update(a.asname or a.name for a in n.names)
            if isinstance(n, ast.ClassDef):
                attrs = {m.name for m in ast.walk(n) if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
                attrs |= {m.attr for m in ast.walk(n) if isinstance(m, ast.Attribute)
                          and isinstance(m.value, ast.Name) and m.value.id in ("self", "obj", "cls")}
                attrs |= {t.id for m in n.body if isinstance(m, (ast.Assign, ast.AnnAssign))
                          for t in (m.targets if isinstance(m, ast.Assign) else [m.target]) if isinstance(t, ast.Name)}
                own, bases = classes.get(n.name, (set(), set()))
                classes[n.name] = (own | attrs, bases | {ast.unparse(b).split(".")[-1] for b in n.bases})
        modules.setdefault(path.parent.name if path.stem == "__init__" else path.stem, set()).update(names)
    return modules, classes


def has(classes: dict, cls: str, attr: str, seen: frozenset = frozenset()) -> bool:
    attrs, bases = classes.get(cls, (set(), set()))
    return attr in attrs or any(has(classes, b, attr, seen | {cls}) for b in bases - seen)


def missing_files(text: str) -> list[str]:
    files = set(re.findall(r"`([\w/.\-]+\.py)`", text))
    every = [str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".venv" not in p.parts]
    return sorted(f for f in files if not PLACEHOLDERS.search(f)
                  and not any(p == f or p.endswith("/" + f) for p in every))


def missing_names(text: str, modules: dict, classes: dict) -> list[str]:
    out = []
    for token in sorted(set(re.findall(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`", text))):
        parts = token.split(".")
        if parts[0] in OUTSIDE or parts[0] in sys.stdlib_module_names or parts[-1] in ("py", "md", "toml", "yml"):
            continue
        if parts[0] == "vmp" and len(parts) == 2:
            found = hasattr(vmp, parts[1]) or importlib.util.find_spec(token) is not None
        else:
            head, attr = parts[-2], parts[-1]
            found = attr in modules.get(head, ()) or has(classes, INSTANCES.get(head, head), attr)
        if not found:
            out.append(token)
    return out


def test_every_file_the_doc_names_exists():
    assert not missing_files(DOC.read_text())


def test_every_function_and_class_the_doc_names_exists():
    modules, classes = index(REPO / "vmp")
    modules = {**modules, **index(REPO / "models")[0]}
    assert not missing_names(DOC.read_text(), modules, classes)


@pytest.mark.parametrize("text", ["`engine._plus`", "`Engine.nothing_here`", "`observed.no_such`",
                                  "`vmp/inference/executor_gone.py`"])
def test_the_checks_see_a_stale_name(text):
    modules, classes = index(REPO / "vmp")
    assert missing_files(text) or missing_names(text, modules, classes)
