"""Error kinds the CLI turns into one clear line and an exit code."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable


class CheckerError(Exception):
    """Base class: a problem the user can fix (exit code 2)."""


class SpecError(CheckerError):
    """A spec that cannot be built: bad types, Python control flow on symbols, ..."""


class ModelError(CheckerError):
    """A model file or parameter override that is malformed or names unknown things."""


class TraceError(CheckerError):
    """A trace file that does not parse or does not replay."""


class EvalError(CheckerError):
    """A reachable state where an action reads out of range or assigns outside a type."""

    def __init__(self, message: str, state_index: int | None = None, action: int | None = None):
        super().__init__(message)
        self.state_index = state_index
        self.action = action


def did_you_mean(name: str, known: Iterable[object]) -> str:
    """`; did you mean 'x'?` for the closest known name, or nothing: one line a user
    can act on, instead of a list to read through."""
    close = difflib.get_close_matches(name, [str(k) for k in known], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def shown_path(path: object, width: int = 80) -> str:
    """A file name as an error line shows it: cut in the middle when it is absurdly long
    (a 5,000-character name would otherwise be the whole line)."""
    text = os.fsdecode(path) if isinstance(path, bytes | str | os.PathLike) else str(path)
    return text if len(text) <= width else f"{text[:width // 2]}...{text[-width // 4:]}"
