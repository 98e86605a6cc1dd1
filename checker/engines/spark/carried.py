"""The shuffle exchange: a Spark run whose executors share no directory with the driver.

With `--exchange files` every executor reads and writes the run directory
(`exchange.py`, `visited_runs.py`). Here nothing is shared but what Spark moves:

- each bucket's visited fingerprints (one sorted array) and its newest level live
  in one element of an RDD, persisted in the executors' block stores (memory,
  spilling to their local disks); each partition holds a range of buckets, and the
  run adds partitions (moving the buckets once) as its levels grow;
- a level's successors go from expand tasks to dedupe tasks through Spark's own
  shuffle, one NumPy block per (expand task, target bucket);
- the next level's RDD is the union of the carried one and the shuffled successors:
  both have the same partitioner, so Spark zips them partition by partition
  (`PartitionerAwareUnionRDD`) and the visited set never moves;
- each bucket's new states come back to the driver as a Parquet file's bytes (with
  the task's summaries, in an accumulator), and the driver writes the level into the
  run directory, which only it needs to see.

An executor lost mid-run costs recomputation, not correctness: every step is
deterministic, so Spark rebuilds the lost partitions from their lineage. A driver
lost mid-run resumes from its run directory: the driver rebuilds the carried RDD
from the recorded levels (`resumed`). Decision 0028 says why this design.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from pyspark import RDD, SparkContext, StorageLevel
from pyspark.accumulators import Accumulator, AccumulatorParam

from checker.engines.explicit.successors import Kernel
from checker.engines.explicit.visited import sorted_hits
from checker.engines.spark import exchange
from checker.engines.spark.levels import (
    DedupeSummary,
    ExpandSummary,
    LevelTask,
    States,
    concat,
    dedupe_states,
    exchanged_states,
    expand_states,
    kernel_for,
    level_bytes,
    maybe_fail,
    read_level,
)
from checker.engines.spark.run_dir import RunDir, level_file
from checker.errors import CheckerError
from checker.packing import U64

STATE, ROWS, EXPAND = "state", "rows", "expand"  # what an element of a bucket's partition is


@dataclass
class Bucket:
    """What Spark keeps of one bucket between levels."""

    visited: np.ndarray  # fingerprints of levels 0..K in this bucket, sorted
    frontier: States  # level K's states in this bucket, sorted by fingerprint


Report = tuple[DedupeSummary, list[ExpandSummary], bytes]  # a bucket's summaries, level file


class Reports(AccumulatorParam):
    """What the driver learns of a level, bucket by bucket: an accumulator, so that the
    job needs no second Python worker per task to read the buckets back from Spark's
    cache. A task recomputed (a lost executor) adds the same report again, which
    changes nothing."""

    def zero(self, value: dict[int, Report]) -> dict[int, Report]:
        return {}

    def addInPlace(self, a: dict[int, Report], b: dict[int, Report]) -> dict[int, Report]:
        a.update(b)
        return a


@dataclass(frozen=True)
class BucketRanges:
    """The partitioner of the carried RDDs: partition p holds a contiguous range of
    buckets, as `LevelTask.buckets_of(p)`. Spark compares partitioners by object
    identity, so a run makes one per partition count and keeps it."""

    buckets: int
    partitions: int

    def __call__(self, bucket: int) -> int:
        return ((bucket + 1) * self.partitions - 1) // self.buckets


# --- executors ----------------------------------------------------------------------------

def expand(task: LevelTask, index: int, items: Iterator[tuple[int, Any]]
           ) -> Iterator[tuple[int, tuple[str, Any]]]:
    """Expand the frontier of partition `index`'s buckets: one block of rows
    (n x columns, uint64) per target bucket, and the task's summary, routed to its
    first bucket's dedupe task."""
    started = time.perf_counter()
    kernel = kernel_for(task.ref)
    carried = dict((bucket, payload) for bucket, (kind, payload) in items if kind == STATE)
    mine = task.buckets_of(index)
    assert sorted(carried) == list(mine), f"partition {index} carries buckets {sorted(carried)}"
    maybe_fail(task.level)
    frontier = concat([carried[b].frontier for b in mine], kernel)
    del carried
    summary, rows = expand_states(task, kernel, frontier, started)
    bounds, order = exchange.grouping(rows[0], task.buckets, kernel.layout.exact)
    block = np.stack(rows, axis=1) if len(rows[0]) else np.empty((0, len(rows)), U64)
    if order is not None:
        block = block[order]
    for target in range(task.buckets):
        lo, hi = int(bounds[target]), int(bounds[target + 1])
        if hi > lo:
            yield target, (ROWS, block[lo:hi])
    summary.exchange_bytes = block.nbytes
    summary.write_seconds = time.perf_counter() - started - summary.seconds
    yield mine[0], (EXPAND, summary)


