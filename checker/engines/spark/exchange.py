"""How a level's successors move from expand tasks to dedupe tasks: files, not Spark rows.

Each expand task writes one file with its successors grouped by target bucket:

    DIR/exchange/level=K/from-T.u64     uint64 words:
        [buckets + 1 row offsets] [fp column] [word columns...] [parent column] [action column]

and a dedupe task reads its bucket's rows from every expand task's file (one
range per column). The rows never go through pickling, a socket to the JVM
or Spark's shuffle files: measured on the tracker bench model, that path cost
more core-time than computing the successors (decision 0013). Spark still
orders the two stages and retries tasks: a retried expand task rewrites the same
bytes under the same name (atomically), and a reader that opened the old file
keeps reading it. The driver deletes a level's folder once the level is
recorded; resume deletes any left over.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checker.engines.durable import write_bytes
from checker.engines.spark import visited_runs
from checker.packing import U64

EXCHANGE = "exchange"


def folder(root: Path, level: int) -> Path:
    return root / EXCHANGE / f"level={level}"


def _file(root: Path, level: int, task: int) -> Path:
    return folder(root, level) / f"from-{task:05d}.u64"


def write(root: Path, level: int, task: int, buckets: int, columns: list[np.ndarray]) -> int:
    """Write task `task`'s rows (equal-length uint64 `columns`, the first holding
    fingerprints) for level `level`, grouped by target bucket; returns the bytes."""
    offsets, order = bucket_order(columns[0], buckets)
    n = len(order)
    data = np.empty(len(offsets) + len(columns) * n, dtype="<u8")
    data[:len(offsets)] = offsets
    at = len(offsets)
    for column in columns:
        np.take(column, order, out=data[at:at + n])
        at += n
    path = _file(root, level, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, data.data.cast("B"), sync=False)  # a crash redoes the level
    return data.nbytes


def bucket_order(fps: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """The order that groups rows by the bucket of their fingerprint `fps`, each
    bucket's rows in their order, and where each bucket starts in it: bucket B's rows
    are `order[offsets[B]:offsets[B + 1]]`."""
    targets = visited_runs.bucket_of(fps, buckets).astype(np.uint16)
    order = np.argsort(targets, kind="stable")  # a radix sort; each bucket stays sorted
    offsets = np.searchsorted(targets[order], np.arange(buckets + 1)).astype(U64)
    return offsets, order


def read(root: Path, level: int, tasks: int, buckets: int, bucket: int, n_columns: int
         ) -> list[np.ndarray]:
    """Bucket `bucket`'s rows from every task's file: `n_columns` uint64 columns, each
    the concatenation of the tasks' shares (each share sorted by fingerprint). Only
    those rows are read: a task's memory holds its buckets, not the whole exchange."""
    parts: list[list[np.ndarray]] = [[] for _ in range(n_columns)]
    for task in range(tasks):
        with open(_file(root, level, task), "rb") as f:
            offsets = np.fromfile(f, dtype="<u8", count=buckets + 1)
            rows = int(offsets[-1])
            lo, hi = int(offsets[bucket]), int(offsets[bucket + 1])
            for c in range(n_columns):
                f.seek(8 * (buckets + 1 + c * rows + lo))
                parts[c].append(np.fromfile(f, dtype="<u8", count=hi - lo))
    return [np.concatenate(p) if p else np.empty(0, dtype=U64) for p in parts]
