"""The Spark engine on a real standalone cluster, driven through the command line.

`local[N]` and `local-cluster` (tests/test_spark_engine.py) run every executor under
one scheduler on one machine; only a standalone master with workers of their own
shows what users of `--master spark://HOST:PORT` meet: the code and the spec shipped
to executor processes started by workers, a worker dying mid level (Spark reschedules
on the other), the driver dying (the run resumes from its directory), each with a
run directory the workers share and with one they cannot see (the shuffle exchange),
a URL that is no master (refused at once) and a master with no worker (refused once
the wait for executors is over). Each test runs `cli.py` as a user would, in a
subprocess, and compares its JSON with the local engine's. One master and two
one-core workers (tests/spark_cluster.py) serve the whole module; tests that kill a
worker leave the next test a revived one. Skipped when Java is missing, and left out
of the suite for its time (three minutes): `.ci/run` runs it after the suite, with
CTMC_CLUSTER=1, which runs it anywhere.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import venv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checker.engines.spark.levels import FAULT_ENV
from checker.engines.spark.session import EXECUTOR_WAIT_ENV
from tests.spark_cluster import SparkCluster, hiding_missing, java_missing, spark_cluster

REPO = Path(__file__).resolve().parent.parent
CLI = str(REPO / "cli.py")
HOLDS = "tracker_small"  # 900 orbits of 4,742 states, 12 levels: holds
FAILS = "mutation_reset_cur_on_prev_exit"  # violates NoWriteBelowClosed at depth 6
RUN_SECONDS = 300  # one CLI run on the cluster, at most

Local = tuple[dict[str, Any], str]  # the local engine's JSON and counterexample

pytestmark = pytest.mark.skipif(
    not os.environ.get("CTMC_CLUSTER"),
    reason="a standalone Spark cluster: .ci/run runs it after the suite (CTMC_CLUSTER=1)")


# --- fixtures ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where tests arm faults for the executors (checker.engines.spark.levels.maybe_fail)."""
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, faults: Path) -> Iterator[SparkCluster]:
    """A standalone master and two one-core workers, for the whole module. Each worker
    sees its own empty folder over the driver's `driver-only` folder (when this machine
    lets a process have its own mounts: `spark_cluster.hiding`)."""
    reason = java_missing()
    if reason:
        pytest.skip(reason)
    driver_only = tmp_path_factory.mktemp("driver-only")
    hidden = None if hiding_missing(driver_only) else driver_only
    with spark_cluster(tmp_path_factory.mktemp("spark-cluster"),
                       env={FAULT_ENV: str(faults)}, hidden=hidden) as started:
        yield started


@pytest.fixture(params=["shared", "driver-only"])
def folder(request: pytest.FixtureRequest, cluster: SparkCluster, tmp_path: Path) -> Path:
    """Where a test's run directory goes: a folder the workers share with the driver
    (the file exchange), or one only the driver sees (the shuffle exchange)."""
    if request.param == "shared":
        return tmp_path
    if cluster.hidden is None:
        pytest.skip(f"no folder hidden from the workers: {hiding_missing(tmp_path)}")
    own = cluster.hidden / tmp_path.name
    own.mkdir()
    return own


def expected_exchange(folder: Path, cluster: SparkCluster) -> str:
    return "shuffle" if cluster.hidden is not None and folder.is_relative_to(cluster.hidden) \
        else "files"


@pytest.fixture
def master(cluster: SparkCluster) -> str:
    """The master's URL, with both workers ALIVE (a killed one restarted)."""
    cluster.revive()
    return cluster.master_url


@pytest.fixture(scope="module")
def local_engine(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Local]:
    """The local engine's JSON and counterexample (text, "" if none) for a model, run
    once per model."""
    folder = tmp_path_factory.mktemp("local")
    results: dict[str, Local] = {}

    def result(model: str) -> Local:
        if model not in results:
            trace = folder / f"{model}.itf.json"
            done = run([sys.executable, CLI, "check", model, "--json",
                        "--trace-out", str(trace)])  # by orbits, as Spark stores them
            assert done.returncode in (0, 1), done.stderr[-3000:]
            results[model] = (json.loads(done.stdout),
                              trace.read_text() if trace.exists() else "")
        return results[model]

    return result


# --- running the command line --------------------------------------------------------------

