"""A tqdm progress bar for long fits: on when stderr is a terminal, off with progress=False."""
from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, enabled: bool | None, desc: str):
        if enabled is None:
            enabled = sys.stderr.isatty() and total >= 20
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, leave=False)

    def update(self, elbo: float | None = None) -> None:
        if self.bar is not None:
            self.bar.update(1)
            if elbo is not None:
                self.bar.set_postfix(elbo=f"{elbo:.6g}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
