"""How a level's successors move from expand tasks to dedupe tasks: files, not Spark rows.

Each expand task writes one file with its successors grouped by target bucket:

    DIR/exchange/level=K/from-T.u64
        [buckets + 1 row offsets] [word columns] [parent column]   (uint64 each)
        [action column]   (uint16; uint32 past 65,536 actions)

With exact fingerprints the one word is the fingerprint; hashed ones are left out,
as the reader hashes the words again. A dedupe task reads its bucket's rows from
every expand task's file (one range per column). The rows never go through
pickling, a socket to the JVM or Spark's shuffle files: measured on the tracker
bench model, that path cost more core-time than computing the successors (decision
0013). Spark still orders the two stages and retries tasks: a retried expand task
rewrites the same bytes under the same name (atomically), and a reader that opened
the old file keeps reading it. The driver deletes a level's folder once the level is
recorded; resume deletes any left over.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checker.engines.durable import write_bytes
from checker.engines.explicit.records import action_dtype
from checker.engines.spark import visited_runs
from checker.packing import U64, Layout

EXCHANGE = "exchange"


def folder(root: Path, level: int) -> Path:
    return root / EXCHANGE / f"level={level}"


def _file(root: Path, level: int, task: int) -> Path:
    return folder(root, level) / f"from-{task:05d}.u64"


def write(root: Path, level: int, task: int, buckets: int, rows: list[np.ndarray],
          layout: Layout, n_actions: int) -> int:
    """Write task `task`'s rows for level `level` (`_file_columns` of `rows`: fingerprint,
    words unless exact, parent, action; sorted by fingerprint), grouped by target
    bucket; returns the bytes."""
    offsets, order = grouping(rows[0], buckets, layout.exact)
    stored = _file_columns(rows, layout.exact, n_actions)
    parts = [offsets, *(stored if order is None else (np.take(c, order) for c in stored))]
    path = _file(root, level, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    views = [np.ascontiguousarray(p, dtype=p.dtype.newbyteorder("<")).data.cast("B")
             for p in parts]
    write_bytes(path, views, sync=False)  # a crash redoes the level
    return sum(len(v) for v in views)


def _file_columns(rows: list[np.ndarray], exact: bool, n_actions: int) -> list[np.ndarray]:
    """What a file keeps of each row: not a hashed fingerprint (the reader hashes the
    words again, which costs less than writing and reading its 8 bytes: the exchange is
    a level's largest write), and the action in 2 bytes (4 past 65,536 actions)."""
    kept = rows if exact else rows[1:]
    return [*kept[:-1], kept[-1].astype(action_dtype(n_actions))]


def grouping(fps: np.ndarray, buckets: int, exact: bool
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Where each bucket's rows start among rows ordered by the bucket of their
    fingerprints `fps`, and the order that groups them so (each bucket's rows in their
    order), or None when they are grouped already: hashed fingerprints, sorted, are in
    bucket order (`bucket_of`), which saves gathering every column (on the billion
    model, that gather cost a tenth of a level's CPU)."""
    targets = visited_runs.bucket_of(fps, buckets, exact)
    order = None
    if len(targets) > 1 and (targets[1:] < targets[:-1]).any():
        order = np.argsort(targets.astype(np.uint16), kind="stable")  # a radix sort
        targets = targets[order]
    return np.searchsorted(targets, np.arange(buckets + 1)).astype(U64), order


def read(root: Path, level: int, tasks: int, buckets: int, bucket: int, layout: Layout,
         n_actions: int) -> list[np.ndarray]:
    """Bucket `bucket`'s rows from every task's file, as `write` was given them
    (fingerprint, words unless exact, parent, action: uint64 columns), each column the
    concatenation of the tasks' shares (each share sorted by fingerprint). Only those
    rows are read: a task's memory holds its buckets, not the whole exchange."""
    dtypes = [np.dtype("<u8")] * ((1 if layout.exact else layout.n_words) + 1)
    dtypes.append(np.dtype(action_dtype(n_actions)).newbyteorder("<"))
    parts: list[list[np.ndarray]] = [[] for _ in dtypes]
    for task in range(tasks):
        with open(_file(root, level, task), "rb") as f:
            offsets = np.fromfile(f, dtype="<u8", count=buckets + 1)
            rows = int(offsets[-1])
            lo, hi = int(offsets[bucket]), int(offsets[bucket + 1])
            at = 8 * (buckets + 1)  # where the column starts
            for part, dtype in zip(parts, dtypes, strict=True):
                f.seek(at + dtype.itemsize * lo)
                part.append(np.fromfile(f, dtype=dtype, count=hi - lo))
                at += dtype.itemsize * rows
    columns = [np.concatenate(p) if p else np.empty(0, dtype=d)
               for p, d in zip(parts, dtypes, strict=True)]
    columns[-1] = columns[-1].astype(U64)
    return columns if layout.exact else [layout.fingerprints(columns[:-2]), *columns]
