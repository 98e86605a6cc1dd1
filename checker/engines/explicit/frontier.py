"""A frontier kept in a file while it is expanded, as TLC keeps its queue on disk.

A level's states are read twice after they are found: chunk by chunk when they
are expanded, and by parent windows when the next level's words are rebuilt
from its keys (`bfs._rebuild_words`). Neither needs the whole frontier in
memory at once, yet an array holds it there until the next level has joined
the visited set, the moment of the search's peak. `SpilledColumns` writes the
words to an unnamed temporary file (deleted by the system when the search lets
go of it, even if the process dies), maps it read-only, and gives back the
pages the search has read each time it calls `release`: the page cache may
keep the file, but that memory is the system's to reclaim, not the search's.
"""

from __future__ import annotations

import mmap
import tempfile

import numpy as np

from checker.packing import U64


class SpilledColumns:
    """Equal-length uint64 columns, stored in a temporary file and mapped read-only
    (`columns` are NumPy arrays over the mapping)."""

    def __init__(self, columns: list[np.ndarray]):
        n = len(columns[0])
        with tempfile.TemporaryFile(prefix="ctmc-frontier-") as file:
            for column in columns:
                np.ascontiguousarray(column, dtype=U64).tofile(file)
            file.flush()
            # the mapping keeps the file alive once it is closed here
            self._map = mmap.mmap(file.fileno(), n * 8 * len(columns), access=mmap.ACCESS_READ)
        self.columns = [np.frombuffer(self._map, dtype=U64, count=n, offset=i * n * 8)
                        for i in range(len(columns))]

    def release(self) -> None:
        """Give the pages read so far back: they are read from the file again if needed."""
        if hasattr(mmap, "MADV_DONTNEED"):  # not on Windows: the system pages them out
            self._map.madvise(mmap.MADV_DONTNEED)
