"""The Spark engine gives the local BFS's results: counts, coverage, counterexamples.

Spark is slow to start, so one `local[2]` session (`conftest.py`) serves most tests; the
tests with two executor processes (`local-cluster`, one of whose Python workers is killed
mid level) come last, with their own session. Java 17+ is required: without it these
tests fail, saying so (they are never skipped).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from checker.engines.explicit.bfs import BfsOptions
from checker.engines.explicit.bfs import check as local_check
from checker.engines.result import CheckResult
from checker.engines.spark import run_dir as spark_run_dir
from checker.engines.spark import visited_runs
from checker.engines.spark.levels import LevelTask, MachineRef, States, kernel_for, level_bytes
from checker.engines.spark.search import SparkOptions, level_job
from checker.engines.spark.search import check as spark_check
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.models import build_machine, load_model
from checker.packing import Layout
from tests.conftest import LOCAL, start_session
from tests.hadoop_stores import spark_defaults
from tests.model_folders import one_error_line, run_cli
from tests.specs.counter import COUNTER
from tests.specs.grid import GRID, GRID_STEP
from tests.specs.multi_init import MULTI_INIT
from tests.specs.probe import PROBE
from tests.test_bfs import GRID as PADDED_GRID
from tests.test_bfs import OVERFLOW

REPO = Path(__file__).resolve().parent.parent

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# The small models of the suite; bench/spark_vs_local.py --suite compares every model.
# (mutation_heap_ignores_tracked runs through the command line below.)
MODELS = ["tracker_small", "mutation_carry_own_bucket_ts", "mutation_no_forward_above_bucket",
          "mutation_reset_cur_on_prev_exit"]
CLUSTER = "local-cluster[2,1,1024]"

# --- helpers ---------------------------------------------------------------------------

def run_spark(machine: Machine, run_dir: Path, session, deadlock: bool = False,
              **options) -> CheckResult:
    options.setdefault("partitions", 2)
    options.setdefault("driver_levels", False)  # the executors run every level
    return spark_check(machine, SparkOptions(run_dir=str(run_dir), deadlock=deadlock,
                                             label="test", **options), spark=session)


def assert_same(local: CheckResult, spark: CheckResult) -> None:
    assert spark.outcome == local.outcome
    assert spark.complete == local.complete
    for key in ("distinct_states", "generated", "diameter", "state_bits", "fingerprint",
                "collision_probability", "action_instances", "liveness_states",
                "liveness_edges"):
        assert spark.stats.get(key) == local.stats.get(key), key
    assert spark.coverage == local.coverage
    assert (spark.violation is None) == (local.violation is None)
    if local.violation is not None:
        a, b = local.violation, spark.violation
        assert (b.kind, b.name, b.message) == (a.kind, a.name, a.message)
        assert b.trace.states == a.trace.states
        assert [x and x.label for x in b.trace.actions] == [x and x.label for x in a.trace.actions]
        assert b.trace.loop == a.trace.loop
        assert (b.trace.loop_action and b.trace.loop_action.label) == \
            (a.trace.loop_action and a.trace.loop_action.label)


def level_records(run_dir: Path) -> list[dict]:
    """Each durable level's record, in order from level 0."""
    records = sorted(run_dir.glob("level=*/_ctmc_level.json"),
                     key=lambda p: int(p.parent.name.split("=")[1]))
    return [json.loads(p.read_text()) for p in records]


def recorded_sizes(run_dir: Path) -> list[int]:
    """The state counts of the durable levels, from their records."""
    return [record["counts"]["states"] for record in level_records(run_dir)]


def model_machine(name: str) -> tuple[Machine, bool]:
    model = load_model(name, MODELS_DIR)
    return build_machine(model), model.engine["deadlock"]


# --- same results as the local engine ------------------------------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_models_match_the_local_engine(name, spark, tmp_path):
    machine, deadlock = model_machine(name)
    local = local_check(machine, BfsOptions(deadlock=deadlock))
    assert_same(local, run_spark(machine, tmp_path / "run", spark, deadlock))


def _scalarset_models(most: int) -> list[str]:
    """The models whose spec declares scalarsets, with at most `most` orbits."""
    import tomllib

    out = []
    for path in sorted(MODELS_DIR.glob("*.toml")):
        orbits = tomllib.loads(path.read_text()).get("expect", {}).get("orbits")
        if orbits is not None and orbits <= most:
            out.append(path.stem)
    return out


