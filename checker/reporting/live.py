"""Progress on stderr while the work goes on: plain lines; on a terminal, dim lines
under which a spinner says the work goes on and how long since the last line (rich's
live display). Stopped before the results print, so they never interleave."""

from __future__ import annotations

import threading
import time
from typing import Any

import click

from checker.reporting.console import Console


class ProgressDisplay:
    """A `progress` callback for the engines (`checker.progress`)."""

    def __init__(self) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.status: Any = None
        self.last = 0.0

    def __call__(self, line: str) -> None:
        if not self.console.is_terminal:
            click.echo(line, err=True)
            return
        self.console.print(line, style="dim", markup=False)
        self.last = time.monotonic()
        if self.status is None:
            self.status = self.console.status(self._since(), spinner="dots")
            self.status.start()
            threading.Thread(target=self._tick, daemon=True).start()

    def _since(self) -> str:
        return f"working ({time.monotonic() - self.last:.0f} s since the last report)"

    def _tick(self) -> None:
        while self.status is not None:
            self.status.update(self._since())
            time.sleep(0.5)

    def stop(self) -> None:
        status, self.status = self.status, None
        if status is not None:
            status.stop()