def dedupe(task: LevelTask, reports: Accumulator[dict[int, Report]], index: int,
           items: Iterator[tuple[int, tuple[str, Any]]]
           ) -> Iterator[tuple[int, tuple[str, Bucket]]]:
    """Partition `index`'s buckets at level K+1: each one's new states among the
    successors shuffled to it, and its visited set with them added; their summaries
    and level files go to `reports`."""
    started = time.perf_counter()
    kernel = kernel_for(task.ref)
    mine = task.buckets_of(index)
    carried: dict[int, Bucket] = {}
    blocks: dict[int, list[np.ndarray]] = {b: [] for b in mine}
    expanded: dict[int, list[ExpandSummary]] = {b: [] for b in mine}
    for bucket, (kind, payload) in items:
        if kind == STATE:
            carried[bucket] = payload
        elif kind == ROWS:
            blocks[bucket].append(payload)
        else:
            expanded[bucket].append(payload)
    assert sorted(carried) == list(mine), f"partition {index} carries buckets {sorted(carried)}"
    read = time.perf_counter() - started
    for bucket in mine:
        summary, updated = _dedupe_bucket(task, kernel, carried.pop(bucket), blocks.pop(bucket),
                                          read)
        data, summary.file = level_bytes(updated.frontier, kernel.layout.exact)
        reports.add({bucket: (summary, expanded[bucket], bytes(data))})
        yield bucket, (STATE, updated)
        read = 0.0


def _dedupe_bucket(task: LevelTask, kernel: Kernel, carried: Bucket, blocks: list[np.ndarray],
                   read: float) -> tuple[DedupeSummary, Bucket]:
    """One bucket at level K+1, from its state at level K and the rows sent to it."""
    started = time.perf_counter()
    n_columns = 3 if kernel.layout.exact else 3 + kernel.layout.n_words
    rows = np.concatenate(blocks) if blocks else np.empty((0, n_columns), U64)
    got = exchanged_states(kernel, [np.ascontiguousarray(rows[:, c]) for c in range(n_columns)])
    del blocks, rows
    gathered = time.perf_counter()
    visited = carried.visited
    summary, new = dedupe_states(task, kernel, got, lambda fps: sorted_hits(visited, fps)[1])
    deduped = time.perf_counter()
    merged = np.concatenate([visited, new.fps])
    merged.sort(kind="stable")  # two sorted runs: timsort merges them in linear time
    summary.read_seconds = read + gathered - started
    summary.seconds = deduped - gathered
    summary.write_seconds = time.perf_counter() - deduped
    return summary, Bucket(merged, new)


# --- the driver -------------------------------------------------------------------------------

def next_level(task: LevelTask, carried: RDD, ranges: BucketRanges,
               reports: Accumulator[dict[int, Report]]) -> RDD:
    """Level K+1's buckets (lazy, persisted once computed; computing them fills
    `reports`): the shuffle exchange. `carried` holds level K's, partitioned by
    `ranges` (`task.tasks` partitions)."""
    successors = carried.mapPartitionsWithIndex(partial(expand, task)) \
        .partitionBy(task.tasks, ranges)
    zipped = carried.union(successors)
    if zipped.getNumPartitions() != task.tasks:  # Spark would shuffle the visited set
        raise CheckerError(f"Spark did not keep the buckets' partitioning "
                           f"({zipped.getNumPartitions()} partitions after the union, not "
                           f"{task.tasks})")
    return zipped.mapPartitionsWithIndex(partial(dedupe, task, reports),
                                         preservesPartitioning=True) \
        .persist(StorageLevel.MEMORY_AND_DISK)


def build(level: RDD) -> None:
    """Compute and cache every partition of `level`. A count by the JVM: a Python
    action would read the cache back through a second Python worker per task."""
    level._jrdd.count()


def carry(context: SparkContext, buckets: list[Bucket], ranges: BucketRanges) -> RDD:
    """An RDD of the buckets, partitioned by `ranges`, persisted."""
    return context.parallelize([(b, (STATE, bucket)) for b, bucket in enumerate(buckets)],
                               ranges.partitions) \
        .partitionBy(ranges.partitions, ranges).persist(StorageLevel.MEMORY_AND_DISK)


def repartition(carried: RDD, ranges: BucketRanges) -> RDD:
    """The same buckets over more partitions (the visited set moves, once). The old
    partitions are dropped only once the new ones are built: dropped first, they would
    be recomputed from the run's whole lineage."""
    moved = carried.partitionBy(ranges.partitions, ranges).persist(StorageLevel.MEMORY_AND_DISK)
    build(moved)
    carried.unpersist()
    return moved


def first_level(shares: list[States]) -> list[Bucket]:
    """Level 0's buckets, from each bucket's share of its states (sorted)."""
    return [Bucket(share.fps.copy(), share) for share in shares]


def resumed(run_dir: RunDir, kernel: Kernel, depth: int) -> list[Bucket]:
    """The buckets after level `depth`, rebuilt from the recorded level files: each
    bucket's fingerprints of every level, and its share of the last level."""
    buckets = []
    for b in range(run_dir.partitions):
        fps = [read_level(level_file(run_dir.path, k, b), kernel, ["fp"]).fps
               for k in range(depth)]
        frontier = read_level(level_file(run_dir.path, depth, b), kernel)
        visited = np.concatenate([*fps, frontier.fps])
        visited.sort(kind="stable")
        buckets.append(Bucket(visited, frontier))
    return buckets