# every scalarset model of up to 1,000 orbits, and one of the log-driven spec's (all the
# models up to 11,000 orbits agreed when this was written: 13 of them)
@pytest.mark.parametrize("name", _scalarset_models(1_000) + ["log_driven_tiny"])
def test_under_symmetry_spark_stores_the_local_engines_orbits(name, spark, tmp_path):
    """One state per orbit, by the local engine's canonical form: the same counts,
    coverage and (lifted, concrete) counterexample."""
    machine, deadlock = model_machine(name)
    local = local_check(machine, BfsOptions(deadlock=deadlock, symmetry=True))
    reduced = run_spark(machine, tmp_path / "run", spark, deadlock, symmetry=True)
    assert_same(local, reduced)
    assert reduced.stats["symmetry"] == local.stats["symmetry"]
    assert reduced.stats["symmetry_moved"] == local.stats["symmetry_moved"] > 0
    assert reduced.stats["distinct_states"] == load_model(name, MODELS_DIR).expect_orbits


def test_under_symmetry_spark_runs_past_six_members(spark, tmp_path):
    machine = build_machine(load_model("tracker_small", MODELS_DIR),
                            {"requests": "7", "max_now": "2", "max_ts": "1"})
    local = local_check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert_same(local, run_spark(machine, tmp_path / "run", spark, symmetry=True))
    assert local.stats["distinct_states"] == 5_410


SPECS = {
    # a walk that revisits states (the visited runs drop them) with equally short traces
    "grid": (GRID, {"n": 3, "bx": 3, "by": 2}, False),
    "grid_step": (GRID_STEP, {"n": 3, "bx": 2, "by": 2}, False),
    "deadlock": (COUNTER, {"n": 3}, True),
    "several_initial_states": (MULTI_INIT, {"n": 3}, True),
    "hashed_fingerprints": (PADDED_GRID, {"n": 3, "pad": 1, "bad_x": 2, "bad_y": 3}, False),
    "value_outside_type": (OVERFLOW, {}, False),
    "guard_out_of_range": (PROBE, {"where": "guard"}, False),
    "invariant_out_of_range": (PROBE, {"where": "invariant"}, False),
}


@pytest.mark.parametrize("case", SPECS)
def test_specs_match_the_local_engine(case, spark, tmp_path):
    spec, params, deadlock = SPECS[case]
    machine = spec.instantiate(params)
    local = local_check(machine, BfsOptions(deadlock=deadlock))
    assert_same(local, run_spark(machine, tmp_path / "run", spark, deadlock, partitions=3))


def test_a_spec_that_builds_differently_in_the_executors_is_refused(spark, tmp_path):
    """Its action ids and fingerprints would name other instances and states there."""
    from tests.specs.executor_dependent import EXECUTOR_DEPENDENT

    with pytest.raises(CheckerError, match="builds a different machine in a Spark executor"):
        run_spark(EXECUTOR_DEPENDENT.instantiate({}), tmp_path / "run", spark)


def test_depth_bound_marks_the_result_incomplete(spark, tmp_path):
    machine = GRID.instantiate({"n": 5, "bx": 9, "by": 9})
    local = local_check(machine, BfsOptions(deadlock=False, max_depth=4))
    assert_same(local, run_spark(machine, tmp_path / "run", spark, max_depth=4))


def test_each_level_is_one_job_with_one_shuffle(spark, tmp_path):
    """Successors are shuffled once per level; the visited set never leaves its files."""
    machine = GRID.instantiate({"n": 3, "bx": 9, "by": 9})
    lineages: list[str] = []
    import checker.engines.spark.search as engine

    def spy(run, task):
        job = level_job(run, task)
        lineages.append(job.toDebugString().decode())
        return job

    original, engine.level_job = engine.level_job, spy
    try:
        run_spark(machine, tmp_path / "run", spark)
    finally:
        engine.level_job = original
    assert lineages
    for lineage in lineages:
        assert lineage.count("ShuffledRDD") == 1, lineage


@pytest.mark.parametrize("states_per_task", [1, 1 << 18])
def test_any_number_of_tasks_per_level_gives_the_same_result(states_per_task, spark, tmp_path,
                                                              monkeypatch):
    """One task per bucket, or every bucket in one task (how small levels run)."""
    import checker.engines.spark.search as engine

    monkeypatch.setattr(engine, "STATES_PER_TASK", states_per_task)
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    result = run_spark(machine, tmp_path / "run", spark, partitions=5)
    assert_same(local, result)
    tasks = [json.loads(p.read_text())["counts"]["timings"]["tasks"]
             for p in sorted((tmp_path / "run").glob("level=*/_ctmc_level.json"))
             if not p.parent.name.endswith("=0")]
    assert set(tasks) == ({1} if states_per_task > 1 else {1, 2, 4, 5})


