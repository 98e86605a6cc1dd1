"""What Spark executors run for one BFS level: NumPy code over Arrow batches.

Two `mapInArrow` steps per level, on either side of the shuffle by fingerprint:

- `expand_partition` (map side): a frontier partition's successors, computed by
  the same `Kernel` the local engine uses and collapsed within the partition
  by the same `LevelDedup`, so only distinct successors are shuffled, each
  with its partition's smallest (parent fingerprint, action id);
- `dedupe_partition` (after the anti-join with the visited set): the new
  states of one fingerprint partition, each with its canonical generator,
  checked against the invariants.

Executors cannot receive a compiled Kernel (its generated functions do not
pickle), so they get a `MachineRef` and rebuild the machine once per Python
worker. What the driver needs back (coverage counts, minimal violation keys,
timings) travels in small per-partition summaries through an accumulator
keyed by (step, partition id): a retried or recomputed task sends the same
summary under the same key, so merging stays exact.

Spark has no unsigned integers: fingerprints, packed words and parent
fingerprints are stored as the int64 *view* of the uint64 values, and every
ordering here is taken on the uint64 view, so the canonical rule (smallest
parent fingerprint, then action id) is the same as in the local engine.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.accumulators import Accumulator, AccumulatorParam
from pyspark.taskcontext import TaskContext

from checker.engines.explicit.successors import Kernel
from checker.engines.explicit.visited import LevelDedup, VisitedSet
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.packing import U64

FAULT_ENV = "CTMC_SPARK_FAULT_DIR"  # tests only: see `_maybe_fail`
OUTPUT_ROWS = 1 << 16  # rows per Arrow batch handed back to Spark


# --- the machine, rebuilt in executors ------------------------------------------

@dataclass(frozen=True)
class MachineRef:
    """How to build the same Machine again in another process."""

    spec_ref: str  # "module:attribute" of the Spec
    params: tuple[tuple[str, Any], ...]
    mutations: tuple[str, ...]
    invariants: tuple[str, ...]
    step_invariants: tuple[str, ...]
    lemmas: tuple[str, ...]
    liveness: tuple[str, ...] = ()

    @classmethod
    def of(cls, machine: Machine) -> MachineRef:
        if not machine.spec_ref:
            raise CheckerError(f"spec {machine.spec_name} cannot run on Spark: executors import "
                               "specs by module:attribute, and this one is not importable")
        return cls(machine.spec_ref, tuple(sorted(machine.params.items())),
                   tuple(machine.mutations), tuple(p.name for p in machine.invariants),
                   tuple(p.name for p in machine.step_invariants),
                   tuple(p.name for p in machine.lemmas),
                   tuple(p.name for p in machine.liveness))

    def build(self) -> Machine:
        from checker.registry import find_spec

        machine = find_spec(self.spec_ref).instantiate(dict(self.params), self.mutations)
        return dataclasses.replace(
            machine,
            invariants=_pick(machine.invariants, self.invariants),
            step_invariants=_pick(machine.step_invariants, self.step_invariants),
            lemmas=_pick(machine.lemmas, self.lemmas),
            liveness=_pick(machine.liveness, self.liveness))


def _pick(props: list, names: tuple[str, ...]) -> list:
    by_name = {p.name: p for p in props}
    return [by_name[n] for n in names]


_KERNELS: dict[MachineRef, Kernel] = {}  # per Python worker, which Spark reuses across tasks


def kernel_for(ref: MachineRef) -> Kernel:
    kernel = _KERNELS.get(ref)
    if kernel is None:
        kernel = _KERNELS[ref] = Kernel(ref.build())
    return kernel


# --- columns -----------------------------------------------------------------------

def word_columns(n_words: int, exact: bool) -> list[str]:
    """Columns holding the packed state; with exact fingerprints the state is `fp`."""
    return [] if exact else [f"w{i}" for i in range(n_words)]


def state_schema(n_words: int, exact: bool) -> str:
    """Spark DDL of a level's rows (without the `level` partition column)."""
    words = "".join(f"{c} long, " for c in word_columns(n_words, exact))
    return f"fp long, {words}parent long, action int"


