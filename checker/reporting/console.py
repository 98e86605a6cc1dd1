"""The terminal every report prints to, ending quietly when its reader goes away.

`ctmc check ... | head` closes standard output early. Rich's console answers the
broken pipe with exit code 1, which ctmc's callers read as "a property is violated";
this one ends with 141, as a shell reports a process that SIGPIPE stopped.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import rich.console

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


def reader_gone() -> NoReturn:
    """End now, saying nothing: standard output's reader has gone. Standard output is
    pointed at /dev/null first, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(EXIT_BROKEN_PIPE)


class Console(rich.console.Console):
    """rich's Console, with `reader_gone` for a broken pipe."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        reader_gone()
