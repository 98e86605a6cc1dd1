"""What Spark executors run for one BFS level: NumPy code over files, one bucket a task.

One Spark job per level, two stages on either side of one exchange by bucket:

- `expand_buckets` (map side): reads buckets of level K (one Parquet file each),
  computes their successors with the same `Kernel` the local engine uses and
  collapses them with the same `LevelDedup`, so only distinct successors are
  sent on, each with the task's smallest (parent fingerprint, action id). They
  go to one exchange file per task, grouped by target bucket (`exchange.py`);
  Spark's shuffle carries only the task's summary.
- `dedupe_buckets` (reduce side): for bucket C, the canonical generator of each
  successor, membership in the bucket's visited runs (`visited_runs`), the
  invariants on the new states, then level K+1's file for C and the bucket's
  new visited run.

Executors cannot receive a compiled Kernel (its generated functions do not
pickle), so they get a `MachineRef` and rebuild the machine once per Python
worker (Spark reuses workers across tasks). What the driver needs back
(coverage counts, minimal violation keys, the files written, timings) comes
back as the job's result: one summary per task, and a retried task's replaces
its failed attempt's, so merging stays exact.

Parquet has no unsigned integers: fingerprints, packed words and parent
fingerprints are stored as the int64 *view* of the uint64 values, and every
ordering here is taken on the uint64 view, so the canonical rule (smallest
parent fingerprint, then action id) is the same as in the local engine.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from checker.engines.durable import sync_files, write_bytes, write_bytes_to_sync
from checker.engines.explicit.successors import Kernel
from checker.engines.explicit.visited import LevelDedup, VisitedSet
from checker.engines.spark import exchange, visited_runs
from checker.engines.spark.run_dir import level_file
from checker.errors import CheckerError
from checker.lang.digest import machine_digest
from checker.lang.machine import Machine
from checker.packing import U64

FAULT_ENV = "CTMC_SPARK_FAULT_DIR"  # tests only: see `maybe_fail`


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
    symmetry: bool = False  # successors are mapped to their orbits' representatives
    digest: str = ""  # the driver's machine_digest, which the rebuilt machine must match

    @classmethod
    def of(cls, machine: Machine, symmetry: bool = False) -> MachineRef:
        if not machine.spec_ref:
            raise CheckerError(f"spec {machine.spec_name} cannot run on Spark: executors import "
                               "specs by module:attribute, and this one is not importable")
        return cls(machine.spec_ref, tuple(sorted(machine.params.items())),
                   tuple(machine.mutations), tuple(p.name for p in machine.invariants),
                   tuple(p.name for p in machine.step_invariants),
                   tuple(p.name for p in machine.lemmas),
                   tuple(p.name for p in machine.liveness), symmetry, machine_digest(machine))

    def build(self) -> Machine:
        """The machine again, refused if it means something else here than where the
        reference was made: action ids and fingerprints would then name other
        instances and states (a spec that iterates a set, say, whose order follows
        each process's hash seed)."""
        from checker.registry import find_spec

        machine = find_spec(self.spec_ref).instantiate(dict(self.params), self.mutations)
        machine = dataclasses.replace(
            machine,
            invariants=_pick(machine.invariants, self.invariants),
            step_invariants=_pick(machine.step_invariants, self.step_invariants),
            lemmas=_pick(machine.lemmas, self.lemmas),
            liveness=_pick(machine.liveness, self.liveness))
        if self.digest and machine_digest(machine) != self.digest:
            raise CheckerError(
                f"spec {machine.spec_name} builds a different machine in a Spark executor "
                "than in the driver (does it iterate a set or a dict built from one, or "
                "read something that differs between processes?); run it with --engine bfs")
        return machine


def _pick(props: list, names: tuple[str, ...]) -> list:
    by_name = {p.name: p for p in props}
    return [by_name[n] for n in names]


_KERNELS: dict[MachineRef, Kernel] = {}  # per Python worker, which Spark reuses across tasks


def kernel_for(ref: MachineRef) -> Kernel:
    """The machine's kernel in this worker (every task's first call); under symmetry,
    its successors are orbit representatives, by the same canonical form as the local
    engine's."""
    kernel = _KERNELS.get(ref)
    if kernel is None:
        _frugal_arrow()
        kernel = _KERNELS[ref] = Kernel(ref.build())
        if ref.symmetry:
            from checker.symmetry.canonical import reduce_by_orbits

            reduce_by_orbits(kernel)
    from pyspark import TaskContext

    if TaskContext.get() is not None:  # in a Spark task, not a driver or a test
        # PySpark's daemon runs a full collection after every task: frozen, what earlier
        # tasks left (the kernel, the modules) is not scanned again (decision 0013)
        gc.freeze()
    return kernel


def _frugal_arrow() -> None:
    """Arrow in an executor allocates through malloc and on this thread only. Its own
    allocator and thread pools reserve address space they keep (each thread's malloc
    arena, up to 64 MB), which a Python worker capped by spark.executor.pyspark.memory
    runs out of: tasks here are single-threaded, Spark runs one per core."""
    pa.set_memory_pool(pa.system_memory_pool())
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)


