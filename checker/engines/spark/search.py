"""Breadth-first search on Spark: the local BFS, split into buckets by fingerprint.

Spark schedules the work; the data lives in files under the run directory, which
the driver and every executor see alike (`run_dir.py`): level K's states as one
sorted Parquet file per bucket, and each bucket's visited fingerprints as a few
sorted runs (`visited_runs.py`). One Spark job per level, T tasks per stage, each
taking a range of the N buckets (T grows with the level, up to N):

    task ids 0..T-1 -> expand_buckets     read level K's files, successors, map-side
                                          deduped, written to the task's exchange file
                                          grouped by target bucket (`exchange.py`)
      -> partitionBy(T)                   the only shuffle: each expand task's summary
      -> dedupe_buckets                   per bucket: its successors from every exchange
                                          file, canonical generators, visited runs,
                                          invariants; writes level K+1's file and the
                                          bucket's new run
      -> collect()                        one small summary per task and bucket

A level whose frontier fits one task (T = 1) gains nothing from Spark, whose job
would cost more than the level's work: the driver runs it itself, with the same
functions and files (`one_task_level`; `driver_levels=False` sends it to Spark).

The visited set is never shuffled, broadcast or collected, and nothing goes
through Spark SQL's row format (`docs/decisions/0013-spark-files-not-tables.md`).
That is the file exchange; when the executors do not see the run directory, the
shuffle exchange (`carried.py`) keeps the same levels and records with the visited
set in Spark's cache, the successors in Spark's shuffle, and only the driver writing.
The driver only receives per-task summaries and, for a counterexample, reads one
row per step.

Results equal the local engine's (`bfs.py`): the same counts and coverage, and
the same canonical counterexample: a new state's parent is its generator with
the smallest (parent fingerprint, action id), and the violation reported is
the shallowest, then the smallest such key (`docs/decisions/0002`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from checker.backends.scalar import ScalarMachine
from checker.engines.durable import sync_files, write_bytes
from checker.engines.explicit.successors import Kernel
from checker.engines.identity import search_identity
from checker.engines.report import explain, replay
from checker.engines.result import (
    HOLDS,
    CheckResult,
    coverage_rows,
    search_stats,
    symmetry_moved,
)
from checker.engines.scope import refuse_unchecked
from checker.engines.spark import carried, visited_runs
from checker.engines.spark import run_dir as spark_run_dir
from checker.engines.spark.levels import (
    DedupeSummary,
    ExpandSummary,
    LevelTask,
    MachineRef,
    States,
    dedupe_buckets,
    expand_buckets,
    kernel_for,
    one_task_level,
    read_level,
    write_bucket,
    write_level,
)
from checker.engines.spark.liveness import check_liveness
from checker.engines.spark.options import EXCHANGES, SparkOptions, is_remote, reduces_by_symmetry
from checker.engines.spark.remote import Remote
from checker.engines.spark.run_dir import FILES, SHUFFLE, LevelCounts, Progress, RunDir, level_file
from checker.engines.spark.session import (
    INTERRUPTED,
    check_master,
    executor_wait,
    first_job,
    first_line,
    spark_session,
)
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.outputs import check_folder_takes_files
from checker.packing import U64, Layout
from checker.progress import Heartbeat
from checker.symmetry.canonical import Canonicalizer, reduce_by_orbits
from checker.symmetry.concrete import concrete_trace
from checker.symmetry.verify import refuse_a_wrong_declaration
from checker.traces.trace import Trace

ENGINE_VERSION = "spark-4"
MIN_PARTITIONS = 8  # default: 2 per core, at least this many
MAX_PARTITIONS = 1 << 16  # bucket numbers travel as uint16
STATES_PER_TASK = 1 << 18  # a frontier this size is worth one more task per stage
VISITED_PER_TASK = 1 << 24  # shuffle exchange: a task's share of the visited set, at most

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
    """One level's merged summaries, and the files its tasks wrote."""

    expand: ExpandSummary
    dedupe: DedupeSummary
    seconds: float
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # level file -> description
    runs: dict[int, int] = field(default_factory=dict)  # bucket -> bytes of its new run
    tasks: int = 0  # per stage; 0: run in the driver (`one_task_level`)
    data: dict[int, bytes] = field(default_factory=dict)  # bucket -> level file (shuffle)