@pytest.mark.parametrize("name", MODELS)
def test_small_levels_run_in_the_driver_write_the_executors_files(name, spark, tmp_path,
                                                                  monkeypatch):
    """A level that fits one task runs in the driver (no Spark job): the same result as
    the local engine, and the same files, byte for byte, as when the executors run it.
    Every file a level wrote was synced (once the level's buckets were all written)."""
    import checker.engines.spark.levels as levels

    synced: set[Path] = set()
    sync = levels.sync_files

    def recording(paths):
        synced.update(paths)
        sync(paths)

    monkeypatch.setattr(levels, "sync_files", recording)
    machine, deadlock = model_machine(name)
    local = local_check(machine, BfsOptions(deadlock=deadlock))
    driver = run_spark(machine, tmp_path / "driver", spark, deadlock, driver_levels=True,
                       partitions=8)
    written = {p for p in (tmp_path / "driver").rglob("*")
               if p.suffix in (".parquet", ".u64") and p.parent.name != "level=0"
               and p.name != "L0-0.u64"}
    assert written and written <= synced
    executors = run_spark(machine, tmp_path / "executors", spark, deadlock, partitions=8)
    assert_same(local, driver)
    assert_same(local, executors)
    in_driver = level_records(tmp_path / "driver")[1:]  # after level 0, which the driver writes
    on_spark = level_records(tmp_path / "executors")[1:]
    assert [r["counts"]["timings"]["tasks"] for r in in_driver] == [0] * len(in_driver)
    assert [r["counts"]["timings"]["tasks"] for r in on_spark] == [1] * len(on_spark)
    assert [r["files"] for r in in_driver] == [r["files"] for r in on_spark]  # SHA-256 too


def test_a_run_moves_from_the_driver_to_the_executors_as_levels_grow(spark, tmp_path,
                                                                      monkeypatch):
    """Small levels in the driver, larger ones on Spark, in one run: the local engine's
    result; and a run stopped in the driver resumes on the executors, and back."""
    import checker.engines.spark.search as engine

    monkeypatch.setattr(engine, "STATES_PER_TASK", 3)
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    assert_same(local, run_spark(machine, tmp_path / "mixed", spark, partitions=5,
                                 driver_levels=True))
    tasks = [r["counts"]["timings"]["tasks"] for r in level_records(tmp_path / "mixed")[1:]]
    assert tasks == [0, 0, 0, 2, 2, 2], tasks  # frontiers of 1, 2, 3 states; then more
    run_dir = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, run_dir, spark, progress=_StopAfter(1), driver_levels=True)
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, run_dir, spark, progress=_StopAfter(3), resume=True)
    assert_same(local, run_spark(machine, run_dir, spark, resume=True, driver_levels=True))
    tasks = [r["counts"]["timings"]["tasks"] for r in level_records(run_dir)[1:]]
    assert 0 in tasks and 2 in tasks, tasks


def test_the_run_directory_holds_sorted_buckets_and_visited_runs(spark, tmp_path):
    """Level files hold their bucket's states sorted by fingerprint; each bucket's
    visited runs are those of the binary-counter schedule, and hold exactly the
    fingerprints of the bucket's level files."""
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    run_dir = tmp_path / "run"
    result = run_spark(machine, run_dir, spark, partitions=3)
    levels = result.stats["diameter"] + 1
    for bucket in range(3):
        fps = []
        for k in range(levels):
            table = pq.read_table(run_dir / f"level={k}" / f"part-{bucket:05d}.parquet")
            got = table.column("fp").to_numpy().view(np.uint64)
            assert (np.diff(got.astype(object)) > 0).all() if len(got) > 1 else True
            assert (visited_runs.bucket_of(got, 3, Layout(machine).exact) == bucket).all()
            fps.append(got)
        folder = run_dir / "visited" / f"bucket={bucket:05d}"
        names = sorted(p.name for p in folder.iterdir())
        assert names == sorted(visited_runs.run_name(r) for r in visited_runs.schedule(levels))
        runs = [np.fromfile(folder / name, dtype="<u8") for name in names]
        assert all((np.diff(r.astype(object)) > 0).all() for r in runs if len(r) > 1)
        assert sorted(np.concatenate(runs).tolist()) == sorted(np.concatenate(fps).tolist())


def test_level_files_use_a_dictionary_for_actions_only():
    """Fingerprints, words and parents are nearly all distinct: a dictionary for them
    costs most of the write and saves nothing, so only actions get one. The rows read
    back as written."""
    rng = np.random.default_rng(3)
    n = 5_000
    fps = np.sort(rng.integers(0, 2**63, n).astype(np.uint64))
    words = [fps, rng.integers(0, 2**40, n).astype(np.uint64)]
    states = States(fps, words, rng.integers(0, 2**63, n).astype(np.uint64),
                    rng.integers(0, 25, n).astype(np.int64))
    data, description = level_bytes(states, exact=False)
    assert description["rows"] == n and description["bytes"] == data.nbytes
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    encodings = {meta.column(i).path_in_schema: meta.column(i).encodings
                 for i in range(meta.num_columns)}
    assert set(encodings) == {"fp", "w0", "w1", "parent", "action"}
    for name, used in encodings.items():
        assert any("DICTIONARY" in e for e in used) == (name == "action"), (name, used)
    table = pq.read_table(pa.BufferReader(data))
    assert np.array_equal(table.column("w1").to_numpy().view(np.uint64), words[1])
    assert np.array_equal(table.column("action").to_numpy(), states.actions)


