"""Starting Spark for a run: the session, its logging, and a master that answers.

A local master runs executors in this interpreter, with Spark's driver logs kept
to errors so progress lines stay readable; a standalone master must accept a
connection within seconds, or the run is refused with one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

from checker.engines.spark.options import DEFAULT_MASTER
from checker.errors import CheckerError

_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]")


def spark_session(master: str = DEFAULT_MASTER, driver_memory: str | None = None,
                  conf: dict[str, str] | None = None) -> SparkSession:
    """The active session if it runs on `master`, else a new one (stopping the other).

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
    if _LOCAL_MASTER.fullmatch(master):  # executors run here: this interpreter, quiet logs
        settings["spark.pyspark.python"] = os.environ.get("PYSPARK_PYTHON", sys.executable)
        settings["spark.driver.extraJavaOptions"] = \
            f"-Dlog4j2.configurationFile={_log_config()}"
    if driver_memory:
        settings["spark.driver.memory"] = driver_memory
    builder = SparkSession.builder.master(master).appName("ctmc")
    for key, value in {**settings, **(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        with no_pandas_warning():
            spark = builder.getOrCreate()
    except Exception as exc:  # no Java, a refused master, ...: py4j and pyspark errors
        message = " ".join(str(exc).split())
        raise CheckerError(f"cannot start Spark on {master}: {message}") from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _log_config() -> str:
    """A log4j2 file keeping Spark's driver to errors: the progress lines stay readable."""
    path = Path(tempfile.gettempdir()) / "ctmc-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.write_text(_LOG4J2)
    return path.as_uri()


@contextlib.contextmanager
def no_pandas_warning() -> Iterator[None]:
    """PySpark warns that it does not support pandas 3; the Arrow path never uses pandas."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas",
                                FutureWarning)
        yield


def check_master(master: str) -> None:
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
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            return
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
    raise CheckerError(f"cannot reach Spark master {master} ({'; '.join(errors)})")