@dataclass
class _Run:
    machine: Machine
    kernel: Kernel
    ref: MachineRef
    options: SparkOptions
    spark: SparkSession
    run_dir: RunDir
    progress: Progress
    init_states: list[tuple[int, ...]]
    init_fps: np.ndarray
    started: float
    canon: Canonicalizer | None = None  # set when the search stores one state per orbit
    carried: Any = None  # the shuffle exchange's buckets after the last durable level (an RDD)
    ranges: carried.BucketRanges | None = None  # ... and how they are partitioned
    next_carried: Any = None  # ... and after the level being built

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
    INTERRUPTED.clear()
    ref = MachineRef.of(machine, reduces_by_symmetry(machine, options))
    identity = _identity(machine, options)
    A = len(machine.actions)
    path = options.run_dir or spark_run_dir.default_path(options.label or machine.spec_name)
    url = str(path) if is_remote(str(path)) else None  # reached through Spark's JVM
    if options.resume and url is None:  # verified before Spark starts: a damaged level
        run_dir, progress = spark_run_dir.resume(path, identity, options.partitions, A)
    if spark is None:
        if options.progress is not None:  # the JVM takes seconds: say so from the first
            options.progress(f"starting Spark on {options.master}")
        with Heartbeat(options.progress, f"starting Spark on {options.master}"):
            spark = spark_session(options.master, options.driver_memory,
                                  log=Path(options.log_file) if options.log_file else None)
        if options.progress is not None:
            options.progress(f"Spark is up: {spark.sparkContext.defaultParallelism} cores "
                             f"on {options.master}")
    partitions = options.partitions or max(MIN_PARTITIONS,
                                           2 * spark.sparkContext.defaultParallelism)
    with contextlib.ExitStack() as stack:
        if url is not None:
            local = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctmc-run-")))
            run_dir, progress = _remote_run(spark, url, local / "run", options, identity,
                                            partitions, A)
        elif not options.resume:
            run_dir = spark_run_dir.create(path, identity, partitions)
            progress = Progress.none_yet(A)
        kernel = Kernel(machine)
        canon = None
        if ref.symmetry:
            refuse_a_wrong_declaration(machine)
            canon = reduce_by_orbits(kernel)
        init_states, init_fps = _initial_states(machine, kernel, canon)
        run = _Run(machine, kernel, ref, options, spark, run_dir, progress, init_states,
                   init_fps, time.perf_counter(), canon)
        try:
            try:
                _prepare(run)
            except CheckerError:
                if not options.resume:  # refused before level 0: leave nothing behind
                    run_dir.abandon()
                raise
            run.started = time.perf_counter()  # the clock starts once Spark is up and warm
            return _search(run)
        except (Py4JError, PySparkException):
            if INTERRUPTED.is_set():  # a py4j call Ctrl-C broke, wherever the driver was
                raise KeyboardInterrupt from None
            raise


def _remote_run(spark: SparkSession, url: str, local: Path, options: SparkOptions,
                identity: dict[str, Any], partitions: int, n_actions: int
                ) -> tuple[RunDir, Progress]:
    """A run directory at `url` (`remote.py`), worked on in the local folder `local`:
    a new one, or the run there downloaded and resumed."""
    remote = Remote(spark, url)
    try:
        if options.resume:
            with Heartbeat(options.progress, f"reading the run directory {url}"):
                remote.download(local)
                run_dir, progress = spark_run_dir.resume(local, identity, options.partitions,
                                                         n_actions)
                remote.prune(local)
        else:
            remote.start()
            run_dir = spark_run_dir.create(local, identity, partitions)
            progress = Progress.none_yet(n_actions)
    except CheckerError as exc:  # name the run directory as the user did
        raise CheckerError(str(exc).replace(str(local.resolve()), url)
                           .replace(str(local), url)) from None
    run_dir.remote = remote
    return run_dir, progress