def test_a_task_freezes_what_it_finds_before_pysparks_collection(spark):
    """PySpark's daemon runs a full garbage collection after every task in a reused
    Python worker; it scanned the kernel and the modules every time (40 ms of CPU a
    task on tracker_bench_large), so a task's first call freezes them. The driver (or a
    test) calling the same function freezes nothing."""
    import gc

    ref = MachineRef.of(model_machine("tracker_small")[0])

    def frozen(_: int, rows):
        kernel_for(ref)
        yield gc.get_freeze_count()

    counts = spark.sparkContext.parallelize(range(2), 2).mapPartitionsWithIndex(frozen).collect()
    assert len(counts) == 2 and all(count > 1000 for count in counts), counts
    before = gc.get_freeze_count()
    kernel_for(ref)
    assert gc.get_freeze_count() == before


def test_the_driver_jvm_runs_the_first_jit_tier_only(spark):
    """The driver's JVM schedules; its optimising compiler's warm-up was a third of a
    short run's CPU. The option reaches the running JVM."""
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:TieredStopAtLevel=1" in list(runtime.getInputArguments())


def test_each_bucket_belongs_to_exactly_one_task():
    """The shuffle's partitioner (task_of) inverts the tasks' bucket ranges."""
    for buckets in range(1, 40):
        for tasks in range(1, buckets + 1):
            level = LevelTask(None, "", 0, buckets, tasks, False)  # type: ignore[arg-type]
            ranges = [level.buckets_of(t) for t in range(tasks)]
            assert [b for r in ranges for b in r] == list(range(buckets))
            assert all(r for r in ranges)  # no task without a bucket
            assert all(level.task_of(b) == t for t, r in enumerate(ranges) for b in r)


def test_visited_runs_merge_like_a_binary_counter():
    assert visited_runs.schedule(1) == [(0, 0)]
    assert visited_runs.schedule(6) == [(0, 3), (4, 5)]
    assert visited_runs.schedule(7) == [(0, 3), (4, 5), (6, 6)]
    assert visited_runs.schedule(8) == [(0, 7)]
    assert visited_runs.superseded(8) == [(0, 3), (4, 5), (6, 6)]
    assert visited_runs.superseded(7) == []
    for levels in range(1, 70):
        runs = visited_runs.schedule(levels)
        assert [lo for lo, _ in runs] == [0] + [hi + 1 for _, hi in runs[:-1]]
        assert runs[-1][1] == levels - 1 and len(runs) == bin(levels).count("1")


# --- the shuffle exchange: executors that share no directory with the driver ---------------

SHUFFLE_MODELS = [*MODELS, "grid", "deadlock", "hashed_fingerprints", "guard_out_of_range",
                  "invariant_out_of_range"]


def _machine(name: str) -> tuple[Machine, bool]:
    if name in SPECS:
        spec, params, deadlock = SPECS[name]
        return spec.instantiate(params), deadlock
    return model_machine(name)


@pytest.mark.parametrize("name", SHUFFLE_MODELS)
def test_the_shuffle_exchange_gives_the_local_engines_result(name, spark, tmp_path):
    machine, deadlock = _machine(name)
    local = local_check(machine, BfsOptions(deadlock=deadlock))
    run_dir = tmp_path / "run"
    result = run_spark(machine, run_dir, spark, deadlock, partitions=3, exchange="shuffle")
    assert_same(local, result)
    assert result.stats["exchange"] == "shuffle"
    assert json.loads((run_dir / "run.json").read_text())["exchange"] == "shuffle"
    # the driver alone wrote the run directory: levels, never visited runs or exchange files
    assert {p.name for p in run_dir.iterdir()} <= {"run.json"} | {
        f"level={k}" for k in range(result.stats["diameter"] + 1)}


def test_the_shuffle_exchange_stores_the_local_engines_orbits(spark, tmp_path):
    machine, deadlock = model_machine("tracker_small")
    local = local_check(machine, BfsOptions(deadlock=deadlock, symmetry=True))
    reduced = run_spark(machine, tmp_path / "run", spark, deadlock, symmetry=True,
                        exchange="shuffle")
    assert_same(local, reduced)
    assert reduced.stats["symmetry_moved"] == local.stats["symmetry_moved"]
    assert local.stats["distinct_states"] == 900


