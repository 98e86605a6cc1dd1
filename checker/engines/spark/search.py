"""Breadth-first search on Spark: the local BFS, partitioned by fingerprint.

Each level is a bucketed, partitioned Parquet table under the run directory:
rows (fp, packed words, parent fp, action id), `level=K` folders, and N
buckets hashed on `fp`. One Spark job per level:

    frontier (level K, bucket scan) -> mapInArrow(expand)     successors, map-side deduped
      -> shuffle by fp into N partitions
      -> left anti-join with the visited set (levels 0..K, bucket scan, never shuffled)
      -> mapInArrow(dedupe)                                    canonical parent, invariants
      -> insert as level K+1 (one file per bucket)

The visited side of the join is read bucket by bucket, already partitioned
like the shuffled successors, so it is never shuffled, broadcast or collected
(`docs/decisions/0004-spark-partitioning.md`). The driver only receives small
per-partition summaries and, for a counterexample, one row per step.

Results equal the local engine's (`bfs.py`): the same counts and coverage, and
the same canonical counterexample: a new state's parent is its generator with
the smallest (parent fingerprint, action id), and the violation reported is
the shallowest, then the smallest such key (`docs/decisions/0002`).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.successors import Kernel
from checker.engines.identity import search_identity
from checker.engines.report import explain, replay
from checker.engines.result import HOLDS, CheckResult, coverage_rows, search_stats
from checker.engines.scope import refuse_unchecked
from checker.engines.spark import run_dir as spark_run_dir
from checker.engines.spark.levels import (
    DedupeSummary,
    ExpandSummary,
    LevelTask,
    MachineRef,
    SummaryParam,
    dedupe_partition,
    expand_partition,
    state_schema,
    word_columns,
)
from checker.engines.spark.liveness import check_liveness
from checker.engines.spark.options import SparkOptions
from checker.engines.spark.run_dir import LevelCounts, Progress, RunDir
from checker.engines.spark.session import check_master, no_pandas_warning, spark_session
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.packing import U64, Layout
from checker.progress import Heartbeat
from checker.traces.trace import Trace

ENGINE_VERSION = "spark-2"
MIN_PARTITIONS = 8  # default: 2 per core, at least this many

# Settings every run needs (SQL settings, so they also apply to a session passed in).
_RUN_CONF = {
    "spark.sql.adaptive.enabled": "false",  # partition ids must stay the bucket ids
    "spark.sql.autoBroadcastJoinThreshold": "-1",  # a broadcast would collect the visited set
    "spark.sql.sources.bucketing.enabled": "true",
    "spark.sql.sources.bucketing.autoBucketedScan.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": str(1 << 16),
    # a level's rows arrive partitioned by bucket: write them without sorting them first
    "spark.sql.optimizer.plannedWrite.enabled": "false",
    "spark.sql.maxConcurrentOutputFileWriters": "2",
}


@dataclass
class _Found:
    """A violation: the trace reaches state `fp` at `depth`, then maybe takes `action`."""

    kind: str
    depth: int
    fp: int
    action: int | None
    prop: str = ""


@dataclass
class _Level:
    """One level's merged summaries."""

    expand: ExpandSummary
    dedupe: DedupeSummary
    seconds: float


@dataclass
class _Run:
    machine: Machine
    kernel: Kernel
    ref: MachineRef
    options: SparkOptions
    spark: SparkSession
    run_dir: RunDir
    progress: Progress
    table: str
    init_states: list[tuple[int, ...]]
    init_fps: np.ndarray
    started: float

    @property
    def depth(self) -> int:
        return self.progress.durable

    def elapsed(self) -> float:
        return time.perf_counter() - self.started + self.progress.seconds


# --- the entry point ------------------------------------------------------------------

