"""Starting Spark for a run: the session, its logging, and a master that answers.

A local master runs executors in this interpreter, with Spark's driver logs kept
to errors so progress lines stay readable; a standalone master must accept a
connection within seconds, or the run is refused with one line.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from checker.engines.spark.options import DEFAULT_MASTER
from checker.errors import CheckerError
from checker.progress import Heartbeat, Progress

PROBE_SECONDS = 3.0  # per step of the master probe: connecting, then the answer
EXECUTOR_WAIT_ENV = "CTMC_SPARK_EXECUTOR_WAIT"  # seconds a cluster has to give executors
EXECUTOR_WAIT_SECONDS = 120.0
T = TypeVar("T")
_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]")


def spark_session(master: str = DEFAULT_MASTER, driver_memory: str | None = None,
                  conf: dict[str, str] | None = None, log: Path | None = None) -> SparkSession:
    """The active session if it runs on `master`, else a new one (stopping the other).
    With `log`, what Spark's JVM and py4j print goes to that file, not the terminal.

    Fails with one line, and fast, when a standalone master does not answer."""
    check_master(master)
    active = SparkSession.getActiveSession()
    if active is not None:
        if active.sparkContext.master == master:
            return active
        active.stop()
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # progress is ours, one line per level
        "spark.sql.warehouse.dir": os.path.join(tempfile.gettempdir(), "ctmc-spark-warehouse"),
    }
    # Spark's own logs (Java stack traces included) stay off the terminal unless debugging.
    # The JIT stops at its first tier: the driver's work is scheduling, and the optimising
    # compiler's warm-up took a third of a short run's CPU (decision 0013's addendum)
    settings["spark.driver.extraJavaOptions"] = \
        f"-Dlog4j2.configurationFile={_log_config()} -XX:TieredStopAtLevel=1"
    if _LOCAL_MASTER.fullmatch(master):  # executors run here: this interpreter
        # PySpark starts its workers with $PYSPARK_PYTHON (else `python3` on the PATH), not
        # with the spark.pyspark.python setting: from a venv that is not activated, that
        # would be an interpreter without numpy and pyarrow. A user's choice is kept.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    builder = SparkSession.builder.master(master).appName("ctmc")
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        with no_pandas_warning():
            if log is not None:
                _quiet_gateway(master, {**settings, **(conf or {})}, log)
            spark = builder.getOrCreate()
    except Exception as exc:  # no Java, a refused master, ...: py4j and pyspark errors
        where = f" (Spark's log: {log})" if log is not None else ""
        raise CheckerError(f"cannot start Spark on {master}: {first_line(exc)}{where}") \
            from None
    spark.sparkContext.setLogLevel("ERROR" if _debugging() else "OFF")
    _watch_ctrl_c()
    return spark


INTERRUPTED = threading.Event()  # Ctrl-C arrived during the run (see `_watch_ctrl_c`)


def _watch_ctrl_c() -> None:
    """Note Ctrl-C before PySpark's own handler runs. That handler cancels the running
    jobs, so the job the driver waits on can fail before the KeyboardInterrupt reaches
    it (the engine asks `INTERRUPTED` to tell that failure from a real one), and the
    cancel itself can fail (py4j busy with the call the signal interrupted): whatever it
    raises, Ctrl-C is a KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGINT)
    if getattr(previous, "ctmc_watch", False):
        return

    def noted(signum: int, frame: FrameType | None) -> None:
        INTERRUPTED.set()
        with contextlib.suppress(Exception):  # its cancel fails while py4j is busy
            if callable(previous):
                previous(signum, frame)
        raise KeyboardInterrupt

    noted.ctmc_watch = True  # type: ignore[attr-defined]
    signal.signal(signal.SIGINT, noted)


def _quiet_gateway(master: str, settings: dict[str, str], log: Path) -> None:
    """Start Spark's JVM (unless this process has one) with its output going to `log`:
    its warnings and console logs, and the Python workers it starts, write there for the
    whole run, and py4j's Python logger too, so the terminal shows only ctmc's lines.
    PySpark offers this through `launch_gateway(popen_kwargs=...)`, the gateway then
    being the one `getOrCreate` uses (it starts one only when there is none)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    to_log = logging.FileHandler(log)
    py4j = logging.getLogger("py4j")
    py4j.addHandler(to_log)
    py4j.propagate = False
    # py4j also logs through the root logger (`logging.exception`), which would then set
    # up a handler on stderr: one on the file first keeps Ctrl-C's tracebacks there
    logging.getLogger().addHandler(to_log)
    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setMaster(master).setAppName("ctmc")
    for key, value in settings.items():
        conf.set(key, value)
    with open(log, "ab") as out:  # the JVM keeps its own copy of the file
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def first_line(exc: BaseException) -> str:
    """An exception from the JVM in one line: its first line, without the Java stack
    trace (which CTMC_DEBUG=1 shows)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


def _debugging() -> bool:
    return os.environ.get("CTMC_DEBUG", "0") not in ("", "0")


# A log4j2 configuration logging to stderr at {level}
LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log_config() -> str:
    """A log4j2 file keeping Spark's driver quiet (errors only with CTMC_DEBUG=1): the
    progress lines stay readable and Java stack traces stay off the terminal."""
    level = "error" if _debugging() else "off"
    path = Path(tempfile.gettempdir()) / f"ctmc-spark-log4j2-{level}.properties"
    text = LOG4J2.replace("{level}", level)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path.as_uri()


