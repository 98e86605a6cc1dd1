"""A real Spark standalone cluster on 127.0.0.1, for tests: a master and N workers.

They are started with the launch classes of the installed `pyspark` package (its
`bin/spark-class`), so nothing is downloaded. Each daemon runs in its own process
group, logging to a file; a worker's executors (and their Python workers) are its
children, so killing a worker's group kills them too, as when a machine dies.

    with spark_cluster(tmp_dir) as cluster:
        run(["ctmc", "check", ..., "--master", cluster.master_url])
        cluster.kill_worker(0)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark

from checker.engines.spark.session import LOG4J2

HOST = "127.0.0.1"
READY_SECONDS = 60.0

_LOG4J2 = LOG4J2.replace("{level}", "warn")  # the daemons log warnings and errors only


class SparkClusterError(RuntimeError):
    """The cluster did not start (the message ends with the tail of its logs)."""


def java_missing() -> str | None:
    """Why Spark cannot start here (no Java), or None."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "a Spark standalone cluster needs Java 17 or newer: no java on PATH, no JAVA_HOME"
    return None


def spark_home() -> Path:
    """The installed pyspark package, which holds Spark's jars and bin/spark-class."""
    return Path(pyspark.__file__).resolve().parent


def free_ports(n: int) -> list[int]:
    """n distinct ports that were free a moment ago (all bound at once, then released)."""
    with contextlib.ExitStack() as stack:
        sockets = []
        for _ in range(n):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]


def _kill_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # start_new_session: the group's id is the leader's pid


def hiding(folder: Path) -> list[str]:
    """A command prefix that runs a program in its own mount namespace, with an empty
    tmpfs over `folder`: it sees none of what others put there, and they see nothing it
    writes there (as a worker on another machine). Root may do this; anyone else maps
    itself to root in a user namespace, which most kernels allow."""
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs ctmc-hidden "$0" && exec "$@"', str(folder)]


def hiding_missing(folder: Path) -> str | None:
    """Why `hiding` does not work here, or None."""
    if shutil.which("unshare") is None:
        return "no unshare command (util-linux)"
    probe = subprocess.run([*hiding(folder), "sh", "-c", 'test -z "$(ls -A "$0")"',
                            str(folder)], capture_output=True, text=True)
    if probe.returncode:
        return f"cannot hide a folder in a mount namespace: {probe.stderr.strip()[:200]}"
    return None


def spark_class(*args: str) -> list[str]:
    """The command that runs one of Spark's launch classes with its arguments."""
    return [str(spark_home() / "bin" / "spark-class"), *args]


