"""Giving the memory a level freed back to the system, a few times a level.

A level allocates and frees arrays of every size: each chunk's temporaries, the
level's fingerprints, keys and words, re-encoded visited-set segments. glibc keeps
freed blocks inside its heap for reuse, and the pages of those it cannot reuse
(a block too small for the next array, or pinned between live ones) stay
resident: on the largest bench model they were a third on top of what the search
held at its peak (decision 0018). `malloc_trim(0)` hands them back (a page
reused later faults in as zeros), in a few milliseconds, so the search calls it
at the phases of a level where the next allocations are big, not per chunk,
where refaulting would cost more than it saves. Without glibc it does nothing.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl)
        return None


_TRIM = _malloc_trim()


def give_back_freed_memory() -> None:
    """Return the heap's free pages to the system, where the C library can."""
    if _TRIM is not None:
        _TRIM(0)