def preflight(machine: Machine, options: SparkOptions) -> None:
    """Refuse bad input (a partition count, a master, a run directory) before Spark
    starts or anything is written."""
    if options.partitions is not None and options.partitions < 1:
        raise CheckerError(f"--partitions must be positive, got {options.partitions}")
    if options.partitions is not None and options.partitions > MAX_PARTITIONS:
        raise CheckerError(f"--partitions is at most {MAX_PARTITIONS:,} (one file per bucket "
                           f"and level), got {options.partitions:,}")
    if options.resume and not options.run_dir:
        raise CheckerError("resuming a Spark run needs its run directory")
    refuse_unchecked(machine, "spark", options.max_depth)
    Layout(machine)  # every variable fits a 64-bit word
    MachineRef.of(machine)
    if reduces_by_symmetry(machine, options):
        refuse_a_wrong_declaration(machine)
    check_master(options.master)
    executor_wait()  # a cluster's time to give executors: a number of seconds
    if options.exchange not in EXCHANGES:
        raise CheckerError(f"--exchange is one of {', '.join(EXCHANGES)}, got {options.exchange!r}")
    url = options.run_dir if options.run_dir and is_remote(options.run_dir) else None
    if url is not None and options.exchange == FILES:
        raise CheckerError(f"run directory {url}: the executors cannot read a URL as a path; "
                           "a run there uses --exchange shuffle")
    if (options.exchange == SHUFFLE or url is not None) and machine.liveness:
        raise CheckerError(_NO_LIVENESS)
    if url is not None:  # its filesystem is reached once Spark is up
        return
    if options.resume:
        assert options.run_dir  # refused above when missing
        recorded = spark_run_dir.inspect(options.run_dir, _identity(machine, options),
                                         options.partitions).exchange
        if recorded not in (None, options.exchange) and options.exchange != "auto":
            raise CheckerError(f"cannot resume {options.run_dir} with --exchange "
                               f"{options.exchange}: it was run with --exchange {recorded}")
    elif options.run_dir:
        spark_run_dir.check_new(options.run_dir)
        check_folder_takes_files(spark_run_dir.local_folder(options.run_dir), "--run-dir")


_NO_LIVENESS = ("liveness on Spark reads the levels in the executors, so it needs the file "
                "exchange (a run directory every executor sees); check liveness with "
                "--engine bfs, or drop --exchange shuffle")


def _identity(machine: Machine, options: SparkOptions) -> dict[str, Any]:
    """What a run directory must have been written for, to be resumed."""
    identity = search_identity(machine, ENGINE_VERSION, options.label, options.deadlock,
                               options.max_depth)
    if reduces_by_symmetry(machine, options):
        identity["symmetry"] = [s.name for s in machine.scalarsets]
    return identity



def _search(run: _Run) -> CheckResult:
    options = run.options
    if run.depth < 0:
        found = _initial_level(run)
        if found is not None:
            return _report(run, found)
    elif run.run_dir.exchange == SHUFFLE:  # resumed: the executors' buckets, rebuilt
        with Heartbeat(options.progress, f"sending the buckets of levels 0-{run.depth} to "
                                         "the executors"):
            _carry(run, carried.resumed(run.run_dir, run.kernel, run.depth))
    while True:
        if options.max_depth is not None and run.depth >= options.max_depth:
            return _finish(run, complete=False)
        level = _expand_level(run)
        found = _violation(run, level)
        if found is not None or not level.dedupe.count:
            progress = run.progress  # the level's expansion counts, as the local engine's do
            progress.enabled = (np.array(progress.enabled) + level.expand.enabled).tolist()
            progress.generated += level.expand.generated
            if progress.moved is not None:
                progress.moved += level.expand.moved
            run.run_dir.discard(run.depth + 1)  # empty, or past a violation: never recorded
            if run.next_carried is not None:
                run.next_carried.unpersist()
            if found is not None:
                return _report(run, found)
            result = _finish(run, complete=True)
            return check_liveness(run, result) if run.machine.liveness else result
        _commit_level(run, level)


# --- Spark -------------------------------------------------------------------------------

