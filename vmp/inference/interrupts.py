"""Signals during a fit: Ctrl-C or SIGTERM ends the loop after the current step, so the state
stays consistent and a checkpoint can be written."""
from __future__ import annotations

import contextlib
import signal
import threading


class Interrupts:
    """Ctrl-C (SIGINT) and SIGTERM end the loop after the current step; a second Ctrl-C
    interrupts at once, except while :meth:`held`. Outside the main thread a KeyboardInterrupt is caught instead."""

    def __init__(self):
        self.requested = False
        self.holding = False
        self._saved = {}

    def _handler(self, signum, frame):
        if self.requested and signum == signal.SIGINT and not self.holding:
            raise KeyboardInterrupt
        self.requested = True

    @contextlib.contextmanager
    def held(self):
        """While held (the last checkpoint's write) a second Ctrl-C is only recorded."""
        self.holding = True
        try:
            yield self
        finally:
            self.holding = False

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, kind, value, tb):
        for sig, old in self._saved.items():
            signal.signal(sig, old)
        if kind is KeyboardInterrupt:
            self.requested = True
            return True
        return False