def check(machine: Machine, options: SparkOptions | None = None,
          spark: SparkSession | None = None) -> CheckResult:
    """Exhaustive BFS of `machine` on Spark; `spark`: a session to use instead of
    starting one on `options.master`."""
    options = options or SparkOptions()
    preflight(machine, options)
    ref = MachineRef.of(machine)
    identity = _identity(machine, options)
    A = len(machine.actions)
    path = options.run_dir or spark_run_dir.default_path(options.label or machine.spec_name)
    if options.resume:  # verified before Spark starts: a damaged level costs no startup
        run_dir, progress = spark_run_dir.resume(path, identity, options.partitions, A)
    if spark is None:
        spark = spark_session(options.master, options.driver_memory)
    if not options.resume:
        partitions = options.partitions or max(MIN_PARTITIONS,
                                               2 * spark.sparkContext.defaultParallelism)
        run_dir = spark_run_dir.create(path, identity, partitions)
        progress = Progress(enabled=[0] * A, new_states=[0] * A)
    kernel = Kernel(machine)
    init_states, init_fps = _initial_states(machine, kernel)
    run = _Run(machine, kernel, ref, options, spark, run_dir, progress,
               f"ctmc_run_{uuid.uuid4().hex[:16]}", init_states, init_fps, time.perf_counter())
    _prepare(run)  # the clock starts once Spark is up: startup is not exploration
    try:
        return _search(run)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {run.table}")  # external: the files stay


def preflight(machine: Machine, options: SparkOptions) -> None:
    """Refuse bad input (a partition count, a master, a run directory) before Spark
    starts or anything is written."""
    if options.partitions is not None and options.partitions < 1:
        raise CheckerError(f"--partitions must be positive, got {options.partitions}")
    if options.resume and not options.run_dir:
        raise CheckerError("resuming a Spark run needs its run directory")
    refuse_unchecked(machine, "spark", options.max_depth)
    Layout(machine)  # every variable fits a 64-bit word
    MachineRef.of(machine)
    check_master(options.master)
    if options.resume:
        assert options.run_dir  # refused above when missing
        spark_run_dir.inspect(options.run_dir, _identity(machine, options), options.partitions)
    elif options.run_dir:
        spark_run_dir.check_new(options.run_dir)


def _identity(machine: Machine, options: SparkOptions) -> dict[str, Any]:
    """What a run directory must have been written for, to be resumed."""
    return search_identity(machine, ENGINE_VERSION, options.label, options.deadlock,
                           options.max_depth)


def _search(run: _Run) -> CheckResult:
    options = run.options
    if run.depth < 0:
        found = _initial_level(run)
        if found is not None:
            return _report(run, found)
    while True:
        if options.max_depth is not None and run.depth >= options.max_depth:
            return _finish(run, complete=False)
        level = _expand_level(run)
        found = _violation(run, level)
        if found is not None or not level.dedupe.count:
            progress = run.progress  # the level's expansion counts, as the local engine's do
            progress.enabled = (np.array(progress.enabled) + level.expand.enabled).tolist()
            progress.generated += level.expand.generated
            if found is not None:
                return _report(run, found)
            result = _finish(run, complete=True)
            return check_liveness(run, result) if run.machine.liveness else result
        _commit_level(run, level)


# --- Spark -------------------------------------------------------------------------------

def _prepare(run: _Run) -> None:
    """Settings, code shipped to executors, and the levels' table over the run directory."""
    spark = run.spark
    for key, value in _RUN_CONF.items():
        spark.conf.set(key, value)
    spark.conf.set("spark.sql.shuffle.partitions", str(run.run_dir.partitions))
    spark.sparkContext.addPyFile(_code_archive(run.ref))
    layout = run.kernel.layout
    words = "".join(f"{c} BIGINT, " for c in word_columns(layout.n_words, layout.exact))
    location = str(run.run_dir.path.resolve()).replace("\\", "\\\\").replace("'", "\\'")
    spark.sql(f"CREATE TABLE {run.table} (fp BIGINT, {words}parent BIGINT, action INT, "
              f"level INT) USING parquet PARTITIONED BY (level) CLUSTERED BY (fp) INTO "
              f"{run.run_dir.partitions} BUCKETS LOCATION '{location}'")
    spark.sql(f"ALTER TABLE {run.table} RECOVER PARTITIONS")  # the levels of a resumed run


