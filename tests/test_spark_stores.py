"""The Spark engine with its run directory on a Hadoop filesystem other than the local
one, driven through the command line as a user would: S3 (`s3a://`, moto's server)
and HDFS (`hdfs://`, a name node and a data node of its own), from tests/hadoop_stores.py.

What a rented cluster without a shared filesystem offers is object storage or HDFS.
The driver publishes each level's files, then its record, through the Hadoop client in
Spark's JVM (the way `remote.py` reaches any Hadoop filesystem), and `--resume` reads
the run back from the store alone. Spark finds the store as a user sets it up:
`spark.*` settings in the `spark-defaults.conf` of `$SPARK_CONF_DIR`. Each store needs
what is not a dependency of the project (the S3A jars and moto; Hadoop's HDFS jars:
`.ci/run` fetches them) and is skipped without it.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import test_spark_cluster
from tests.hadoop_stores import Store, hdfs_missing, hdfs_store, s3_missing, s3_store
from tests.test_spark_cluster import (
    Local,
    Running,
    assert_like_local,
    level_line,
    run,
    spark_args,
)

HOLDS = "tracker_small"
FAILS = "mutation_reset_cur_on_prev_exit"
STORES = {"s3a": (s3_missing, s3_store), "hdfs": (hdfs_missing, hdfs_store)}


@pytest.fixture(scope="module", params=sorted(STORES))
def store(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A store for the module's runs, and Spark's defaults reaching it ($SPARK_CONF_DIR)."""
    missing, started = STORES[request.param]
    reason = missing()
    if reason:
        pytest.skip(reason)
    with started(tmp_path_factory.mktemp(request.param)) as ready, \
            pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARK_CONF_DIR", str(ready.spark_conf))
        yield ready


local_engine = test_spark_cluster.local_engine  # the local engine's results, once a model


def spark(model: str, url: str, trace: Path, resume: bool = False) -> list[str]:
    return spark_args(model, "local[2]", url, trace, resume)


def test_a_run_gives_the_local_result(
        store: Store, local_engine: Callable[[str], Local], tmp_path: Path) -> None:
    """Same verdict, counts and coverage as the local engine; the store holds the run
    record and every level's record, and nothing of the exchange."""
    trace = tmp_path / "spark.itf.json"
    done = run(spark(HOLDS, store.url("holds"), trace))
    out = assert_like_local(local_engine(HOLDS), done, trace)
    assert out["stats"]["exchange"] == "shuffle"  # the executors never see the URL
    stored = store.files("holds")
    levels = out["stats"]["diameter"] + 1
    assert "run.json" in stored
    assert {f"level={k}/_ctmc_level.json" for k in range(levels)} <= set(stored)
    assert not [k for k in stored if k.startswith("exchange")], stored


def test_a_killed_driver_resumes_from_the_store(
        store: Store, local_engine: Callable[[str], Local], tmp_path: Path) -> None:
    """The driver (the CLI and its JVM) is killed mid-run: `--resume` with the URL
    takes the recorded levels from the store alone (the driver's own copy went with
    it) and ends on the local engine's counterexample, without exploring level 1
    again."""
    url, trace = store.url("killed"), tmp_path / "spark.itf.json"
    with Running(spark(FAILS, url, trace)) as running:
        running.wait_for(level_line(3) + " new")
        running.kill()
    assert running.proc.returncode == -signal.SIGKILL
    assert "level=3/_ctmc_level.json" in store.files("killed")
    done = run(spark(FAILS, url, trace, resume=True))
    out = assert_like_local(local_engine(FAILS), done, trace)
    assert out["violation"] is not None
    assert not re.search(level_line(1) + " new", done.stderr, re.MULTILINE), \
        "the resumed run explored level 1 again:\n" + done.stderr[-3000:]


def test_a_store_spark_cannot_reach_is_one_line(store: Store, tmp_path: Path) -> None:
    """A bucket that does not exist, a name node that is not there."""
    done = run(spark(HOLDS, store.unreachable, tmp_path / "spark.itf.json"))
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and store.unreachable in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert done.stdout == ""
