"""A wall-clock limit on Python code that cannot be asked to stop.

A spec's own code runs while its module is imported and its machine is built; a loop
there never reaches the checks an engine makes against `--timeout`. `time_limit`
arms a timer whose signal raises `TimeLimitReached` wherever that code is, and which
the spec's code cannot catch by accident: it derives from BaseException, as
KeyboardInterrupt does, not from Exception.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class TimeLimitReached(BaseException):
    """The limit passed while the guarded code ran."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise TimeLimitReached in the `with` body once `seconds` have passed (None: no
    limit). Only the main thread can take the signal: elsewhere the body just runs."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimitReached

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