def test_the_shuffle_exchange_never_moves_the_visited_set(spark, tmp_path, monkeypatch):
    """Each level adds one shuffle to the lineage, its successors'; the buckets it
    carries are zipped with them partition by partition, so the only other shuffle is
    the one that placed level 0's buckets."""
    import checker.engines.spark.carried as carried

    lineages: list[str] = []
    original = carried.next_level

    def spy(task, buckets, ranges, reports):
        job = original(task, buckets, ranges, reports)
        lineages.append(job.toDebugString().decode())
        assert job.getNumPartitions() == task.tasks == ranges.partitions
        return job

    monkeypatch.setattr(carried, "next_level", spy)
    machine = GRID.instantiate({"n": 3, "bx": 9, "by": 9})
    result = run_spark(machine, tmp_path / "run", spark, partitions=4, exchange="shuffle")
    assert len(lineages) == result.stats["diameter"] + 1  # the last level finds nothing new
    for level, lineage in enumerate(lineages):
        assert "PartitionerAwareUnionRDD" in lineage, lineage
        assert len(set(re.findall(r"ShuffledRDD\[(\d+)\]", lineage))) == level + 2, lineage


def test_the_shuffle_exchange_adds_partitions_as_the_levels_grow(spark, tmp_path,
                                                                 monkeypatch):
    """The buckets move to more partitions (2, then 4, then one per bucket) as the
    frontier grows, and the result does not change. No bucket is deduplicated twice:
    Spark never recomputes a level from the lineage (as it did when the old
    partitions were dropped before the moved ones were built)."""
    import checker.engines.spark.carried as carried
    import checker.engines.spark.search as engine

    monkeypatch.setattr(engine, "STATES_PER_TASK", 1)
    merged: dict[int, list[int]] = {}  # a level's reports (by identity) -> buckets received
    add = carried.Reports.addInPlace

    def counting(self, a, b):  # the driver's merge of one task's reports
        merged.setdefault(id(a), []).extend(b)
        return add(self, a, b)

    monkeypatch.setattr(carried.Reports, "addInPlace", counting)
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    result = run_spark(machine, tmp_path / "run", spark, partitions=5, exchange="shuffle")
    assert_same(local, result)
    tasks = [json.loads(p.read_text())["counts"]["timings"]["tasks"]
             for p in sorted((tmp_path / "run").glob("level=*/_ctmc_level.json"),
                             key=lambda p: int(p.parent.name.split("=")[1]))[1:]]
    assert tasks == sorted(tasks) and set(tasks) == {2, 4, 5}, tasks
    assert len(merged) == result.stats["diameter"] + 1
    assert all(sorted(buckets) == list(range(5)) for buckets in merged.values()), merged


def test_a_shuffle_run_interrupted_or_killed_resumes_to_the_same_result(spark, fault_dir,
                                                                        tmp_path):
    """The executors' buckets are rebuilt from the recorded levels: after Ctrl-C, and
    after a level's job failed (local[2] does not retry a killed Python worker)."""
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, run_dir, spark, progress=_StopAfter(2), exchange="shuffle")
    assert recorded_sizes(run_dir) == [1, 2, 3]
    (fault_dir / "kill-level-4").touch()
    with pytest.raises(CheckerError, match="level 5 failed"):
        run_spark(machine, run_dir, spark, resume=True)  # the run's exchange: shuffle
    assert (fault_dir / "kill-level-4.fired").exists()
    assert recorded_sizes(run_dir) == [1, 2, 3, 4, 5]
    assert_same(local, run_spark(machine, run_dir, spark, resume=True))
    with pytest.raises(CheckerError, match="was run with --exchange shuffle"):
        run_spark(machine, run_dir, spark, resume=True, exchange="files")


@pytest.fixture
def hadoop_file_urls(monkeypatch):
    """file:/// URLs taken as a remote run directory, reached through Hadoop's local
    filesystem in Spark's JVM: the code path of hdfs:// and s3a://, on this machine."""
    import checker.engines.spark.options as options

    monkeypatch.setattr(options, "LOCAL_SCHEMES", ())


def test_a_run_directory_on_a_hadoop_filesystem_runs_and_resumes(spark, tmp_path,
                                                                 hadoop_file_urls):
    """The driver publishes each level's files, then its record, to the URL; resume
    downloads it, verifies it, and removes there what a killed run left unrecorded."""
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    at = tmp_path / "remote" / "run"
    url = f"file://{at}"
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, url, spark, progress=_StopAfter(2))
    assert recorded_sizes(at) == [1, 2, 3]
    assert json.loads((at / "run.json").read_text())["exchange"] == "shuffle"
    unrecorded = at / "level=3" / "part-00000.parquet"  # killed between files and record
    unrecorded.parent.mkdir()
    unrecorded.write_bytes((at / "level=2" / "part-00000.parquet").read_bytes())
    with pytest.raises(CheckerError, match=f"run directory {url} is not empty"):
        run_spark(machine, url, spark)
    result = run_spark(machine, url, spark, resume=True)
    assert_same(local, result)
    assert result.stats["run_dir"] == url and result.stats["exchange"] == "shuffle"
    levels = result.stats["diameter"] + 1
    assert len(recorded_sizes(at)) == levels
    assert sum(recorded_sizes(at)) == local.stats["distinct_states"]
    published = {p.relative_to(at).as_posix() for p in at.rglob("*")
                 if p.is_file() and not p.name.startswith(".")}  # Hadoop's .crc files
    assert published == {"run.json"} | {f"level={k}/{name}" for k in range(levels)
                                        for name in ("_ctmc_level.json", "part-00000.parquet",
                                                     "part-00001.parquet")}


