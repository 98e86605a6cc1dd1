"""What an engine's forked worker process does first, and how its end is told.

Both the explicit engine's BFS workers and the prover's goal workers are forked
children that report to one coordinator: the coordinator alone answers Ctrl-C (it
ends the workers), and a worker must not outlive it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from multiprocessing.process import BaseProcess


def start_worker(coordinator: int) -> None:
    """In a freshly forked worker: leave SIGINT and SIGTERM to the coordinator, die with
    it (Linux's PR_SET_PDEATHSIG), and end at once if it is already gone."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):  # Linux only
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != coordinator:
        os._exit(1)


def how_it_ended(process: BaseProcess) -> str:
    """How a worker that went away ended, as a clause ("was killed by SIGKILL",
    "exited with status 1"), after waiting up to a second for its exit status."""
    process.join(1.0)
    code = process.exitcode
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return "ended" if code is None else f"exited with status {code}"