# --- level files ---------------------------------------------------------------------

def word_columns(n_words: int, exact: bool) -> list[str]:
    """Columns holding the packed state; with exact fingerprints the state is `fp`."""
    return [] if exact else [f"w{i}" for i in range(n_words)]


@dataclass
class States:
    """Rows of a level file, unsigned: fingerprints (sorted), words, generators."""

    fps: np.ndarray
    words: list[np.ndarray]
    parents: np.ndarray
    actions: np.ndarray  # int64

    def take(self, rows: np.ndarray | slice, exact: bool) -> States:
        fps = self.fps[rows]
        return States(fps, [fps] if exact else [w[rows] for w in self.words],
                      self.parents[rows], self.actions[rows])


def read_level(path: Path, kernel: Kernel, columns: Iterable[str] | None = None) -> States:
    """A level file's rows (`columns`: only these, the others left empty)."""
    layout = kernel.layout
    names = ["fp", *word_columns(layout.n_words, layout.exact), "parent", "action"]
    table = pq.ParquetFile(path).read(
        columns=[c for c in names if columns is None or c in columns], use_threads=False)
    empty = np.empty(0, dtype=U64)

    def column(name: str) -> np.ndarray:
        if name not in table.column_names:
            return empty
        return table.column(name).to_numpy().view(U64)

    fps = column("fp")
    words = [fps] if layout.exact else [column(c) for c in word_columns(layout.n_words, False)]
    actions = table.column("action").to_numpy().astype(np.int64) \
        if "action" in table.column_names else np.empty(0, dtype=np.int64)
    return States(fps, words, column("parent"), actions)


def write_level(path: Path, states: States, exact: bool,
                unsynced: list[Path] | None = None) -> dict[str, Any]:
    """Write a level file atomically; its description (bytes, rows, SHA-256) for the
    level's record. The same rows always make the same bytes, so a retry is harmless.
    With `unsynced`, the file is not synced but its path is added there."""
    data, description = level_bytes(states, exact)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_to_sync(path, data, unsynced)
    return description


def level_bytes(states: States, exact: bool) -> tuple[memoryview, dict[str, Any]]:
    """A level file's bytes (Parquet), and their description for the level's record."""
    columns = {"fp": pa.array(states.fps.view(np.int64))}
    if not exact:
        for i, w in enumerate(states.words):
            columns[f"w{i}"] = pa.array(w.view(np.int64))
    columns["parent"] = pa.array(states.parents.view(np.int64))
    columns["action"] = pa.array(states.actions.astype(np.int32))
    sink = pa.BufferOutputStream()
    # a dictionary only for the actions: fingerprints, words and parents are nearly all
    # distinct, so trying one for them (Arrow's default) took three quarters of the
    # write and saved nothing (decision 0013's addendum)
    pq.write_table(pa.table(columns), sink, use_dictionary=["action"])
    data = memoryview(sink.getvalue())
    return data, {"bytes": data.nbytes, "rows": len(states.fps),
                  "sha256": hashlib.sha256(data).hexdigest()}


def write_bucket(root: Path, level: int, bucket: int, states: States, exact: bool,
                 unsynced: list[Path] | None = None) -> tuple[dict[str, Any], tuple[str, int]]:
    """A level's new states in `bucket` (sorted by fingerprint): its file, and the
    bucket's visited run that now covers it. Their descriptions for the record. With
    `unsynced`, neither is synced, and their paths are added there."""
    return (write_level(level_file(root, level, bucket), states, exact, unsynced),
            visited_runs.add_level(root, bucket, level, states.fps, unsynced))


# --- per-task summaries ----------------------------------------------------------------

Key = tuple[int, int]  # (parent fingerprint as unsigned int, action id): the canonical order


