"""Every shell command the documentation quotes names a script that exists and flags it accepts.

The commands are read from README.md and docs/*.md (inline code spans and indented lines, outside
the ```python blocks that tests/test_docs.py runs) and from each examples/*.py and benchmarks/*.py
docstring's usage lines. A script's flags are those of its own argparse parser, got by running this
file as a script: it runs each script as ``__main__`` with ``parse_args`` patched to stop there, so
nothing is fitted. The ``vmp`` command's flags come from ``vmp.cli.make_parser()``.
"""
import argparse
import ast
import json
import re
import runpy
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from vmp.cli import make_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FOLDERS = ("examples", "benchmarks")
SCRIPTS = sorted(path for folder in FOLDERS for path in (ROOT / folder).glob("*.py"))
FENCED = re.compile(r"^\s*```python\n.*?^\s*```", re.S | re.M)
SPAN = re.compile(r"`([^`]+)`")
SCRIPT = re.compile(r"python\s+((?:examples|benchmarks)/\w+)\.py((?:[ \t\n]+(?![#(]|python )[^\s`]+)*)")
VMP = re.compile(r"(?:^|[\s/])vmp (fit|demo|render|summary)((?:[ \t\n]+(?![#(])[^\s`]+)*)")
FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def doc_texts() -> list[tuple[str, str]]:
    """(where, text) of each code span and indented line of the docs, and each script's docstring."""
    texts = []
    for path in DOCS:
        text = FENCED.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
        for m in SPAN.finditer(text):
            texts.append((f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)))
        lines = text.splitlines()
        for n, line in enumerate(lines):
            if line.startswith("    ") and not (n and lines[n - 1].endswith("\\")):
                where, more = f"{path.name}:{n + 1}", iter(lines[n + 1:])
                while line.endswith("\\"):  # a shell continuation
                    line = line[:-1] + next(more, "")
                texts.append((where, line))
    for path in SCRIPTS:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        texts.append((f"{path.parent.name}/{path.name} (docstring)", doc))
    return texts


def commands() -> list[tuple[str, str, str, set[str]]]:
    """(where, program, command, flags): program is a script's folder/name or 'vmp <subcommand>'."""
    found = []
    for where, text in doc_texts():
        for m in SCRIPT.finditer(text):
            found.append((where, m.group(1), " ".join(m.group(0).split()), set(FLAG.findall(m.group(2)))))
        for m in VMP.finditer(text):
            found.append((where, f"vmp {m.group(1)}", " ".join(m.group(0).split()), set(FLAG.findall(m.group(2)))))
    return found


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


def _stop(parser, *args, **kwargs):
    raise _Parsed(parser)


def parsers(root: Path) -> dict[str, list[str] | None]:
    """{folder/script: its option strings, or None when it builds no parser}, each script of the
    FOLDERS run as __main__ until its parser parses."""
    argparse.ArgumentParser.parse_args = argparse.ArgumentParser.parse_known_args = _stop
    found = {}
    for path in sorted(path for folder in FOLDERS for path in (root / folder).glob("[!_]*.py")):
        name = f"{path.parent.name}/{path.stem}"
        found[name] = None
        if "ArgumentParser" in path.read_text():
            sys.argv, sys.path[0] = [str(path)], str(path.parent)  # as `python path` sets them
            try:
                runpy.run_path(str(path), run_name="__main__")
            except _Parsed as parsed:
                found[name] = sorted(s for action in parsed.parser._actions for s in action.option_strings)
    return found


@cache
def script_options() -> dict[str, list[str] | None]:
    """parsers() of the FOLDERS, in a fresh interpreter (the scripts import and set up as they do when run)."""
    run = subprocess.run([sys.executable, __file__, str(ROOT)], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120)
    return json.loads(run.stdout.splitlines()[-1])


@cache
def vmp_options(command: str) -> frozenset[str]:
    sub = next(a for a in make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return frozenset(s for action in sub.choices[command]._actions for s in action.option_strings)


CASES = commands()


def test_the_commands_are_found():
    programs = {program for _, program, _, _ in CASES}
    assert len(CASES) > 50 and {"benchmarks/bench_mixture", "benchmarks/paquet_fig2", "vmp fit", "vmp demo"} <= programs
    assert any(flags == {"--k", "--only"} for _, p, _, flags in CASES
               if p == "benchmarks/bench_bmf_movielens")


@pytest.mark.parametrize("where, program, command, flags", CASES, ids=[f"{c[0]}: {c[2]}"[:90] for c in CASES])
def test_a_quoted_command_names_a_script_and_flags_that_exist(where, program, command, flags):
    if program.startswith("vmp "):
        options = vmp_options(program.split()[1])
    else:
        assert (ROOT / f"{program}.py").exists(), f"{where}: {command}: no {program}.py"
        options = script_options()[program]
        assert options is not None, f"{where}: {program}.py has no argparse parser: --help would run it"
    assert flags <= set(options), f"{where}: {command}: {sorted(flags - options)} not among {sorted(options)}"


@pytest.mark.parametrize("path", [p for p in SCRIPTS if not p.name.startswith("_")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_script_answers_help_without_running(path):
    name = f"{path.parent.name}/{path.stem}"
    assert script_options()[name] is not None, f"{name}.py: no argparse parser"


def test_every_example_is_listed_in_the_readme():
    """examples/ holds what a user runs, each named in README.md's list; benchmarks are in benchmarks/."""
    readme = (ROOT / "README.md").read_text()
    benchmarks = [p.name for p in SCRIPTS if p.parent.name == "examples" and p.name.startswith("bench_")]
    assert not benchmarks, f"move to benchmarks/ (and add a line to benchmarks/_registry.py): {benchmarks}"
    missing = [p.name for p in SCRIPTS if p.parent.name == "examples" and not p.name.startswith("_")
               and f"`{p.name}`" not in readme]
    assert not missing, f"examples not listed in README.md: {missing}"


if __name__ == "__main__":
    print(json.dumps(parsers(Path(sys.argv[1]))))