def environment() -> dict[str, str]:
    """The user's environment, with executors told to run this interpreter (the way to
    ship the environment when all workers share the filesystem)."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable}


def spark_args(model: str, master: str, run_dir: Path | str, trace: Path,
               resume: bool = False) -> list[str]:
    where = ["--resume" if resume else "--run-dir", str(run_dir)]
    return [sys.executable, CLI, "check", model, "--engine", "spark", "--master", master,
            *where, "--no-driver-levels", "--json", "--trace-out", str(trace)]


def run(args: list[str], timeout: float = RUN_SECONDS, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO, env={**environment(), **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


class Running:
    """A CLI run in the background (its own session, so its whole process group,
    the driver's JVM included, can be killed), its stderr read line by line."""

    def __init__(self, args: list[str]):
        self.proc = subprocess.Popen(args, cwd=REPO, env=environment(), text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.stdout = ""
        self._eof = False
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read_stderr, daemon=True),
                         threading.Thread(target=self._read_stdout, daemon=True)]
        for reader in self._readers:
            reader.start()

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:  # a test failed while the run went on
            self.kill()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()

    def wait_for(self, pattern: str, timeout: float = RUN_SECONDS) -> str:
        """The first stderr line matching `pattern`; fails if the run ends first."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.lines[seen:]:
                    if regex.search(line):
                        return line
                seen = len(self.lines)
                ended = self._eof
                if ended or time.monotonic() > deadline:
                    self.kill()
                    pytest.fail(f"no stderr line matching {pattern!r} "
                                f"({'the run ended' if ended else 'timed out'}):\n"
                                + "\n".join(self.lines[-30:]))
                self._changed.wait(0.5)

    def kill(self) -> None:
        """SIGKILL the run's process group: the CLI and the driver's JVM."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def finish(self, timeout: float = RUN_SECONDS) -> subprocess.CompletedProcess[str]:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        for reader in self._readers:
            reader.join(10)
        return subprocess.CompletedProcess(self.proc.args, code, self.stdout,
                                           "\n".join(self.lines))


# --- comparing with the local engine ------------------------------------------------------

