"""Progress reports for long work: a line at least every two seconds, whatever the work.

Engines are handed a `progress` callable (a line of text; None for quiet runs). Work
that returns to Python often counts itself with a `Ticker`; work that sits inside one
long call (a Z3 check, a Spark job) is watched by a `Heartbeat`, whose thread reports
the current status and the seconds spent while the call runs: Z3's and py4j's calls
release the interpreter lock, so the thread gets to speak.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

PROGRESS_SECONDS = 2.0

Progress = Callable[[str], None]


class Ticker:
    """Calls `progress(describe(count))` at most every PROGRESS_SECONDS as work is counted."""

    def __init__(self, progress: Progress | None, describe: Callable[[int], str]):
        self.progress, self.describe = progress, describe
        self.count = 0
        self.last = time.monotonic()

    def tick(self) -> None:
        self.count += 1
        if self.progress is not None and time.monotonic() - self.last >= PROGRESS_SECONDS:
            self.last = time.monotonic()
            self.progress(self.describe(self.count))


class Heartbeat:
    """While the `with` body runs, reports `status` (a string, or a callable giving one)
    and the seconds since the body began, every PROGRESS_SECONDS, from a thread."""

    def __init__(self, progress: Progress | None, status: str | Callable[[], str]):
        self.progress = progress
        self.status = status
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = time.monotonic()

    def set(self, status: str | Callable[[], str]) -> None:
        """What the work is doing now (the next report says it)."""
        self.status = status

    def __enter__(self) -> Heartbeat:
        self.started = time.monotonic()
        if self.progress is not None:
            self._thread = threading.Thread(target=self._beat, daemon=True,
                                            name="ctmc-heartbeat")
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        assert self.progress is not None
        while not self._stop.wait(PROGRESS_SECONDS):
            status = self.status() if callable(self.status) else self.status
            try:
                self.progress(f"{status} ({time.monotonic() - self.started:,.0f} s)")
            except Exception:  # noqa: BLE001 - a report must never stop the work it reports
                return