def test_a_run_directory_url_spark_cannot_open_is_one_line(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckerError, match=r"run directory s3a://bucket/run: Spark cannot "
                                           r"open its filesystem \(.*S3AFileSystem"):
        run_spark(GRID.instantiate({"n": 2, "bx": 9, "by": 9}), "s3a://bucket/run", spark)
    assert list(tmp_path.iterdir()) == []


def test_the_shuffle_exchange_refuses_liveness(tmp_path):
    line = one_error_line(ctmc("check", "v1_tiny_close_liveness", "--engine", "spark",
                               "--master", LOCAL, "--exchange", "shuffle",
                               "--run-dir", str(tmp_path / "run")))
    assert "liveness on Spark reads the levels in the executors" in line
    assert not (tmp_path / "run").exists()


# --- run directories: resume, refusals ------------------------------------------------------

class _StopAfter:
    """A progress callback that interrupts the run once `level` is durable."""

    def __init__(self, level: int):
        self.level = level

    def __call__(self, line: str) -> None:
        if line.startswith(f"level {self.level:>3} "):
            raise KeyboardInterrupt


def test_interrupted_run_resumes_to_the_same_result(spark, tmp_path):
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, run_dir, spark, progress=_StopAfter(4))
    assert recorded_sizes(run_dir) == [1, 2, 3, 4, 5]
    assert_same(local, run_spark(machine, run_dir, spark, resume=True, partitions=None))


def test_run_killed_mid_level_resumes_to_the_same_result(spark, fault_dir, tmp_path):
    """local[2] does not retry tasks, so a killed Python worker fails the level's job:
    as if the whole run died there. Leftovers of unfinished writes are discarded."""
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    run_dir = tmp_path / "run"
    (fault_dir / "kill-level-3").touch()
    with pytest.raises(CheckerError, match="level 4 failed"):
        run_spark(machine, run_dir, spark)
    assert (fault_dir / "kill-level-3.fired").exists()
    assert recorded_sizes(run_dir) == [1, 2, 3, 4]
    (run_dir / "level=4").mkdir(exist_ok=True)  # a level written but not yet recorded
    (run_dir / "level=4" / "part-00000.parquet").write_bytes(b"junk")
    stray = run_dir / "visited" / "bucket=00001" / visited_runs.run_name((4, 4))
    stray.write_bytes(b"junk")  # its visited run, and a half-written file
    (run_dir / "level=3" / ".part-00000.parquet.123.tmp").write_bytes(b"junk")
    assert_same(local, run_spark(machine, run_dir, spark, resume=True))
    assert not (run_dir / "level=3" / ".part-00000.parquet.123.tmp").exists()


def test_resume_refuses_another_model_and_keeps_the_directory(spark, tmp_path):
    run_dir = tmp_path / "run"
    run_spark(GRID.instantiate({"n": 2, "bx": 9, "by": 9}), run_dir, spark)
    before = sorted(p.name for p in run_dir.iterdir())
    other = GRID.instantiate({"n": 3, "bx": 9, "by": 9})
    with pytest.raises(CheckerError, match="another search.*params"):
        run_spark(other, run_dir, spark, resume=True)
    with pytest.raises(CheckerError, match="not empty"):
        run_spark(other, run_dir, spark)
    with pytest.raises(CheckerError, match="split into 2 partitions"):
        run_spark(GRID.instantiate({"n": 2, "bx": 9, "by": 9}), run_dir, spark, resume=True,
                  partitions=4)
    assert sorted(p.name for p in run_dir.iterdir()) == before


# --- the command line --------------------------------------------------------------------------

def ctmc(*args: str):
    return run_cli(MODELS_DIR, *args)


@pytest.mark.parametrize("args, message", [
    (["--partitions", "0"], "Invalid value for '--partitions': 0 is not in the range x>=1"),
    (["--master", "spark://127.0.0.1:1"],
     "spark://127.0.0.1:1 is not a Spark master that answers (127.0.0.1:1: Connection refused)"),
    (["--master", "mesos://x:5050"], "unknown Spark master 'mesos://x:5050'"),
])
def test_bad_spark_options_give_one_line(args, message, tmp_path):
    line = one_error_line(ctmc("check", "tracker_small", "--engine", "spark",
                               "--run-dir", str(tmp_path / "run"), *args))
    assert message in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("url", ["file://host/tmp/run", "hdfs:/nowhere/run"])