def summary(out: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on the engine: verdict, counts, coverage, violation."""
    violation = out["violation"]
    return {
        **{key: out[key] for key in ("outcome", "complete", "expected", "as_expected")},
        **{key: out["stats"][key] for key in ("distinct_states", "generated", "diameter")},
        "coverage": out["coverage"],
        "violation": violation and {key: violation[key] for key in ("kind", "name", "length")},
    }


def parsed(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON of a finished CLI run; a failure shows its stderr."""
    assert done.returncode in (0, 1), f"exit {done.returncode}:\n{done.stderr[-5000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-5000:]
    return json.loads(done.stdout)


def assert_like_local(local: Local, done: subprocess.CompletedProcess[str],
                      trace: Path) -> dict[str, Any]:
    """The Spark run `done` ended as the local engine's run `local` did."""
    expected, expected_trace = local
    out = parsed(done)
    assert out["engine"]["name"] == "spark"
    assert summary(out) == summary(expected)
    assert done.returncode == (0 if out["violation"] is None else 1)
    if expected_trace:  # the same counterexample, but for the engine's name
        assert trace.read_text().replace('"spark"', '"bfs"') == expected_trace
    return out


def level_line(level: int) -> str:
    """A progress line about `level` (done or in progress)."""
    return rf"^level +{level} \|"


# --- tests ------------------------------------------------------------------------------

def test_a_standalone_cluster_gives_the_local_result(
        cluster: SparkCluster, master: str, local_engine: Callable[[str], Local],
        folder: Path) -> None:
    """The counterexample model (the holds one runs on the cluster in the worker-kill
    test below, which asserts the same). Workers that do not see the run directory get
    the shuffle exchange, and say so."""
    trace = folder / "spark.itf.json"
    done = run(spark_args(FAILS, master, folder / "run", trace))
    out = assert_like_local(local_engine(FAILS), done, trace)
    assert re.search(level_line(1) + " new", done.stderr, re.MULTILINE), done.stderr[-3000:]
    assert out["stats"]["exchange"] == expected_exchange(folder, cluster)
    assert ("executor tasks cannot see" in done.stderr) == (out["stats"]["exchange"] == "shuffle")


def test_a_worker_killed_mid_level_costs_nothing(
        cluster: SparkCluster, master: str, faults: Path, local_engine: Callable[[str], Local],
        folder: Path) -> None:
    """A task expanding level 4 pauses; the worker running it is killed, with its
    executor and Python workers. Spark reruns the lost tasks (and any lost shuffle
    output, and with the shuffle exchange the buckets that worker kept, from their
    lineage) on the other worker, and the run ends as if nothing happened."""
    trace = folder / "spark.itf.json"
    (faults / "pause-level-4").touch()
    paused = faults / "paused-level-4"
    with Running(spark_args(HOLDS, master, folder / "run", trace)) as running:
        deadline = time.monotonic() + RUN_SECONDS
        while not paused.exists() and running.proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert paused.exists(), "no task paused at level 4:\n" + "\n".join(running.lines[-30:])
        paused_pid = int(paused.read_text())
        paused.unlink()
        (faults / "pause-level-4.fired").unlink()
        cluster.kill_worker(cluster.worker_running(paused_pid))
        (faults / "go-level-4").touch()
        assert len(cluster.worker_pids) == 1
        done = running.finish()
    (faults / "go-level-4").unlink()
    out = assert_like_local(local_engine(HOLDS), done, trace)
    assert cluster.alive_workers() == 1
    assert out["stats"]["exchange"] == expected_exchange(folder, cluster)


def test_a_killed_driver_resumes_from_its_run_directory(
        cluster: SparkCluster, master: str, local_engine: Callable[[str], Local],
        folder: Path) -> None:
    """The driver (the CLI and its JVM) dies mid level: the master drops the
    application, and --resume continues from the levels already recorded, to the same
    counterexample."""
    run_dir, trace = folder / "run", folder / "spark.itf.json"
    with Running(spark_args(FAILS, master, run_dir, trace)) as running:
        running.wait_for(level_line(3))
        running.kill()
    assert running.proc.returncode == -signal.SIGKILL
    done = run(spark_args(FAILS, master, run_dir, trace, resume=True))
    out = assert_like_local(local_engine(FAILS), done, trace)
    assert not re.search(level_line(1) + " new", done.stderr, re.MULTILINE), \
        "the resumed run explored level 1 again:\n" + done.stderr[-3000:]
    assert out["stats"]["exchange"] == expected_exchange(folder, cluster)


def test_a_url_that_is_no_master_is_refused_in_one_line(cluster: SparkCluster,
                                                        tmp_path: Path) -> None:
    """The master's web UI answers HTTP on its port: not a Spark master."""
    url = f"spark://127.0.0.1:{cluster.web_ui_port}"
    started = time.monotonic()
    done = run(spark_args(HOLDS, url, tmp_path / "run", tmp_path / "spark.itf.json"),
               timeout=60)
    seconds = time.monotonic() - started
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and url in lines[0], done.stderr[-3000:]
    assert done.stdout == ""
    assert seconds < 10
    assert not (tmp_path / "run").exists()


def test_a_master_that_gives_no_executor_is_refused_in_one_line(tmp_path: Path) -> None:
    """A master with no worker accepts the application and would leave its first job
    waiting for ever: the run is refused once the wait is over, and leaves nothing."""
    with spark_cluster(tmp_path / "empty", workers=0) as empty:
        done = run(spark_args(HOLDS, empty.master_url, tmp_path / "run",
                              tmp_path / "spark.itf.json"),
                   env={EXECUTOR_WAIT_ENV: "5"}, timeout=120)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert f"{empty.master_url} gave this run no executor in 5 s" in last, done.stderr[-3000:]
    assert "waiting for executors" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "run").exists()


def test_executors_without_the_projects_python_packages_are_refused_in_one_line(
        master: str, tmp_path: Path) -> None:
    """Executors whose Python lacks numpy (a fresh venv): the first job fails, and the
    run is refused with the Python error, before level 0, leaving nothing."""
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    done = run(spark_args(HOLDS, master, tmp_path / "run", tmp_path / "spark.itf.json"),
               env={"PYSPARK_PYTHON": str(bare / "bin" / "python")})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.endswith(f"Spark could not run a task on {master} (ModuleNotFoundError: "
                         "No module named 'numpy')"), done.stderr[-3000:]
    assert not (tmp_path / "run").exists()