def _prepare(run: _Run) -> None:
    """Ship the code to executors, choose the exchange (files when every executor task
    sees the run directory), and have their Python workers (which Spark reuses) build
    the kernel before the first level."""
    context = run.spark.sparkContext
    context.addPyFile(_code_archive(run.ref))
    root = str(run.run_dir.path)
    tasks = max(2, context.defaultParallelism)
    try:
        blind = first_job(context, lambda: context.parallelize(range(tasks), tasks)
                          .filter(partial(_cannot_read, run.ref, root)).count(),
                          "ctmc: can the executors read the run directory?",
                          run.options.progress)
    except (Py4JError, PySparkException) as exc:
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt from None
        raise CheckerError(f"Spark could not run a task on {run.options.master} "
                           f"({_cause(exc)})") from None
    chosen = run.run_dir.exchange or run.options.exchange
    if run.run_dir.remote is not None:  # the executors never see a URL
        chosen = SHUFFLE
    if chosen == "auto":
        chosen = SHUFFLE if blind else FILES
        if blind:
            _say(run, f"{blind} of {tasks} executor tasks cannot see {root}: successors go "
                      "through Spark's shuffle and the driver writes the levels there")
    if chosen == FILES and blind:
        raise CheckerError(f"run directory {root}: {blind} of {tasks} executor tasks cannot "
                           "read it; give a folder that the driver and every executor see at "
                           "the same path (a shared or network file system), or use "
                           "--exchange shuffle")
    if chosen == SHUFFLE and run.machine.liveness:
        raise CheckerError(_NO_LIVENESS)
    if run.run_dir.exchange is None:
        run.run_dir.choose_exchange(chosen)


def _cannot_read(ref: MachineRef, root: str, _: int) -> bool:
    kernel_for(ref)
    return not os.path.isfile(os.path.join(root, spark_run_dir.RUN_FILE))


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

def _initial_states(machine: Machine, kernel: Kernel, canon: Canonicalizer | None
                    ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Initial states within the constraints (their representatives, under symmetry),
    distinct and sorted by fingerprint (as `bfs._initial_level` orders them)."""
    scalar = ScalarMachine(machine)
    states = [s for s in machine.init_states if scalar.within_constraints(s)]
    if not states:
        raise CheckerError(f"spec {machine.spec_name}: no initial state satisfies the constraints")
    layout = kernel.layout
    words = layout.pack_states(states)
    if canon is not None:
        words = canon.canonical(words)
        states = [layout.unpack(tuple(int(w[i]) for w in words)) for i in range(len(states))]
    fps = layout.fingerprints(words)
    order = np.argsort(fps, kind="stable")
    fps = fps[order]
    keep = np.concatenate(([True], fps[1:] != fps[:-1]))
    return [states[i] for i in order[keep]], fps[keep]


def _initial_level(run: _Run) -> _Found | None:
    """Write level 0 (computed here, on the driver) and check its invariants."""
    kernel, layout = run.kernel, run.kernel.layout
    words = layout.pack_states(run.init_states)
    n = len(run.init_fps)
    first, undefined = kernel.violated_properties(words)
    bad = np.flatnonzero((first >= 0) | undefined)
    if len(bad):  # the smallest fingerprint, as the local engine chooses
        i = int(bad[0])
        kind = "error" if undefined[i] else "invariant"
        prop = "" if undefined[i] else kernel.property_names[int(first[i])]
        return _Found(kind, 0, int(run.init_fps[i]), None, prop)
    states = States(run.init_fps, words, np.zeros(n, dtype=U64), np.full(n, -1, dtype=np.int64))
    buckets = visited_runs.bucket_of(run.init_fps, run.run_dir.partitions, layout.exact)
    root = run.run_dir.path
    files, runs = {}, {}
    shuffle = run.run_dir.exchange == SHUFFLE
    shares = [states.take(np.flatnonzero(buckets == b), layout.exact)
              for b in range(run.run_dir.partitions)]
    unsynced: list[Path] = []
    for b, share in enumerate(shares):
        if shuffle:  # the executors keep the visited set
            file = write_level(level_file(root, 0, b), share, layout.exact, unsynced)
        else:
            file, (_, runs[b]) = write_bucket(root, 0, b, share, layout.exact, unsynced)
        files[level_file(root, 0, b).name] = file
    sync_files(unsynced)
    counts = LevelCounts(n, moved=0, timings={"seconds": round(_lap(run), 3),
                                     "bytes": sum(f["bytes"] for f in files.values())})
    run.run_dir.record(0, counts, files, runs)
    run.progress.add(counts)
    if shuffle:
        _carry(run, carried.first_level(shares))
    _say(run, f"level   0 | new {n:>12,} | total {n:>13,}")
    return None


def level_job(run: _Run, task: LevelTask) -> Any:
    """The RDD of level K+1's summaries (lazy): see the module docstring."""
    tasks = run.spark.sparkContext.parallelize(range(task.tasks), task.tasks)
    successors = tasks.mapPartitionsWithIndex(partial(expand_buckets, task))
    return successors.partitionBy(task.tasks, task.task_of) \
        .mapPartitionsWithIndex(partial(dedupe_buckets, task))


def _cause(exc: BaseException) -> str:
    """What failed in a Spark job, in one line: the Python exception an executor raised
    (the last line of its traceback) when there is one, else the error's first line."""
    raised = [line.strip() for line in str(exc).splitlines()
              if _RAISED.match(line.strip())]
    return (raised[-1] if raised else first_line(exc))[:300]


_RAISED = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)|[\w.]*Kill\w*)(: |$)")