def test_a_run_directory_url_is_refused_before_anything_is_written(url, tmp_path,
                                                                  monkeypatch):
    """Taken as a path, hdfs:/h/x would become a local folder 'hdfs:' with Parquet in
    it; a URL that is neither the driver's path nor one for Spark is refused up front,
    and nothing is created (a URL given to --resume is refused the same way by the run
    directory's reader)."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(ctmc("check", "tracker_small", "--engine", "spark",
                               "--master", LOCAL, "--run-dir", url))
    assert f"run directory {url}: neither a path nor a URL" in line
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(CheckerError, match="neither a path nor a URL"):
        spark_run_dir.inspect(url, {}, None)


def test_a_run_directory_url_needs_the_shuffle_exchange(tmp_path):
    line = one_error_line(ctmc("check", "tracker_small", "--engine", "spark", "--master",
                               LOCAL, "--exchange", "files", "--run-dir",
                               "hdfs://head:8020/runs/x"))
    assert "the executors cannot read a URL as a path" in line
    line = one_error_line(ctmc("check", "tracker_small", "--resume", "hdfs://head:8020/runs/x"))
    assert "--resume with a URL applies to --engine spark" in line


def test_a_filesystem_that_fails_to_start_is_one_line(tmp_path):
    """Hadoop's client refusing its configuration (here a number that is not one, which
    PySpark turns into its own exception type, not py4j's) is the run directory's
    problem, told in one line before anything is written, never an internal error. A
    subprocess: Spark's defaults file is read when a JVM starts."""
    conf = spark_defaults(tmp_path / "conf",
                          {"spark.hadoop.dfs.client.retry.max.attempts": "not-a-number"})
    url = "hdfs://127.0.0.1:1/runs/x"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"),
         "--models-dir", str(MODELS_DIR), "check", "tracker_small", "--engine", "spark",
         "--master", "local[1]", "--run-dir", url], cwd=tmp_path, capture_output=True,
        text=True, timeout=300, env={**os.environ, "SPARK_CONF_DIR": str(conf)})
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: run directory {url}: Spark cannot open its filesystem "
                      f'(java.lang.NumberFormatException: For input string: "not-a-number")']
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_a_file_url_is_the_drivers_path(tmp_path):
    assert spark_run_dir.local_folder(f"file://{tmp_path}/run") == tmp_path / "run"


def _unseen_run_json(monkeypatch):
    """On a cluster, a local path on the driver is another folder (or none) on the
    workers. Simulated here by a run.json that vanishes once the driver wrote it: the
    first job, in the executors, finds it missing."""
    import checker.engines.spark.search as engine

    create = engine.spark_run_dir.create

    def create_unseen(path, identity, partitions):
        run = create(path, identity, partitions)
        (run.path / spark_run_dir.RUN_FILE).unlink()
        return run

    monkeypatch.setattr(engine.spark_run_dir, "create", create_unseen)


def test_with_the_file_exchange_a_run_directory_the_executors_cannot_read_is_refused(
        spark, tmp_path, monkeypatch):
    _unseen_run_json(monkeypatch)
    run_dir = tmp_path / "run"
    with pytest.raises(CheckerError, match=r"run directory .*/run: 2 of 2 executor tasks "
                                           r"cannot read it; give a folder that the driver"):
        run_spark(GRID.instantiate({"n": 2, "bx": 9, "by": 9}), run_dir, spark,
                  exchange="files")
    assert not run_dir.exists()  # nothing is left


def test_executors_that_cannot_read_the_run_directory_get_the_shuffle_exchange(
        spark, tmp_path, monkeypatch):
    _unseen_run_json(monkeypatch)
    machine = GRID.instantiate({"n": 3, "bx": 4, "by": 3})
    lines: list[str] = []
    result = run_spark(machine, tmp_path / "run", spark, progress=lines.append)
    assert_same(local_check(machine, BfsOptions(deadlock=False)), result)
    assert result.stats["exchange"] == "shuffle"
    assert any("2 of 2 executor tasks cannot see" in line for line in lines)


def test_a_liveness_model_whose_executors_cannot_read_the_run_directory_is_refused(
        spark, tmp_path, monkeypatch):
    """The shuffle exchange cannot check liveness: refused before level 0, and the run
    directory made for it is removed again."""
    _unseen_run_json(monkeypatch)
    machine, deadlock = model_machine("v1_tiny_close_liveness")
    run_dir = tmp_path / "new" / "run"
    with pytest.raises(CheckerError, match="liveness on Spark reads the levels in the "
                                           "executors"):
        run_spark(machine, run_dir, spark, deadlock)
    assert list(tmp_path.iterdir()) == []


def test_spark_options_need_the_spark_engine(tmp_path):
    line = one_error_line(ctmc("check", "tracker_small", "--master", "local[2]"))
    assert "--master applies to --engine spark" in line


