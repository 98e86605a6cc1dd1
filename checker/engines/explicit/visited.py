"""Deduplication with sorted arrays: where BFS decides a state is new.

No Python loop per state: a batch's fingerprints are sorted once, equal runs
collapse to one entry keeping the smallest generation key (the canonical
predecessor), and membership in the visited set is a binary search of sorted
queries in a sorted array.
"""

from __future__ import annotations

import numpy as np


def unique_min(fps: np.ndarray, gen: np.ndarray, runs: bool = False
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct fingerprints, the smallest generation key of each, and a
    row index holding that fingerprint. `runs`: the input is a few sorted runs,
    which timsort merges in near-linear time."""
    if len(fps) == 0:
        return fps, gen, np.empty(0, dtype=np.int64)
    order = np.argsort(fps, kind="stable" if runs else "quicksort")
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


def unique_min_hashed(fps: np.ndarray, gen: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`unique_min` for hashed fingerprints of one batch, where each transition's
    generation key is distinct; None when it cannot decide (then use argsort).

    The key (relative to the batch's smallest) goes in the low bits and the
    fingerprint's high bits above it, so one plain sort groups the batch. Two
    different fingerprints that share those high bits would interleave; the
    full fingerprints are then not sorted, which is checked, and rare.
    """
    base = int(gen.min())
    span_bits = (int(gen.max()) - base).bit_length()
    if span_bits > 32:
        return None
    rel = (gen - base).astype(np.int64)
    row_of = np.empty(int(rel.max()) + 1, dtype=np.int64)
    row_of[rel] = np.arange(len(gen))
    shift = np.uint64(span_bits)
    key = ((fps >> shift) << shift) | rel.astype(np.uint64)
    key.sort()
    rows = row_of[(key & np.uint64((1 << span_bits) - 1)).astype(np.int64)]
    f = fps[rows]
    if len(f) > 1 and not (f[1:] >= f[:-1]).all():
        return None
    starts = np.flatnonzero(np.concatenate(([True], f[1:] != f[:-1])))
    first = rows[starts]
    return f[starts], gen[first], first


def sorted_hits(run: np.ndarray, sorted_fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted queries in a sorted run: each query's position in the run (clipped to
    its last entry), and whether the run holds it there. One binary search per query,
    each starting where the previous ended."""
    if not len(run):
        return np.zeros(len(sorted_fps), dtype=np.intp), np.zeros(len(sorted_fps), dtype=bool)
    pos = np.searchsorted(run, sorted_fps)
    np.minimum(pos, len(run) - 1, out=pos)
    return pos, run[pos] == sorted_fps


class VisitedSet:
    """Fingerprints of every state seen (8 bytes each), as sorted runs that
    partition the fingerprint range.

    A query or a merge touches only the runs its fingerprints fall in, and a
    run splits when it grows past `max_run`, so adding a level never copies the
    whole set: memory stays near 8 bytes a state instead of doubling per merge.
    """

    def __init__(self, initial: np.ndarray | None = None, max_run: int = 1 << 21):
        self.max_run = max_run
        self.runs: list[np.ndarray] = []
        self.starts = np.zeros(1, dtype=np.uint64)  # smallest fingerprint each run may hold
        if initial is not None and len(initial):
            self.runs = self._split(np.sort(initial))
        else:
            self.runs = [np.empty(0, dtype=np.uint64)]
        self._index()

    def __len__(self) -> int:
        return sum(len(r) for r in self.runs)

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.runs)

    def to_array(self) -> np.ndarray:
        return np.concatenate(self.runs)

    def _index(self) -> None:
        starts = [0] + [int(r[0]) for r in self.runs[1:]]
        self.starts = np.array(starts, dtype=np.uint64)

    def _split(self, run: np.ndarray) -> list[np.ndarray]:
        if len(run) <= self.max_run:
            return [run]
        half = self.max_run // 2
        return [run[i:i + half].copy() for i in range(0, len(run), half)]

    def _cuts(self, sorted_fps: np.ndarray) -> np.ndarray:
        """Index in `sorted_fps` where each run's share begins, plus the end."""
        inner = np.searchsorted(sorted_fps, self.starts[1:])
        return np.concatenate(([0], inner, [len(sorted_fps)]))

    def missing(self, sorted_fps: np.ndarray) -> np.ndarray:
        """Mask of the (sorted) queries not in the set."""
        out = np.ones(len(sorted_fps), dtype=bool)
        cuts = self._cuts(sorted_fps)
        for run, a, b in zip(self.runs, cuts[:-1], cuts[1:], strict=True):
            if a == b or not len(run):
                continue
            out[a:b] = ~sorted_hits(run, sorted_fps[a:b])[1]
        return out

    def add_sorted(self, new_fps: np.ndarray) -> None:
        """Merge sorted, absent fingerprints into the runs they fall in."""
        cuts = self._cuts(new_fps)
        runs: list[np.ndarray] = []
        for run, a, b in zip(self.runs, cuts[:-1], cuts[1:], strict=True):
            if a == b:
                runs.append(run)
                continue
            merged = np.concatenate((run, new_fps[a:b]))
            merged.sort(kind="stable")  # timsort: two sorted runs merge in linear time
            runs += self._split(merged)
        self.runs = runs
        self._index()


class LevelDedup:
    """The successors of one BFS level that may be new, in bounded memory.

    Each chunk's successors collapse to distinct fingerprints with their smallest
    generation key. When `budget` such candidates are pending they are merged and
    filtered against the visited set and against the survivors of earlier rounds
    (keeping the smaller key of a state found twice). Survivors are kept as
    disjoint sorted parts of geometrically decreasing size (merged like a binary
    counter), so a round searches few parts and never re-sorts much: memory
    stays near `budget` plus the level's genuinely new states.
    """

    def __init__(self, visited: VisitedSet, n_words: int, exact_bits: int | None,
                 budget: int = 1 << 20):
        self.visited = visited
        self.n_words = n_words
        self.exact_bits = exact_bits  # state bits when fingerprints are the states
        self.budget = budget
        self.pending: list[tuple[np.ndarray, np.ndarray, list[np.ndarray]]] = []
        self.pending_count = 0
        self.found: list[tuple[np.ndarray, np.ndarray, list[np.ndarray]]] = []

    def add(self, fps: np.ndarray, gen: np.ndarray, words: list[np.ndarray]) -> None:
        if len(fps):
            part = self._unique(fps, gen, words)
            self.pending.append(part)
            self.pending_count += len(part[0])
            if self.pending_count > self.budget:
                self._round()

    def result(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        """Sorted new fingerprints, their canonical generation keys, and their words."""
        self._round()
        while len(self.found) > 1:
            self._merge_last_two()
        if not self.found:
            empty = np.empty(0, dtype=np.uint64)
            return empty, np.empty(0, dtype=np.int64), [empty] * self.n_words
        return self.found.pop()

    def _merge_last_two(self) -> None:
        """Merge the two newest survivor parts (disjoint, each sorted) into one."""
        b, a = self.found.pop(), self.found.pop()
        fps = np.concatenate((a[0], b[0]))
        order = np.argsort(fps, kind="stable")  # timsort: two sorted runs, linear time
        gen = np.concatenate((a[1], b[1]))[order]
        words = [np.concatenate((a[2][w], b[2][w]))[order] for w in range(self.n_words)]
        del a, b
        self.found.append((fps[order], gen, words))

    def _unique(self, fps, gen, words, runs: bool = False):
        if self.exact_bits is not None:
            packed = unique_min_packed(fps, gen, self.exact_bits)
            if packed is not None:  # exact fingerprints are the states themselves
                return packed[0], packed[1], [packed[0]]
        found = None if runs or not len(fps) else unique_min_hashed(fps, gen)
        ufp, ugen, rows = found if found is not None else unique_min(fps, gen, runs)
        return ufp, ugen, [w[rows] for w in words]

    def _round(self) -> None:
        if not self.pending:
            return
        parts, self.pending, self.pending_count = self.pending, [], 0
        fps, gen, words = self._unique(
            np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            [np.concatenate([p[2][w] for p in parts]) for w in range(self.n_words)], runs=True)
        del parts
        keep = self.visited.missing(fps)
        for found_fps, found_gen, _ in self.found:
            if not len(found_fps):
                continue
            pos, hit = sorted_hits(found_fps, fps)
            hit &= keep
            found_gen[pos[hit]] = np.minimum(found_gen[pos[hit]], gen[hit])
            keep &= ~hit
        self.found.append((fps[keep], gen[keep], [w[keep] for w in words]))
        # keep parts of geometrically decreasing size, so a round searches O(log) parts
        while len(self.found) > 1 and 2 * len(self.found[-1][0]) >= len(self.found[-2][0]):
            self._merge_last_two()