def unsigned(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy().view(U64)


def read_partition(batches: Iterator[pa.RecordBatch], kernel: Kernel
          ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
    """One partition as uint64 fingerprints, words and parents, and int64 actions."""
    got = list(batches)
    layout = kernel.layout
    if not sum(b.num_rows for b in got):
        empty = np.empty(0, dtype=U64)
        return empty, [empty] * layout.n_words, empty, np.empty(0, dtype=np.int64)
    table = pa.Table.from_batches(got).combine_chunks()
    fps = unsigned(table, "fp")
    words = [fps] if layout.exact else [unsigned(table, c) for c in
                                        word_columns(layout.n_words, False)]
    actions = table.column("action").to_numpy().astype(np.int64)
    return fps, words, unsigned(table, "parent"), actions


def _batches(kernel: Kernel, fps: np.ndarray, words: list[np.ndarray], parents: np.ndarray,
             actions: np.ndarray) -> Iterator[pa.RecordBatch]:
    layout = kernel.layout
    names = ["fp", *word_columns(layout.n_words, layout.exact), "parent", "action"]
    columns = [fps] + ([] if layout.exact else words) + [parents]
    for lo in range(0, len(fps), OUTPUT_ROWS):
        hi = lo + OUTPUT_ROWS
        arrays = [pa.array(c[lo:hi].view(np.int64)) for c in columns]
        arrays.append(pa.array(actions[lo:hi].astype(np.int32)))
        yield pa.RecordBatch.from_arrays(arrays, names=names)


# --- per-partition summaries ----------------------------------------------------------

Key = tuple[int, int]  # (parent fingerprint as unsigned int, action id): the canonical order


@dataclass
class ExpandSummary:
    """What expanding one frontier partition saw."""

    enabled: np.ndarray  # per action instance
    generated: int = 0
    deadlock: int | None = None  # smallest fingerprint of a state with no enabled action
    guard_error: Key | None = None  # smallest transition whose guard read out of range
    error: Key | None = None  # smallest transition whose update or check failed
    step: tuple[int, int, int] | None = None  # smallest step-invariant violation, + index
    seconds: float = 0.0


@dataclass
class DedupeSummary:
    """What deduplicating one fingerprint partition found."""

    new_states: np.ndarray  # per action instance: canonical generators of new states
    count: int = 0
    # the violating new state with the smallest generator:
    # (parent fp, action, first violated property, whether a property read out of range)
    bad: tuple[int, int, int, bool] | None = None
    seconds: float = 0.0
    write_seconds: float = 0.0


class SummaryParam(AccumulatorParam):
    """Summaries keyed by (step, partition id); a recomputed task overwrites its own."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, value1: dict, value2: dict) -> dict:
        value1.update(value2)
        return value1


@dataclass(frozen=True)
class LevelTask:
    """Everything an executor needs to process level `level` (pickled with the function)."""

    ref: MachineRef
    level: int
    deadlock: bool
    summaries: Accumulator
    batch_size: int = 1 << 16
    dedup_budget: int = 1 << 20


def _partition() -> int:
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


# --- expansion (map side) ----------------------------------------------------------------

def expand_partition(task: LevelTask, batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    """Distinct successors of one frontier partition, each with its smallest generator."""
    started = time.perf_counter()
    kernel = kernel_for(task.ref)
    fps, words, _, _ = read_partition(batches, kernel)
    _maybe_fail(task.level)
    order = np.argsort(fps, kind="stable")  # generation keys then follow (parent fp, action)
    fps, words = fps[order], [w[order] for w in words]
    A = kernel.n_actions
    layout = kernel.layout
    summary = ExpandSummary(np.zeros(A, dtype=np.int64))
    dedup = LevelDedup(VisitedSet(), layout.n_words, layout.bits if layout.exact else None,
                       task.dedup_budget)
    guard_error = error = step = deadlock = None
    for lo in range(0, len(fps), task.batch_size):
        exp = kernel.expand([w[lo:lo + task.batch_size] for w in words], lo, task.deadlock)
        summary.enabled += exp.enabled
        summary.generated += len(exp.gen)
        guard_error = _min(guard_error, exp.guard_error)
        error = _min(error, exp.error)
        if exp.step_violation is not None and (step is None or exp.step_violation[0] < step[0]):
            step = exp.step_violation
        if len(exp.deadlocked) and deadlock is None:
            deadlock = int(exp.deadlocked[0])
        if len(exp.gen):
            dedup.add(layout.fingerprints(exp.words), exp.gen, exp.words)
    new_fps, gen, new_words = dedup.result()
    del dedup

    def key(g: int) -> Key:
        return int(fps[g // A]), g % A

    summary.guard_error = None if guard_error is None else key(guard_error)
    summary.error = None if error is None else key(error)
    summary.step = None if step is None else (*key(step[0]), step[1])
    summary.deadlock = None if deadlock is None else int(fps[deadlock])
    yield from _batches(kernel, new_fps, new_words, fps[gen // A], gen % A)
    summary.seconds = time.perf_counter() - started
    task.summaries.add({("expand", _partition()): summary})


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


# --- deduplication (after the anti-join) ---------------------------------------------------

def dedupe_partition(task: LevelTask, batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    """The new states of one fingerprint partition, sorted by fingerprint, each with its
    canonical generator: the smallest (parent fingerprint, action id) among the
    candidates that map partitions sent."""
    started = time.perf_counter()
    kernel = kernel_for(task.ref)
    fps, words, parents, actions = read_partition(batches, kernel)
    rows = _canonical_rows(fps, parents, actions)
    fps, parents, actions = fps[rows], parents[rows], actions[rows]
    words = [fps] if kernel.layout.exact else [w[rows] for w in words]
    summary = DedupeSummary(np.bincount(actions, minlength=kernel.n_actions), len(fps))
    first = np.empty(len(fps), dtype=np.int64)
    undefined = np.empty(len(fps), dtype=bool)
    for lo in range(0, len(fps), task.batch_size):
        hi = lo + task.batch_size
        first[lo:hi], undefined[lo:hi] = kernel.violated_properties([w[lo:hi] for w in words])
    bad = np.flatnonzero((first >= 0) | undefined)
    if len(bad):
        i = bad[np.lexsort((actions[bad], parents[bad]))[0]]
        summary.bad = (int(parents[i]), int(actions[i]), int(first[i]), bool(undefined[i]))
    summary.seconds = time.perf_counter() - started
    yield from _batches(kernel, fps, words, parents, actions)
    summary.write_seconds = time.perf_counter() - started - summary.seconds
    task.summaries.add({("dedupe", _partition()): summary})


def _canonical_rows(fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Per distinct fingerprint (in increasing order), the row of its smallest
    (parent, action). Runs of one row, the common case, cost one sort in total."""
    order = np.argsort(fps)
    f = fps[order]
    is_start = np.concatenate(([True], f[1:] != f[:-1])) if len(f) else np.empty(0, bool)
    starts = np.flatnonzero(is_start)
    chosen = order[starts]
    lengths = np.diff(np.append(starts, len(f)))
    if (lengths > 1).any():
        run = np.cumsum(is_start) - 1
        member = lengths[run] > 1
        rows, runs = order[member], run[member]
        rank = np.lexsort((actions[rows], parents[rows], runs))
        ranked, ranked_runs = rows[rank], runs[rank]
        firsts = np.concatenate(([True], ranked_runs[1:] != ranked_runs[:-1]))
        chosen[ranked_runs[firsts]] = ranked[firsts]
    return chosen


# --- fault injection ---------------------------------------------------------------------------

def _maybe_fail(level: int) -> None:
    """Tests only: if the folder named by $CTMC_SPARK_FAULT_DIR holds `kill-level-K`,
    the first task expanding level K takes the file and kills its Python worker, so
    Spark must retry the task. Renaming is atomic: exactly one task fires."""
    folder = os.environ.get(FAULT_ENV)
    if not folder:
        return
    armed = os.path.join(folder, f"kill-level-{level}")
    try:
        os.rename(armed, armed + ".fired")
    except OSError:
        return
    os._exit(17)
