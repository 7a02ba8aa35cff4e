"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace (a later block may use what an earlier one
declared), in a temporary directory. A block whose first line is ``# slow: ...`` is skipped unless
VMP_SLOW_DOCS=1 is set.
"""
import linecache
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number, source) of each ```python block of a Markdown file."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in BLOCK.finditer(text)]


@pytest.mark.filterwarnings("error::vmp.ConvergenceWarning")  # a doc example a user copies converges
@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for line, source in python_blocks(path):
        if source.startswith("# slow:") and not os.environ.get("VMP_SLOW_DOCS"):
            continue
        name = f"{path.name}, block at line {line}"
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # tracebacks
        code = compile(source, name, "exec")
        exec(code, namespace)  # noqa: S102 - the documentation's own examples


def test_the_blocks_are_found():
    blocks = python_blocks(ROOT / "docs" / "getting-started.md")
    assert len(blocks) >= 5 and blocks[0][1].startswith("import numpy")