class Daemon:
    """A server (a JVM, for these tests), leader of its own process group, logging to
    `log`."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log: Path):
        self.name, self.log = name, log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group: the JVM and whatever it started."""
        _kill_group(self.proc, signal.SIGKILL)
        self.proc.wait()

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the group, then SIGKILL it (children outliving the leader included)."""
        _kill_group(self.proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(grace)
        _kill_group(self.proc, signal.SIGKILL)
        self.proc.wait()

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()[-lines:]
        except OSError as exc:
            text = [f"(cannot read: {exc})"]
        return f"--- {self.name} ({self.log}):\n" + "\n".join(text)


class SparkCluster:
    """A standalone master on 127.0.0.1 with `workers` workers of `cores` cores each;
    with `hidden`, each worker (its executors too) sees its own empty folder there
    (`hiding`), so a run directory under it is the driver's alone."""

    def __init__(self, base: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                 env: dict[str, str] | None = None, hidden: Path | None = None):
        self.base = base
        self.hidden = hidden
        self.extra_env = env or {}
        self.cores, self.memory = cores, memory
        self.port, self.web_ui_port = free_ports(2)
        self.master_url = f"spark://{HOST}:{self.port}"
        self.web_ui_url = f"http://{HOST}:{self.web_ui_port}"
        self._env = self._environment()
        self._master: Daemon | None = None
        self._workers: list[Daemon | None] = [None] * workers
        self._worker_ports: list[int] = [0] * workers

    def _environment(self) -> dict[str, str]:
        conf = self.base / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "log4j2.properties").write_text(_LOG4J2)
        (self.base / "local").mkdir(exist_ok=True)
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("SPARK_", "PYSPARK_"))}
        env.update({
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(conf),  # on the daemons' classpath: log4j2.properties
            "SPARK_LOCAL_IP": HOST,
            "SPARK_LOCAL_DIRS": str(self.base / "local"),  # shuffle and block files
            "SPARK_DAEMON_MEMORY": "256m",  # the master's and workers' own heaps
            "PYSPARK_PYTHON": sys.executable,  # the executors' Python workers
            **self.extra_env,  # inherited by executors: e.g. where tests arm faults
        })
        return env

    # --- starting and stopping ----------------------------------------------------------

    def start(self, timeout: float = READY_SECONDS) -> None:
        """Start the master and every worker; wait until all workers are ALIVE."""
        self._master = Daemon(
            "master", spark_class("org.apache.spark.deploy.master.Master", "--host", HOST,
                                  "--port", str(self.port),
                                  "--webui-port", str(self.web_ui_port)),
            self._env, self.base / "master.log")
        for index in range(len(self._workers)):
            self._start_worker(index)
        self.wait_ready(timeout)

    def _start_worker(self, index: int) -> None:
        port, web_ui_port = free_ports(2)
        work_dir = self.base / f"worker-{index}"
        work_dir.mkdir(exist_ok=True)
        self._worker_ports[index] = port
        worker = spark_class(
            "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--port", str(port),
            "--webui-port", str(web_ui_port), "--cores", str(self.cores),
            "--memory", self.memory, "--work-dir", str(work_dir), self.master_url)
        self._workers[index] = Daemon(
            f"worker {index}", [*hiding(self.hidden), *worker] if self.hidden else worker,
            self._env, self.base / f"worker-{index}.log")

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master."""
        for daemon in [*self._workers, self._master]:
            if daemon is not None:
                daemon.stop()

    def revive(self, timeout: float = READY_SECONDS) -> None:
        """Restart the workers that died or were killed; wait until all are ALIVE."""
        for index, daemon in enumerate(self._workers):
            if daemon is None or not daemon.alive():
                self._start_worker(index)
        self.wait_ready(timeout)

    # --- state ---------------------------------------------------------------------------

    @property
    def worker_pids(self) -> list[int]:
        """The pids of the running workers' JVMs (each the leader of its process group)."""
        return [d.proc.pid for d in self._workers if d is not None and d.alive()]

    def worker_running(self, pid: int) -> int:
        """The index of the worker that process `pid` descends from (a Python worker's
        ancestors: PySpark's daemon, the executor's JVM, the worker's JVM)."""
        workers = {d.proc.pid: i for i, d in enumerate(self._workers)
                   if d is not None and d.alive()}
        while pid > 1 and pid not in workers:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rpartition(")")[2].split()[1])  # the parent pid
        if pid not in workers:
            raise SparkClusterError(f"process {pid} runs under no worker of this cluster")
        return workers[pid]

    def kill_worker(self, index: int = 0) -> None:
        """SIGKILL worker `index`'s process group: its JVM, executors and Python workers."""
        daemon = self._workers[index]
        assert daemon is not None, f"worker {index} was never started"
        daemon.kill()

    def status(self) -> dict[str, Any]:
        """The master's JSON status (its web UI's /json/)."""
        with urllib.request.urlopen(f"{self.web_ui_url}/json/", timeout=5) as answer:
            return json.load(answer)

    def alive_workers(self) -> int:
        """How many of this cluster's current workers the master lists as ALIVE."""
        ours = {port for port, d in zip(self._worker_ports, self._workers, strict=True)
                if d is not None and d.alive()}
        return sum(1 for w in self.status().get("workers", [])
                   if w.get("state") == "ALIVE" and w.get("port") in ours)

    def wait_ready(self, timeout: float = READY_SECONDS) -> None:
        """Poll the master until every worker is registered and ALIVE, or raise with
        the logs' tails (at once if a daemon exited)."""
        deadline = time.monotonic() + timeout
        problem = "not polled yet"
        while True:
            daemons = {"master": self._master,
                       **{f"worker {i}": d for i, d in enumerate(self._workers)}}
            dead = [name for name, d in daemons.items() if d is None or not d.alive()]
            if dead:
                raise self._error(f"{', '.join(dead)} exited")
            try:
                alive = self.alive_workers()
                if alive == len(self._workers):
                    return
                problem = f"{alive} of {len(self._workers)} workers ALIVE"
            except (OSError, urllib.error.URLError, ValueError) as exc:
                problem = f"master status not available: {exc}"
            if time.monotonic() > deadline:
                raise self._error(f"not ready after {timeout:g} s ({problem})")
            time.sleep(0.5)

    def _error(self, what: str) -> SparkClusterError:
        tails = "\n".join(d.tail() for d in [self._master, *self._workers] if d is not None)
        return SparkClusterError(f"Spark standalone cluster at {self.master_url}: {what}\n"
                                 f"{tails}")


@contextlib.contextmanager
def spark_cluster(base: Path | None = None, workers: int = 2, cores: int = 1,
                  memory: str = "1g", timeout: float = READY_SECONDS,
                  env: dict[str, str] | None = None,
                  hidden: Path | None = None) -> Iterator[SparkCluster]:
    """A started cluster (logs and work directories in `base`, else a temporary
    directory removed afterwards), stopped on exit."""
    with contextlib.ExitStack() as stack:
        if base is None:
            base = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ctmc-spark-")))
        cluster = SparkCluster(base, workers, cores, memory, env, hidden)
        stack.callback(cluster.stop)
        cluster.start(timeout)
        yield cluster