def _tasks(run: _Run) -> int:
    """Tasks per stage for the next level: one per STATES_PER_TASK frontier states, in
    whole waves over the cores, at most one per bucket. With the shuffle exchange, the
    partitions the buckets are carried in (`_shuffle_tasks`)."""
    if run.ranges is not None:
        return run.ranges.partitions
    n = run.run_dir.partitions
    wanted = -(-run.progress.sizes[-1] // STATES_PER_TASK)
    if wanted <= 1:
        return 1
    cores = run.spark.sparkContext.defaultParallelism
    return min(n, -(-wanted // cores) * cores)


def _shuffle_tasks(run: _Run) -> int:
    """Partitions for the carried buckets: one per STATES_PER_TASK frontier states and
    per VISITED_PER_TASK visited ones, in whole waves over the cores, at most one per
    bucket, never fewer than now (each change moves the buckets)."""
    sizes, n = run.progress.sizes, run.run_dir.partitions
    wanted = max(1, -(-sizes[-1] // STATES_PER_TASK), -(-sum(sizes) // VISITED_PER_TASK))
    cores = run.spark.sparkContext.defaultParallelism
    now = run.ranges.partitions if run.ranges is not None else 0
    return max(now, min(n, -(-wanted // cores) * cores))


def _carry(run: _Run, buckets: list[carried.Bucket]) -> None:
    """Send the buckets (after level 0, or rebuilt on resume) to the executors."""
    run.ranges = carried.BucketRanges(run.run_dir.partitions, _shuffle_tasks(run))
    run.carried = carried.carry(run.spark.sparkContext, buckets, run.ranges)


def _grow_partitions(run: _Run) -> None:
    """More partitions for the carried buckets, when the levels outgrow them."""
    assert run.ranges is not None
    tasks = _shuffle_tasks(run)
    if tasks != run.ranges.partitions:
        run.ranges = carried.BucketRanges(run.run_dir.partitions, tasks)
        run.carried = carried.repartition(run.carried, run.ranges)


def _expand_level(run: _Run) -> _Level:
    started = time.perf_counter()
    n = run.run_dir.partitions
    run.spark.sparkContext.setJobDescription(f"ctmc: level {run.depth + 1}")
    in_driver = run.options.driver_levels and run.run_dir.exchange == FILES \
        and _tasks(run) == 1
    status = f"level {run.depth + 1:>3} | in the driver" if in_driver \
        else partial(_stages, run, run.depth + 1)
    try:
        with Heartbeat(run.options.progress, status):
            if run.ranges is not None:
                _grow_partitions(run)
            task = LevelTask(run.ref, str(run.run_dir.path), run.depth, n, _tasks(run),
                             run.options.deadlock, run.options.batch_size,
                             run.options.dedup_budget)
            if run.run_dir.exchange == SHUFFLE:
                summaries, data = _shuffle_level(run, task)
            elif in_driver:
                summaries, data = one_task_level(task, run.kernel), {}
            else:
                summaries, data = level_job(run, task).collect(), {}
    except (Py4JError, PySparkException) as exc:
        if INTERRUPTED.is_set():  # Ctrl-C cancelled the job: an interrupt, not a failure
            raise KeyboardInterrupt from None
        raise CheckerError(f"the Spark job building level {run.depth + 1} failed "
                           f"({_cause(exc)}); "
                           f"levels 0-{run.depth} are kept in {run.run_dir.location}: resume "
                           f"with --resume {run.run_dir.location}") from None
    A = len(run.machine.actions)
    level = _Level(ExpandSummary(np.zeros(A, dtype=np.int64)),
                   DedupeSummary(np.zeros(A, dtype=np.int64)), 0.0, data=data)
    expand, dedupe = level.expand, level.dedupe
    seen: dict[str, set[int]] = {"expand": set(), "dedupe": set()}
    for step, bucket, s in sorted(summaries, key=lambda item: item[:2]):
        seen[step].add(bucket)
        if step == "expand":
            expand.enabled += s.enabled
            expand.generated += s.generated
            expand.seconds += s.seconds
            expand.write_seconds += s.write_seconds
            expand.exchanged += s.exchanged
            expand.exchange_bytes += s.exchange_bytes
            expand.moved += s.moved
            expand.deadlock = _smallest(expand.deadlock, s.deadlock)
            expand.guard_error = _smallest(expand.guard_error, s.guard_error)
            expand.error = _smallest(expand.error, s.error)
            expand.step = _smallest(expand.step, s.step)
        else:
            dedupe.new_states += s.new_states
            dedupe.count += s.count
            dedupe.read_seconds += s.read_seconds
            dedupe.seconds += s.seconds
            dedupe.write_seconds += s.write_seconds
            dedupe.bad = _smallest(dedupe.bad, s.bad)
            level.files[level_file(run.run_dir.path, run.depth + 1, bucket).name] = s.file
            if run.run_dir.exchange == FILES:
                level.runs[bucket] = s.run[1]
    expected = {"expand": task.tasks, "dedupe": n}
    for step, buckets in seen.items():
        if len(buckets) != expected[step] or \
                len(buckets) != sum(x[0] == step for x in summaries):
            raise CheckerError(f"the Spark job building level {run.depth + 1} returned "
                               f"{len(buckets)} {step} summaries, not {expected[step]}")
    level.tasks = 0 if in_driver else task.tasks
    level.seconds = time.perf_counter() - started
    return level


def _shuffle_level(run: _Run, task: LevelTask) -> tuple[list[tuple[str, int, Any]],
                                                         dict[int, bytes]]:
    """The shuffle exchange's level job (`carried.py`): the summaries, as the file
    exchange's job returns them, and each bucket's level file as bytes."""
    assert run.ranges is not None
    context = run.spark.sparkContext
    reports = context.accumulator({}, carried.Reports())
    run.next_carried = carried.next_level(task, run.carried, run.ranges, reports)
    carried.build(run.next_carried)
    summaries: list[tuple[str, int, Any]] = []
    data = {}
    for bucket, (dedupe, expanded, file) in sorted(reports.value.items()):
        summaries += [("expand", bucket, s) for s in expanded]
        summaries.append(("dedupe", bucket, dedupe))
        data[bucket] = file
    return summaries, data


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
    """Make level K+1 durable: its tasks wrote its files, now record them, then drop
    the visited runs its new runs replaced."""
    depth = run.depth + 1
    d, e = level.dedupe, level.expand
    for bucket, data in level.data.items():  # the shuffle exchange: the driver writes
        path = level_file(run.run_dir.path, depth, bucket)
        path.parent.mkdir(exist_ok=True)
        write_bytes(path, data)
    counts = LevelCounts(d.count, e.generated, e.enabled.tolist(), d.new_states.tolist(), {
        "seconds": round(_lap(run), 3), "level_seconds": round(level.seconds, 3),
        "tasks": level.tasks,
        "expand_task_seconds": round(e.seconds, 3),
        "exchange_task_seconds": round(e.write_seconds + d.read_seconds, 3),
        "dedupe_task_seconds": round(d.seconds, 3),
        "write_task_seconds": round(d.write_seconds, 3),
        "exchanged": e.exchanged, "exchange_bytes": e.exchange_bytes,
        "bytes": sum(f["bytes"] for f in level.files.values())}, e.moved)
    run.run_dir.record(depth, counts, level.files, level.runs)
    if run.run_dir.exchange == SHUFFLE:
        run.carried.unpersist()
        run.carried, run.next_carried = run.next_carried, None
    else:
        run.run_dir.drop_runs(visited_runs.superseded(depth + 1))
        run.run_dir.drop_exchange(depth)
    progress = run.progress
    progress.add(counts)
    total = sum(progress.sizes)
    rate = total / progress.seconds if progress.seconds > 0 else 0.0
    _say(run, f"level {depth:>3} | new {d.count:>12,} | total {total:>13,} | "
              f"{rate:>10,.0f} states/s | {level.seconds:6.2f} s; "
              f"{'in the driver' if level.tasks == 0 else 'task-s'}: expand "
              f"{e.seconds:.2f}, exchange {e.write_seconds + d.read_seconds:.2f}, dedupe "
              f"{d.seconds:.2f}, write {d.write_seconds:.2f}")


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
    parquet = sum(int(level.get("bytes", 0)) for level in progress.levels)
    stats = search_stats(distinct, progress.generated, run.depth, run.elapsed(),
                         run.kernel.layout, run.kernel.n_actions)
    stats.update({
        "parquet_bytes": parquet,
        "parquet_bytes_per_state": round(parquet / distinct, 2) if distinct else 0.0,
        "partitions": run.run_dir.partitions,
        "run_dir": run.run_dir.location,
        "exchange": run.run_dir.exchange,
    })
    if run.canon is not None:
        stats["symmetry"] = (f"{run.canon.group.size:,} permutations of "
                             f"{', '.join(s.name for s in run.machine.scalarsets)}; one "
                             f"state per orbit ({run.canon.method})")
        if run.progress.moved is not None:  # unknown when resumed from older records
            stats.update(symmetry_moved(run.progress.moved, run.progress.generated))
    return stats


def _coverage(run: _Run) -> list[dict]:
    return coverage_rows(run.machine, run.progress.enabled, run.progress.new_states)


def _finish(run: _Run, complete: bool) -> CheckResult:
    return CheckResult("spark", HOLDS, None, _stats(run), _coverage(run), complete=complete)


def _path(run: _Run, depth: int, fp: int) -> Trace:
    """The canonical path to state `fp` of level `depth`: parent columns read back
    level by level (one row each, from the state's bucket), then the actions
    replayed from the initial state."""
    actions: list[int] = []
    n = run.run_dir.partitions
    for d in range(depth, 0, -1):
        key = np.array([fp], dtype=U64)
        bucket = int(visited_runs.bucket_of(key, n, run.kernel.layout.exact)[0])
        path = level_file(run.run_dir.path, d, bucket)
        rows = read_level(path, run.kernel, ["fp", "parent", "action"])
        at = int(np.searchsorted(rows.fps, key[0]))
        if at == len(rows.fps) or rows.fps[at] != key[0]:
            raise CheckerError(f"{path}: state {fp:#018x} is missing from level {d}")
        actions.append(int(rows.actions[at]))
        fp = int(rows.parents[at])
    index = int(np.searchsorted(run.init_fps, U64(fp)))  # sorted, distinct
    if run.canon is not None:  # a path of representatives, lifted to a concrete trace
        return concrete_trace(run.kernel, run.canon, run.init_states[index], actions[::-1])
    return replay(run.machine, run.init_states[index], actions[::-1])


def _report(run: _Run, found: _Found) -> CheckResult:
    """The counterexample and its message, worded as every engine words them."""
    trace = _path(run, found.depth, found.fp)
    outcome, violation = explain(run.machine, trace, found.kind, found.prop, found.action,
                                 "spark")
    return CheckResult("spark", outcome, violation, _stats(run), _coverage(run))