def _code_archive(ref: MachineRef) -> str:
    """A zip of `checker` and the spec's top-level package, for executors that do not
    have them installed; named by content, so changed code gets a new name. A spec
    loaded from a file is loaded from the same path by the executors."""
    target_module = ref.spec_ref.rpartition(":")[0]
    from_file = target_module.endswith(".py") or "/" in target_module
    packages = sorted({"checker"} | (set() if from_file else {target_module.split(".")[0]}))
    files: list[tuple[Path, str]] = []
    for name in packages:
        module = importlib.import_module(name)
        if hasattr(module, "__path__"):
            root = Path(next(iter(module.__path__)))
            files += [(p, str(Path(name) / p.relative_to(root)))
                      for p in sorted(root.rglob("*.py"))]
        else:
            assert module.__file__ is not None  # a plain module is imported from its file
            files.append((Path(module.__file__), Path(module.__file__).name))
    digest = hashlib.sha1()
    for path, arcname in files:
        digest.update(arcname.encode() + b"\0" + path.read_bytes())
    target = Path(tempfile.gettempdir()) / "ctmc-spark-code" / f"ctmc-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            for path, arcname in files:
                archive.write(path, arcname)
        os.replace(tmp, target)
    return str(target)


# --- levels ---------------------------------------------------------------------------------

def _initial_states(machine: Machine, kernel: Kernel) -> tuple[list[tuple[int, ...]],
                                                                   np.ndarray]:
    """Initial states within the constraints, distinct and sorted by fingerprint (as
    `bfs._initial_level` orders them)."""
    scalar = ScalarMachine(machine)
    states = [s for s in machine.init_states if scalar.within_constraints(s)]
    if not states:
        raise CheckerError(f"spec {machine.spec_name}: no initial state satisfies the constraints")
    layout = kernel.layout
    packed = np.array([layout.pack(s) for s in states], dtype=U64).reshape(len(states), -1)
    fps = layout.fingerprints([packed[:, w].copy() for w in range(layout.n_words)])
    order = np.argsort(fps, kind="stable")
    fps = fps[order]
    keep = np.concatenate(([True], fps[1:] != fps[:-1]))
    return [states[i] for i in order[keep]], fps[keep]


def _initial_level(run: _Run) -> _Found | None:
    """Write level 0 (computed here, on the driver) and check its invariants."""
    kernel, layout = run.kernel, run.kernel.layout
    packed = np.array([layout.pack(s) for s in run.init_states], dtype=U64)
    words = [packed[:, w].copy() for w in range(layout.n_words)]
    n = len(run.init_fps)
    columns = {"fp": run.init_fps.view(np.int64)}
    for name, w in zip(word_columns(layout.n_words, layout.exact), words, strict=False):
        columns[name] = w.view(np.int64)
    columns.update(parent=np.zeros(n, dtype=np.int64), action=np.full(n, -1, dtype=np.int32),
                   level=np.zeros(n, dtype=np.int32))
    frame = run.spark.createDataFrame(pa.table(columns))
    frame.repartition(run.run_dir.partitions, "fp").write.insertInto(run.table)
    first, undefined = kernel.violated_properties(words)
    bad = np.flatnonzero((first >= 0) | undefined)
    if len(bad):  # the smallest fingerprint, as the local engine chooses
        i = int(bad[0])
        kind = "error" if undefined[i] else "invariant"
        prop = "" if undefined[i] else kernel.property_names[int(first[i])]
        return _Found(kind, 0, int(run.init_fps[i]), None, prop)
    counts = LevelCounts(n, timings={"seconds": round(_lap(run), 3),
                                     "bytes": run.run_dir.parquet_bytes(0)})
    run.run_dir.record(0, counts)
    run.progress.add(counts)
    _say(run, f"level   0 | new {n:>12,} | total {n:>13,}")
    return None


