"""No code outside vmp/families/ asks which family a node has: what it needs is a method or an
attribute of the Family (``selects``, ``location``, ``scalable``, ``mean``, ``with_mean``,
``perturb``, ``describe``...), so a new family is one module and a registry line."""
from __future__ import annotations

import re
from pathlib import Path

import vmp
from vmp.families import ALL

ROOT = Path(vmp.__file__).parent
NAMES = "|".join(sorted({f.__name__ for f in ALL} | {f.name for f in ALL}))
#: ``x is fam.Gaussian``, ``family is not Categorical``, ``f == families.Wishart``, and the
#: tuple forms ``family in (fam.Gaussian, fam.Normal)``; ``GaussianARDFactor`` is not a family
SWITCH = re.compile(
    rf"((\bis not\b|\bis\b|==|!=)\s*(fam_?\.|families\.)?({NAMES})\b(?!\w))"
    rf"|(\bin\s*[\(\[\{{][^\)\]\}}]*\b(fam_?\.|families\.)?({NAMES})\b(?!\w)[^\)\]\}}]*[\)\]\}}])"
    rf"|(\.name\s*(==|!=)\s*['\"]({NAMES})['\"])"
)


DECLARATION = re.compile(r"^\s*family\s*=[^=]")  # a node class's ``family = fam.Gaussian``


def switches(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if SWITCH.search(line) and not DECLARATION.match(line)]


def test_the_pattern_finds_switches():
    for line in ("if node.family is fam.Dirichlet:", "if f is Categorical:", "x.family is not fam.Gamma",
                 "if p.family in (fam.Gaussian, fam.Normal):", "if family == families.Wishart:",
                 "if node.family.name == 'Gamma':"):
        assert switches(line), line
    for line in ("family = fam.Gaussian", "if self.factor_cls is GaussianARDFactor:",
                 "if key.family.selects:", "if value.family is not family:"):
        assert not switches(line), line


def test_no_family_switch_outside_families():
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent.name == "families" and path.parent.parent == ROOT:
            continue
        hits = switches(path.read_text())
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert not found, f"family switches outside vmp/families/ (give the Family a method instead): {found}"
