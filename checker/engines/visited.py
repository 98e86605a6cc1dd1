"""Deduplication with sorted arrays: where BFS decides a state is new.

No Python loop per state: a batch's fingerprints are sorted once, equal runs
collapse to one entry keeping the smallest generation key (the canonical
predecessor), and membership in the visited set is a binary search of sorted
queries in a sorted array.
"""

from __future__ import annotations

import numpy as np


def unique_min(fps: np.ndarray, gen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct fingerprints, the smallest generation key of each, and a
    row index holding that fingerprint."""
    if len(fps) == 0:
        return fps, gen, np.empty(0, dtype=np.int64)
    order = np.argsort(fps)
    f = fps[order]
    starts = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
    return f[starts], np.minimum.reduceat(gen[order], starts), order[starts]


def unique_min_packed(fps: np.ndarray, gen: np.ndarray, state_bits: int
                      ) -> tuple[np.ndarray, np.ndarray] | None:
    """`unique_min` for exact fingerprints with spare bits, or None if there are none.

    The generation key (relative to the batch's smallest) rides in the low bits
    of one uint64, so a plain sort (much faster than argsort) orders by
    fingerprint and then key, and the first of each run is the canonical one.
    """
    if len(fps) == 0:
        return fps, gen
    base = int(gen.min())
    span_bits = (int(gen.max()) - base).bit_length()
    if state_bits + span_bits > 64:
        return None
    shift = np.uint64(span_bits)
    key = (fps << shift) | (gen - base).astype(np.uint64)
    key.sort()
    f = key >> shift
    starts = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
    low = key[starts] & np.uint64((1 << span_bits) - 1)
    return f[starts], low.astype(np.int64) + base


class VisitedSet:
    """Fingerprints of every state seen, as one sorted uint64 array (8 bytes each)."""

    def __init__(self, initial: np.ndarray | None = None):
        self.fps = np.sort(initial) if initial is not None else np.empty(0, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.fps)

    @property
    def nbytes(self) -> int:
        return self.fps.nbytes

    def missing(self, sorted_fps: np.ndarray) -> np.ndarray:
        """Mask of the (sorted) queries not in the set."""
        if len(self.fps) == 0 or len(sorted_fps) == 0:
            return np.ones(len(sorted_fps), dtype=bool)
        pos = np.searchsorted(self.fps, sorted_fps)
        np.minimum(pos, len(self.fps) - 1, out=pos)
        return self.fps[pos] != sorted_fps

    def add_sorted(self, new_fps: np.ndarray) -> None:
        """Merge sorted, absent fingerprints (timsort merges the two runs in linear time)."""
        merged = np.concatenate((self.fps, new_fps))
        self.fps = None  # type: ignore[assignment]  # free the old array before sorting
        merged.sort(kind="stable")
        self.fps = merged