def level_frame(run: _Run, task: LevelTask) -> DataFrame:
    """Level K+1 as a DataFrame (lazy), from level K and the visited levels 0..K."""
    layout = run.kernel.layout
    schema = state_schema(layout.n_words, layout.exact)
    columns = ["fp", *word_columns(layout.n_words, layout.exact), "parent", "action"]
    levels = run.spark.table(run.table)
    frontier = levels.where(F.col("level") == task.level).select(*columns)
    visited = levels.where(F.col("level") <= task.level).select("fp")
    with no_pandas_warning():
        successors = frontier.mapInArrow(partial(expand_partition, task), schema)
        # Shuffled hash join, building on the visited side: no sort of the whole visited set.
        fresh = successors.join(visited.hint("shuffle_hash"), "fp", "left_anti")
        new = fresh.mapInArrow(partial(dedupe_partition, task), schema)
    return new.withColumn("level", F.lit(task.level + 1))


def _expand_level(run: _Run) -> _Level:
    started = time.perf_counter()
    accumulator = run.spark.sparkContext.accumulator({}, SummaryParam())
    task = LevelTask(run.ref, run.depth, run.options.deadlock, accumulator,
                     run.options.batch_size, run.options.dedup_budget)
    try:
        with Heartbeat(run.options.progress, partial(_stages, run, run.depth + 1)):
            level_frame(run, task).write.insertInto(run.table)
    except (Py4JError, PySparkException) as exc:
        cause = " ".join(str(exc).split())[:400]
        raise CheckerError(f"the Spark job building level {run.depth + 1} failed ({cause}); "
                           f"levels 0-{run.depth} are kept in {run.run_dir.path}: resume with "
                           f"--resume {run.run_dir.path}") from None
    summaries: dict[tuple[str, int], Any] = accumulator.value
    A = len(run.machine.actions)
    expand = ExpandSummary(np.zeros(A, dtype=np.int64))
    dedupe = DedupeSummary(np.zeros(A, dtype=np.int64))
    steps = {"expand": 0, "dedupe": 0}
    for (step, _), s in sorted(summaries.items(), key=lambda item: item[0]):
        steps[step] += 1
        if step == "expand":
            expand.enabled += s.enabled
            expand.generated += s.generated
            expand.seconds += s.seconds
            expand.deadlock = _smallest(expand.deadlock, s.deadlock)
            expand.guard_error = _smallest(expand.guard_error, s.guard_error)
            expand.error = _smallest(expand.error, s.error)
            expand.step = _smallest(expand.step, s.step)
        else:
            dedupe.new_states += s.new_states
            dedupe.count += s.count
            dedupe.seconds += s.seconds
            dedupe.write_seconds += s.write_seconds
            dedupe.bad = _smallest(dedupe.bad, s.bad)
    if steps["dedupe"] != run.run_dir.partitions:
        raise CheckerError(f"internal error: level {run.depth + 1} reported "
                           f"{steps['dedupe']} of {run.run_dir.partitions} partitions")
    return _Level(expand, dedupe, time.perf_counter() - started)


def _stages(run: _Run, level: int) -> str:
    """What the Spark job building `level` is doing: its active stages and their tasks."""
    tracker = run.spark.sparkContext.statusTracker()
    parts = []
    for stage in sorted(tracker.getActiveStageIds()):
        info = tracker.getStageInfo(stage)
        if info is not None:
            parts.append(f"stage {stage} ({info.name.split(' at ')[0]}): "
                         f"{info.numCompletedTasks}/{info.numTasks} tasks")
    return f"level {level:>3} | " + ("; ".join(parts) or "scheduling")


