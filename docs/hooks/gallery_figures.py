"""MkDocs hook: a gallery page must show every figure its script draws, or the build fails.

A figure cell is a code cell (``# %%``) that calls ``plt.show()`` or ends in ``result.plot()``; each
must leave at least one PNG image in the built page.
"""
from __future__ import annotations

import pathlib

from mkdocs.exceptions import PluginError


def figure_cells(source: str) -> int:
    code = [cell for cell in source.split("# %%")[1:] if not cell.startswith(" [markdown]")]
    return sum("plt.show()" in cell or cell.rstrip().split("\n")[-1].startswith("result.plot()") for cell in code)


def on_post_page(output: str, page, config) -> str:
    if not page.file.src_uri.startswith("gallery/"):
        return output
    wanted = figure_cells(pathlib.Path(page.file.abs_src_path).read_text())
    shown = output.count('src="data:image/png;base64,')
    if shown < max(wanted, 1):
        raise PluginError(f"{page.file.src_uri}: {shown} figures in the built page, {wanted} figure cells in the script")
    return output