@dataclass
class ExpandSummary:
    """What expanding one frontier bucket saw."""

    enabled: np.ndarray  # per action instance
    generated: int = 0
    deadlock: int | None = None  # smallest fingerprint of a state with no enabled action
    guard_error: Key | None = None  # smallest transition whose guard read out of range
    error: Key | None = None  # smallest transition whose update or check failed
    step: tuple[int, int, int] | None = None  # smallest step-invariant violation, + index
    seconds: float = 0.0  # reading the frontier and computing successors
    write_seconds: float = 0.0  # writing them to the exchange
    exchanged: int = 0  # successors sent to dedupe tasks
    exchange_bytes: int = 0
    moved: int = 0  # successors mapped to another representative (under symmetry)


@dataclass
class DedupeSummary:
    """What deduplicating one bucket found, and what it wrote."""

    new_states: np.ndarray  # per action instance: canonical generators of new states
    count: int = 0
    # the violating new state with the smallest generator:
    # (parent fp, action, first violated property, whether a property read out of range)
    bad: tuple[int, int, int, bool] | None = None
    file: dict[str, Any] = field(default_factory=dict)  # the level file's description
    run: tuple[str, int] = ("", 0)  # the visited run written: name, bytes
    read_seconds: float = 0.0  # reading this bucket's successors from the exchange
    seconds: float = 0.0  # canonical generators, membership, invariants
    write_seconds: float = 0.0  # the level file and the visited run