def _smallest(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _commit_level(run: _Run, level: _Level) -> None:
    """Make level K+1 durable: its Parquet is committed, now record it."""
    depth = run.depth + 1
    d, e = level.dedupe, level.expand
    counts = LevelCounts(d.count, e.generated, e.enabled.tolist(), d.new_states.tolist(), {
        "seconds": round(_lap(run), 3), "level_seconds": round(level.seconds, 3),
        "expand_task_seconds": round(e.seconds, 3), "dedupe_task_seconds": round(d.seconds, 3),
        "write_task_seconds": round(d.write_seconds, 3),
        "bytes": run.run_dir.parquet_bytes(depth)})
    run.run_dir.record(depth, counts)
    progress = run.progress
    progress.add(counts)
    total = sum(progress.sizes)
    rate = total / progress.seconds if progress.seconds > 0 else 0.0
    _say(run, f"level {depth:>3} | new {d.count:>12,} | total {total:>13,} | "
              f"{rate:>10,.0f} states/s | {level.seconds:7.2f} s (task-s: expand "
              f"{e.seconds:.2f}, dedupe {d.seconds:.2f}, write {d.write_seconds:.2f})")


def _lap(run: _Run) -> float:
    """Seconds since the last level was recorded (which the record carries on)."""
    now = time.perf_counter()
    elapsed, run.started = now - run.started, now
    return elapsed


def _say(run: _Run, line: str) -> None:
    if run.options.progress:
        run.options.progress(line)


def _violation(run: _Run, level: _Level) -> _Found | None:
    """The local engine's choice: guard errors, then deadlocks, in the frontier; then
    the transition or new state with the smallest (parent fp, action id), an evaluation
    error before a step invariant before a state invariant on the same transition."""
    e, d, depth = level.expand, level.dedupe, run.depth
    if e.guard_error is not None:
        return _Found("guard_error", depth, *e.guard_error)
    if e.deadlock is not None:
        return _Found("deadlock", depth, e.deadlock, None, "Deadlock")
    candidates: list[tuple[tuple[int, int], int, _Found]] = []
    if e.error is not None:
        candidates.append((e.error, 0, _Found("error", depth, *e.error)))
    if e.step is not None:
        fp, action, prop = e.step
        name = run.machine.step_invariants[prop].name
        candidates.append(((fp, action), 1, _Found("step_invariant", depth, fp, action, name)))
    if d.bad is not None:
        fp, action, prop, undefined = d.bad
        found = _Found("error", depth, fp, action) if undefined else \
            _Found("invariant", depth, fp, action, run.kernel.property_names[prop])
        candidates.append(((fp, action), 0 if undefined else 2, found))
    return min(candidates, key=lambda c: c[:2])[2] if candidates else None


# --- results ------------------------------------------------------------------------------------

def _stats(run: _Run) -> dict[str, Any]:
    progress = run.progress
    distinct = sum(progress.sizes)
    parquet = sum(run.run_dir.parquet_bytes(k) for k in range(len(progress.sizes)))
    stats = search_stats(distinct, progress.generated, run.depth, run.elapsed(),
                         run.kernel.layout, run.kernel.n_actions)
    stats.update({
        "parquet_bytes": parquet,
        "parquet_bytes_per_state": round(parquet / distinct, 2) if distinct else 0.0,
        "partitions": run.run_dir.partitions,
        "run_dir": str(run.run_dir.path),
    })
    return stats


def _coverage(run: _Run) -> list[dict]:
    return coverage_rows(run.machine, run.progress.enabled, run.progress.new_states)


def _finish(run: _Run, complete: bool) -> CheckResult:
    return CheckResult("spark", HOLDS, None, _stats(run), _coverage(run), complete=complete)


def _path(run: _Run, depth: int, fp: int) -> Trace:
    """The canonical path to state `fp` of level `depth`: parent columns read back
    level by level (one row each), then the actions replayed from the initial state."""
    actions: list[int] = []
    levels = run.spark.table(run.table)
    for d in range(depth, 0, -1):
        rows = levels.where((F.col("level") == d) & (F.col("fp") == _signed(fp))) \
            .select("parent", "action").collect()
        if len(rows) != 1:
            raise CheckerError(f"run directory {run.run_dir.path}: level {d} holds "
                               f"{len(rows)} rows for state {fp:#018x}, expected one")
        actions.append(rows[0]["action"])
        fp = int(np.int64(rows[0]["parent"]).view(U64))
    index = int(np.searchsorted(run.init_fps, U64(fp)))  # sorted, distinct
    return replay(run.machine, run.init_states[index], actions[::-1])


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _report(run: _Run, found: _Found) -> CheckResult:
    """The counterexample and its message, worded as every engine words them."""
    trace = _path(run, found.depth, found.fp)
    outcome, violation = explain(run.machine, trace, found.kind, found.prop, found.action,
                                 "spark")
    return CheckResult("spark", outcome, violation, _stats(run), _coverage(run))

