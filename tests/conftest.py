"""Fixtures shared by the test files that run the Spark engine: one local[2] session
for the whole test run (Spark is slow to start), stopped at the end."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

LOCAL = "local[2]"


def start_session(master: str, fault_dir: Path):
    """The session on `master` (the active one if it runs there), with executors told
    where tests arm their faults. Java 17+ is required: without it the tests fail,
    saying so (they are never skipped)."""
    from checker.engines.spark.levels import FAULT_ENV
    from checker.engines.spark.session import spark_session

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("the Spark engine tests need Java 17 or newer: no java on PATH, no JAVA_HOME")
    return spark_session(master, conf={f"spark.executorEnv.{FAULT_ENV}": str(fault_dir)})


@pytest.fixture(scope="session")
def fault_dir(tmp_path_factory) -> Path:
    """Where tests arm `kill-level-K` files (see checker.engines.spark.levels.maybe_fail)."""
    return tmp_path_factory.mktemp("faults")


@pytest.fixture
def spark(fault_dir):
    """The local[2] session (started once; restarted if a cluster test stopped it)."""
    return start_session(LOCAL, fault_dir)


@pytest.fixture(scope="session", autouse=True)
def _stop_spark():
    yield
    if "pyspark.sql" in sys.modules:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
