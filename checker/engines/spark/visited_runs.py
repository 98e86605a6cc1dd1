"""The visited set of a Spark run, on disk: per bucket, a few sorted runs of fingerprints.

States are split into buckets by range of their (spread) fingerprint (`bucket_of`). Each
bucket's visited fingerprints are raw little-endian uint64 files, each sorted and
each covering a range of levels:

    DIR/visited/bucket=B/L{lo}-{hi}.u64

The runs after levels 0..K follow a binary counter on K+1 (`schedule`): sizes in
levels are distinct powers of two, largest first. Adding level K+1 merges the
trailing runs with the new level's fingerprints into one run, as incrementing a
binary counter carries. So a bucket never holds more than log2(levels)+1 runs, a
membership test is a few binary searches of sorted queries, and each fingerprint
is rewritten about log2(levels) times over a run.

The task that writes a merged run never deletes the runs it replaces: a retried
task must find its inputs again. The driver deletes them once the level is
recorded (`superseded`), and resume deletes whatever a killed run left over.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checker.engines.durable import write_bytes_to_sync
from checker.engines.explicit.visited import sorted_hits
from checker.packing import U64, fingerprint_ranges

VISITED = "visited"


def bucket_of(fps: np.ndarray, buckets: int, exact: bool) -> np.ndarray:
    """Each fingerprint's bucket: which of `buckets` equal ranges it falls in
    (`fingerprint_ranges`). With hashed fingerprints, fingerprint order is bucket order,
    so a task's sorted rows need no regrouping (exchange.grouping)."""
    return fingerprint_ranges(fps, buckets, exact).astype(np.int64)


def schedule(levels: int) -> list[tuple[int, int]]:
    """The runs (first level, last level) covering levels 0..levels-1."""
    runs = []
    lo = 0
    for bit in reversed(range(levels.bit_length())):
        size = 1 << bit
        if levels & size:
            runs.append((lo, lo + size - 1))
            lo += size
    return runs


def superseded(levels: int) -> list[tuple[int, int]]:
    """Runs of the schedule for `levels - 1` levels that the one for `levels` replaced."""
    now = set(schedule(levels))
    return [r for r in schedule(levels - 1) if r not in now]


def run_name(run: tuple[int, int]) -> str:
    return f"L{run[0]}-{run[1]}.u64"


def bucket_folder(root: Path, bucket: int) -> Path:
    return root / VISITED / f"bucket={bucket:05d}"


SMALL_RUN = 1 << 20  # bytes; a smaller run is read whole, as mapping it costs more


def read_run(path: Path) -> np.ndarray:
    """A run, memory-mapped: a binary search touches only the pages it needs. A small
    run (most of them, early in a search) is read whole."""
    size = path.stat().st_size
    if size < SMALL_RUN:
        return np.fromfile(path, dtype="<u8") if size else np.empty(0, dtype=U64)
    return np.memmap(path, dtype="<u8", mode="r")


def known(runs: list[np.ndarray], sorted_fps: np.ndarray) -> np.ndarray:
    """Mask of the (sorted) fingerprints present in any of `runs`."""
    hit = np.zeros(len(sorted_fps), dtype=bool)
    for run in runs:
        hit |= sorted_hits(run, sorted_fps)[1]
    return hit


def add_level(root: Path, bucket: int, level: int, new_fps: np.ndarray,
              unsynced: list[Path] | None = None) -> tuple[str, int]:
    """Write the run that ends at `level` for `bucket`: the runs it replaces, merged
    with the sorted new fingerprints. Returns its name and size in bytes. With
    `unsynced`, the run is not synced but its path is added there (to sync later)."""
    folder = bucket_folder(root, bucket)
    folder.mkdir(parents=True, exist_ok=True)
    last = schedule(level + 1)[-1]
    merged = [read_run(folder / run_name(r)) for r in superseded(level + 1)]
    if merged:
        data = np.concatenate([*merged, new_fps])
        data.sort(kind="stable")  # timsort: a few sorted runs merge in near-linear time
    else:
        data = new_fps
    data = np.ascontiguousarray(data, dtype="<u8")
    write_bytes_to_sync(folder / run_name(last), data.data.cast("B"), unsynced)
    return run_name(last), data.nbytes