@dataclass(frozen=True)
class LevelTask:
    """Everything an executor needs to build level `level + 1` (pickled with the job).

    The level's `tasks` tasks per stage share the `buckets` buckets in contiguous
    ranges: a small level runs as a few tasks (each costs tens of milliseconds to
    schedule, whatever it does), a large one as one task per bucket."""

    ref: MachineRef
    root: str  # the run directory, an absolute path every executor sees
    level: int
    buckets: int
    tasks: int
    deadlock: bool
    batch_size: int = 1 << 16
    dedup_budget: int = 1 << 20

    def buckets_of(self, task: int) -> range:
        return range(task * self.buckets // self.tasks, (task + 1) * self.buckets // self.tasks)

    def task_of(self, bucket: int) -> int:
        """The task whose range holds `bucket` (Spark's partitioner for the shuffle)."""
        return ((bucket + 1) * self.tasks - 1) // self.buckets


# --- expansion (map side) ----------------------------------------------------------------

def expand_buckets(task: LevelTask, index: int, _: Iterator[Any]
                   ) -> Iterator[tuple[int, ExpandSummary]]:
    """Expand the frontier buckets of task `index`: their successors, each with its
    smallest generator there, go to this task's exchange file; Spark gets (the task's
    first bucket, its summary), which routes the summary to one dedupe task."""
    started = time.perf_counter()
    kernel = kernel_for(task.ref)
    frontier = read_frontier(task, index, kernel)
    maybe_fail(task.level)
    summary, rows = expand_states(task, kernel, frontier, started)
    summary.exchange_bytes = exchange.write(Path(task.root), task.level + 1, index,
                                            task.buckets, rows, kernel.layout, kernel.n_actions)
    summary.write_seconds = time.perf_counter() - started - summary.seconds
    yield task.buckets_of(index)[0], summary


def read_frontier(task: LevelTask, index: int, kernel: Kernel) -> States:
    """Level K's states (fingerprints and words) in the buckets of task `index`."""
    layout = kernel.layout
    columns = ["fp", *word_columns(layout.n_words, layout.exact)]
    return concat([read_level(level_file(Path(task.root), task.level, b), kernel, columns)
                   for b in task.buckets_of(index)], kernel)


def expand_states(task: LevelTask, kernel: Kernel, frontier: States, started: float
                  ) -> tuple[ExpandSummary, list[np.ndarray]]:
    """The distinct successors of `frontier` (fingerprints and words), each with its
    smallest generator here, as equal-length uint64 columns: fingerprint, words (none
    when fingerprints are exact), parent fingerprint, action id."""
    layout = kernel.layout
    # sorted by fingerprint so that generation keys follow (parent fp, action); the
    # buckets' files are each sorted, so a stable sort merges them
    order = np.argsort(frontier.fps, kind="stable")
    fps = frontier.fps[order]
    words = [fps] if layout.exact else [w[order] for w in frontier.words]
    del frontier
    A = kernel.n_actions
    summary = ExpandSummary(np.zeros(A, dtype=np.int64))
    dedup = LevelDedup(VisitedSet(), layout.n_words, layout.bits if layout.exact else None,
                       task.dedup_budget)
    guard_error = error = step = deadlock = None
    for lo in range(0, len(fps), task.batch_size):
        exp = kernel.expand([w[lo:lo + task.batch_size] for w in words], lo, task.deadlock)
        summary.enabled += exp.enabled
        summary.generated += len(exp.gen)
        summary.moved += exp.moved
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
    summary.exchanged = len(new_fps)
    rows = [new_fps, *([] if layout.exact else new_words), fps[gen // A], (gen % A).astype(U64)]
    summary.seconds = time.perf_counter() - started
    return summary, rows


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


# --- deduplication (reduce side) ------------------------------------------------------------

def dedupe_buckets(task: LevelTask, index: int, items: Iterator[tuple[int, ExpandSummary]]
                   ) -> Iterator[tuple[str, int, Any]]:
    """Level K+1's states in the buckets of task `index` (`dedupe_bucket`, one bucket at
    a time), from the exchange files. Yields a summary per bucket, and the expand
    summaries routed here."""
    kernel = kernel_for(task.ref)
    for key, summary in items:  # routed here by its task's first bucket
        yield "expand", key, summary
    shares: dict[int, Callable[[], list[np.ndarray]]] = {
        b: partial(exchange.read, Path(task.root), task.level + 1, task.tasks, task.buckets,
                   b, kernel.layout, kernel.n_actions)
        for b in task.buckets_of(index)}
    yield from _dedupe_synced(task, kernel, shares)


def one_task_level(task: LevelTask, kernel: Kernel) -> list[tuple[str, int, Any]]:
    """A level that Spark would run as one task per stage, run in this process instead,
    with the successors passed in memory rather than through an exchange file: the same
    level files, visited runs and summaries, without a Spark job's scheduling (two
    stages, about 0.15 s), which is most of a small level's cost. `kernel` is this
    process's kernel for `task.ref`."""
    assert task.tasks == 1
    started = time.perf_counter()
    frontier = read_frontier(task, 0, kernel)
    summary, rows = expand_states(task, kernel, frontier, started)
    offsets, order = exchange.grouping(rows[0], task.buckets, kernel.layout.exact)
    grouped = rows if order is None else [column[order] for column in rows]
    del rows
    summary.write_seconds = time.perf_counter() - started - summary.seconds
    shares: dict[int, Callable[[], list[np.ndarray]]] = {
        b: partial(_slices, grouped, int(offsets[b]), int(offsets[b + 1]))
        for b in task.buckets_of(0)}
    return [("expand", 0, summary), *_dedupe_synced(task, kernel, shares)]


def _slices(columns: list[np.ndarray], lo: int, hi: int) -> list[np.ndarray]:
    return [column[lo:hi] for column in columns]


def _dedupe_synced(task: LevelTask, kernel: Kernel,
                   shares: dict[int, Callable[[], list[np.ndarray]]]
                   ) -> list[tuple[str, int, DedupeSummary]]:
    """`dedupe_bucket` for each bucket, given its successors' columns; what they wrote
    is synced once all are written (`sync_files`), before any summary is returned."""
    unsynced: list[Path] = []
    summaries = [("dedupe", bucket, dedupe_bucket(task, bucket, kernel, share(), unsynced))
                 for bucket, share in shares.items()]
    started = time.perf_counter()
    sync_files(unsynced)
    if summaries:
        summaries[0][2].write_seconds += time.perf_counter() - started
    return summaries


def dedupe_bucket(task: LevelTask, bucket: int, kernel: Kernel, columns: list[np.ndarray],
                  unsynced: list[Path]) -> DedupeSummary:
    """Level K+1's states of `bucket` from its successors' `columns` (as `expand_states`
    makes them) and the bucket's visited runs (`dedupe_states`), written unsynced with
    the bucket's new visited run (their paths added to `unsynced`)."""
    started = time.perf_counter()
    root = Path(task.root)
    got = exchanged_states(kernel, columns)
    del columns
    read = time.perf_counter()
    folder = visited_runs.bucket_folder(root, bucket)
    runs = [visited_runs.read_run(folder / visited_runs.run_name(r))
            for r in visited_runs.schedule(task.level + 1)]
    summary, new = dedupe_states(task, kernel, got, lambda fps: visited_runs.known(runs, fps))
    del got
    deduped = time.perf_counter()
    summary.file, summary.run = write_bucket(root, task.level + 1, bucket, new,
                                             kernel.layout.exact, unsynced)
    summary.read_seconds = read - started
    summary.seconds = deduped - read
    summary.write_seconds = time.perf_counter() - deduped
    return summary


def exchanged_states(kernel: Kernel, columns: list[np.ndarray]) -> States:
    """The rows `expand_states` made (several tasks' shares, concatenated) as States."""
    fps = columns[0]
    return States(fps, [fps] if kernel.layout.exact else columns[1:-2], columns[-2],
                  columns[-1].view(np.int64))


def dedupe_states(task: LevelTask, kernel: Kernel, got: States,
                  known: Callable[[np.ndarray], np.ndarray]) -> tuple[DedupeSummary, States]:
    """Of the successors `got` sent to one bucket, the new states (those `known` does
    not mark among sorted fingerprints), sorted by fingerprint, each with its canonical
    generator (the smallest (parent fingerprint, action id) over all frontier buckets),
    checked against the invariants."""
    exact = kernel.layout.exact
    candidates = got.take(_canonical_rows(got.fps, got.parents, got.actions), exact)
    new = candidates.take(np.flatnonzero(~known(candidates.fps)), exact)  # gathers: faster
    del candidates
    summary = DedupeSummary(np.bincount(new.actions, minlength=kernel.n_actions), len(new.fps))
    first = np.empty(len(new.fps), dtype=np.int64)
    undefined = np.empty(len(new.fps), dtype=bool)
    for lo in range(0, len(new.fps), task.batch_size):
        hi = lo + task.batch_size
        first[lo:hi], undefined[lo:hi] = kernel.violated_properties(
            [w[lo:hi] for w in new.words])
    bad = np.flatnonzero((first >= 0) | undefined)
    if len(bad):
        i = bad[np.lexsort((new.actions[bad], new.parents[bad]))[0]]
        summary.bad = (int(new.parents[i]), int(new.actions[i]), int(first[i]),
                       bool(undefined[i]))
    return summary, new


def concat(shares: list[States], kernel: Kernel) -> States:
    """The rows of several shares, one after another."""
    if not shares:
        empty = np.empty(0, dtype=U64)
        return States(empty, [empty] * kernel.layout.n_words, empty, np.empty(0, dtype=np.int64))
    fps = np.concatenate([s.fps for s in shares])
    words = [fps] if kernel.layout.exact else [
        np.concatenate([s.words[w] for s in shares]) for w in range(kernel.layout.n_words)]
    return States(fps, words, np.concatenate([s.parents for s in shares]),
                  np.concatenate([s.actions for s in shares]))


def _canonical_rows(fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Per distinct fingerprint (in increasing order), the row of its smallest
    (parent, action): an argsort, then the smallest parent of each run of equal
    fingerprints and the smallest action among its rows with it. A (parent, action)
    pair is one transition, so the choice is unique whatever order the sort leaves
    equal fingerprints in: an unstable sort will do, and numpy's vectorised one takes
    half the time of merging the input's sorted shares (one per frontier task)."""
    order = np.argsort(fps)
    f = fps[order]
    if len(f) < 2:
        return order
    is_start = np.concatenate(([True], f[1:] != f[:-1]))
    if is_start.all():
        return order
    starts = np.flatnonzero(is_start)
    group = np.cumsum(is_start) - 1
    p, a = parents[order], actions[order]
    best = p == np.minimum.reduceat(p, starts)[group]
    a = np.where(best, a, np.iinfo(np.int64).max)
    best &= a == np.minimum.reduceat(a, starts)[group]
    return order[best]


# --- fault injection ---------------------------------------------------------------------------

def maybe_fail(level: int) -> None:
    """Tests only, in the folder named by $CTMC_SPARK_FAULT_DIR:

    - `kill-level-K`: the first task expanding level K takes the file and kills its
      Python worker, so Spark must retry the task;
    - `pause-level-K`: the first task expanding level K takes the file, writes its
      Python worker's pid to `paused-level-K` and sleeps (up to a minute) until
      `go-level-K` exists, so a test can kill its executor while a level is under way.

    Renaming is atomic: exactly one task fires each, and its retry does not."""
    folder = os.environ.get(FAULT_ENV)
    if not folder:
        return
    if _take(os.path.join(folder, f"kill-level-{level}")):
        os._exit(17)
    if _take(os.path.join(folder, f"pause-level-{level}")):
        write_bytes(Path(folder) / f"paused-level-{level}", str(os.getpid()).encode())
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(folder, f"go-level-{level}")) and \
                time.monotonic() < deadline:
            time.sleep(0.1)


def _take(armed: str) -> bool:
    try:
        os.rename(armed, armed + ".fired")
    except OSError:
        return False
    return True