def test_cli_runs_resumes_and_refuses(spark, tmp_path):
    run_dir = tmp_path / "run"
    args = ["check", "mutation_heap_ignores_tracked", "--json", "--trace-out"]
    bfs = ctmc(*args, str(tmp_path / "bfs.itf.json"))  # by orbits, as Spark
    out = ctmc(*args, str(tmp_path / "spark.itf.json"), "--engine", "spark",
               "--master", LOCAL, "--partitions", "2", "--run-dir", str(run_dir))
    assert (bfs.exit_code, out.exit_code) == (1, 1), out.output
    a, b = json.loads(bfs.stdout), json.loads(out.stdout)
    for key in ("distinct_states", "generated", "diameter"):
        assert a["stats"][key] == b["stats"][key]
    assert a["violation"]["length"] == b["violation"]["length"]
    assert b["stats"]["parquet_bytes_per_state"] > 0
    assert (tmp_path / "spark.itf.json").read_text().replace('"spark"', '"bfs"') == \
        (tmp_path / "bfs.itf.json").read_text()
    assert "level   1 | new" in out.stderr
    assert "\tat org.apache" not in out.stderr and "Exception" not in out.stderr  # no Java
    again = ctmc(*args, str(tmp_path / "again.itf.json"), "--engine", "spark",
                 "--master", LOCAL, "--resume", str(run_dir))
    assert again.exit_code == 1 and json.loads(again.stdout)["stats"]["distinct_states"] == \
        a["stats"]["distinct_states"]
    line = one_error_line(ctmc("check", "mutation_carry_own_bucket_ts", "--engine", "spark",
                               "--master", LOCAL, "--resume", str(run_dir)))
    assert f"cannot resume {run_dir}: it was written for another search (model is" in line
    line = one_error_line(ctmc("check", "mutation_heap_ignores_tracked", "--engine", "spark",
                               "--master", LOCAL, "--run-dir", str(run_dir)))
    assert "is not empty (to continue that run, use --resume)" in line
    assert (run_dir / "run.json").exists() and (run_dir / "level=0").is_dir()


def test_a_spark_run_shows_only_its_own_lines_and_stops_on_ctrl_c_in_one(tmp_path):
    """From the first second ctmc says what it does; Spark's JVM, log4j and py4j lines go
    to a log file, not the terminal; Ctrl-C is one line (no traceback) and exit 130."""
    import signal

    run = subprocess.Popen([sys.executable, "-m", "ctmc", "check", "tracker_bench_medium",
                            "--engine", "spark", "--master", LOCAL, "--no-symmetry",
                            "--run-dir", str(tmp_path / "run")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "TMPDIR": str(tmp_path)})
    assert run.stderr is not None
    lines = []
    for line in run.stderr:
        lines.append(line.rstrip("\n"))
        if line.startswith("level   6"):
            run.send_signal(signal.SIGINT)
            break
    lines += run.communicate(timeout=120)[1].splitlines()
    assert run.returncode == 130, lines[-3:]
    assert lines[0] == f"starting Spark on {LOCAL}", lines  # at once (header: stdout)
    assert any(line.startswith("Spark is up: ") for line in lines), lines
    assert lines[-1].startswith("interrupted; to resume, run the same command with --resume"), \
        lines
    assert not [line for line in lines if "Traceback" in line or "WARN" in line
                or "log level" in line or "ERROR" in line], lines
    assert list(tmp_path.glob("ctmc-spark-tracker_bench_medium-*.log"))  # Spark's lines


def test_executors_use_the_drivers_interpreter_from_a_venv_not_activated(tmp_path):
    """Run from a venv that is not activated, with a `python3` on the PATH that lacks
    numpy and pyarrow: the executors still run the driver's interpreter (issue: PySpark
    takes its workers' Python from $PYSPARK_PYTHON, not from spark.pyspark.python)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/bin:/bin"
    done = subprocess.run(
        [sys.executable, str(REPO / "cli.py"), "check", "mutation_heap_ignores_tracked",
         "--engine", "spark", "--master", "local[1]", "--max-depth", "1",
         "--no-driver-levels", "--run-dir", str(tmp_path / "run")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert "No module named" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "level   1 | new" in done.stderr


# --- two executor processes (keep last: they replace the local session) ------------------------

@pytest.fixture
def cluster(fault_dir):
    return start_session(CLUSTER, fault_dir)


def test_two_executor_processes_give_the_same_result(cluster, tmp_path):
    machine, deadlock = model_machine("mutation_reset_cur_on_prev_exit")
    local = local_check(machine, BfsOptions(deadlock=deadlock))
    assert_same(local, run_spark(machine, tmp_path / "run", cluster, deadlock))


def test_killed_python_worker_is_retried_to_the_same_result(cluster, fault_dir, tmp_path):
    machine = GRID.instantiate({"n": 4, "bx": 4, "by": 3})
    local = local_check(machine, BfsOptions(deadlock=False))
    (fault_dir / "kill-level-2").touch()
    result = run_spark(machine, tmp_path / "run", cluster)
    assert (fault_dir / "kill-level-2.fired").exists()  # a task died, and Spark retried it
    assert_same(local, result)