@contextlib.contextmanager
def no_pandas_warning() -> Iterator[None]:
    """PySpark warns that it does not support pandas 3; the Arrow path never uses pandas."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas",
                                FutureWarning)
        yield


def check_master(master: str) -> None:
    """Refuse, within seconds, a master URL that is malformed or does not answer as a
    Spark master (a closed port, an unroutable host, a web UI or any other service)."""
    if not master.strip():
        raise CheckerError("the Spark master is empty (expected local[N], "
                           "local-cluster[N,CORES,MB], spark://HOST:PORT, yarn or k8s://URL)")
    if re.fullmatch(r"local\[0+(,\d+)?\]", master):
        raise CheckerError(f"Spark master {master}: a local master needs at least one core")
    if _LOCAL_MASTER.fullmatch(master) or master == "yarn" or master.startswith("k8s://"):
        return
    if not master.startswith("spark://"):
        raise CheckerError(f"unknown Spark master {master!r} (expected local[N], "
                           "local-cluster[N,CORES,MB], spark://HOST:PORT, yarn or k8s://URL)")
    errors = []
    for address in master[len("spark://"):].split(","):  # several: standby masters
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise CheckerError(f"malformed Spark master {master!r}: expected spark://HOST:PORT")
        problem = _probe(host, int(port))
        if problem is None:
            return
        errors.append(f"{address}: {problem}")
    raise CheckerError(f"{master} is not a Spark master that answers ({'; '.join(errors)})")


_PROBE_ID = 0x63746D63  # "ctmc": the request id a Spark RPC server echoes back


def _probe(host: str, port: int) -> str | None:
    """None if (host, port) answers Spark's RPC protocol, else what it did instead.

    The probe is one RPC request with a body no endpoint understands. A Spark RPC
    server answers every request, so it answers with an RpcFailure frame (type 5)
    carrying our request id; an HTTP server answers `HTTP/1.1 400`, and others say
    nothing or hang up. A master logs the failed request, nothing more."""
    body = b"ctmc: is this a Spark master?\r\n\r\n"  # line ends: HTTP servers answer at once
    frame = struct.pack(">qbqi", 8 + 1 + 8 + 4 + len(body), 3, _PROBE_ID, len(body)) + body
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS) as conn:
            conn.settimeout(PROBE_SECONDS)
            conn.sendall(frame)
            answer = b""
            while len(answer) < 17:
                chunk = conn.recv(64)
                if not chunk:
                    break
                answer += chunk
    except TimeoutError:
        return f"no answer within {PROBE_SECONDS:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)
    if answer.startswith(b"HTTP/") or answer.lstrip().lower().startswith((b"<!doctype", b"<html")):
        return "it answers HTTP (a web UI or REST port?); a master's RPC port is usually 7077"
    if len(answer) >= 17 and answer[8] in (4, 5) and \
            struct.unpack(">q", answer[9:17])[0] == _PROBE_ID:
        return None
    return "it does not answer Spark's RPC protocol" if answer else "it closed the connection"


def executors(context: Any) -> int:
    """Executors this application has now (on a local master, the driver's own)."""
    registered = context._jsc.sc().getExecutorMemoryStatus().size()  # the driver's included
    return registered if _LOCAL_MASTER.fullmatch(context.master) else registered - 1


def executor_wait() -> float:
    """$CTMC_SPARK_EXECUTOR_WAIT in seconds, or one line saying it is not a number of them."""
    text = os.environ.get(EXECUTOR_WAIT_ENV, str(EXECUTOR_WAIT_SECONDS))
    try:
        wait = float(text)
    except ValueError:
        wait = math.nan
    if not math.isfinite(wait) or wait <= 0:
        raise CheckerError(f"${EXECUTOR_WAIT_ENV} is {text!r}, not a number of seconds")
    return wait


def first_job(context: Any, job: Callable[[], T], description: str,
              progress: Progress | None) -> T:
    """Run a run's first job, refusing a cluster that gives it no executor.

    A master that accepts the application but has no worker with the cores and memory
    an executor asks for (or no worker at all) leaves the job waiting for ever, its
    only word a warning in Spark's log. The job runs on a thread here; if it has no
    executor after $CTMC_SPARK_EXECUTOR_WAIT seconds (120 by default) it is cancelled
    and the run refused in one line. With executors, it may take as long as it takes."""
    if _LOCAL_MASTER.fullmatch(context.master):
        context.setJobDescription(description)
        return job()
    wait = executor_wait()
    group = f"ctmc-first-job-{os.getpid()}"
    outcome: dict[str, Any] = {}

    def run() -> None:  # job groups belong to the thread that submits the job
        context.setJobGroup(group, description)
        try:
            outcome["value"] = job()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="ctmc-first-job")
    deadline = time.monotonic() + wait
    with Heartbeat(progress, lambda: f"waiting for executors from {context.master}"
                   if not executors(context) else description):
        thread.start()
        while thread.is_alive():
            thread.join(0.5)
            if thread.is_alive() and time.monotonic() > deadline and not executors(context):
                context.cancelJobGroup(group)
                thread.join(10)
                raise CheckerError(
                    f"{context.master} gave this run no executor in {wait:g} s: no worker "
                    "is alive, or none has the cores and memory an executor asks for "
                    f"(set {EXECUTOR_WAIT_ENV} to wait longer)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
