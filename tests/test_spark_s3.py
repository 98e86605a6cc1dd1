"""The Spark engine with its run directory on S3 (`s3a://`), driven through the command
line as a user would, against a local S3 server.

What a rented cluster without a shared filesystem offers is object storage. Here the
driver publishes each durable file through Hadoop's S3A client in Spark's JVM (the
way `remote.py` reaches any Hadoop filesystem) to moto's S3 server, and `--resume`
reads the run back from the bucket alone. Spark finds the client as a user sets it
up: `spark.jars` and `spark.hadoop.fs.s3a.*` in the `spark-defaults.conf` of
`$SPARK_CONF_DIR`. Needs the hadoop-aws jar and the AWS SDK bundle it was built with
(`CTMC_S3A_JARS`: their paths, comma-separated; `.ci/run` takes them from PyPI's
sagemaker_pyspark) and moto's server; skipped without them.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import test_spark_cluster
from tests.test_spark_cluster import (
    Local,
    Running,
    assert_like_local,
    level_line,
    run,
    spark_args,
)

BUCKET = "ctmc"
HOLDS = "tracker_small"
FAILS = "mutation_reset_cur_on_prev_exit"
JARS = [p for p in os.environ.get("CTMC_S3A_JARS", "").split(",") if p]
# hadoop-aws 3.3.1 reads these as plain numbers, where Hadoop 3.4+ defaults carry units
# ("60s"): set them as numbers, or the client refuses to start (NumberFormatException)
PLAIN_NUMBERS = {"connection.establish.timeout": "30000", "connection.timeout": "200000",
                 "threads.keepalivetime": "60", "multipart.purge.age": "86400"}


def _missing() -> str:
    if len(JARS) != 2 or not all(Path(p).is_file() for p in JARS):
        return "CTMC_S3A_JARS does not name the hadoop-aws and AWS SDK jars (.ci/run sets it)"
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        return "moto's S3 server is not installed (pip install 'moto[server]')"
    return ""


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "ready")


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local S3 server holding the bucket, and Spark's defaults pointing S3A at it
    ($SPARK_CONF_DIR, for this module's runs); yields a boto3 client of the server."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    conf = tmp_path_factory.mktemp("spark-conf")
    settings = {"spark.jars": ",".join(JARS),
                "spark.hadoop.fs.s3a.endpoint": endpoint,
                "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                "spark.hadoop.fs.s3a.access.key": "testing",
                "spark.hadoop.fs.s3a.secret.key": "testing",
                "spark.hadoop.fs.s3a.aws.credentials.provider":
                    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                **{f"spark.hadoop.fs.s3a.{k}": v for k, v in PLAIN_NUMBERS.items()}}
    (conf / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in settings.items()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPARK_CONF_DIR", str(conf))
        yield client
    server.stop()


def keys(client: Any, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"][len(prefix):] for page in pages for o in page.get("Contents", []))


local_engine = test_spark_cluster.local_engine  # the local engine's results, once a model


def spark(model: str, url: str, trace: Path, resume: bool = False) -> list[str]:
    return spark_args(model, "local[2]", url, trace, resume)


def test_a_run_on_s3_gives_the_local_result(
        s3: Any, local_engine: Callable[[str], Local], tmp_path: Path) -> None:
    """Same verdict, counts and coverage as the local engine; the bucket holds the run
    record and every level's record, and nothing of the exchange."""
    trace = tmp_path / "spark.itf.json"
    done = run(spark(HOLDS, f"s3a://{BUCKET}/holds", trace))
    out = assert_like_local(local_engine(HOLDS), done, trace)
    assert out["stats"]["exchange"] == "shuffle"  # the executors never see the URL
    stored = keys(s3, "holds/")
    levels = out["stats"]["diameter"] + 1
    assert "run.json" in stored
    assert {f"level={k}/_ctmc_level.json" for k in range(levels)} <= set(stored)
    assert not [k for k in stored if k.startswith("exchange")], stored


def test_a_killed_driver_resumes_from_the_bucket(
        s3: Any, local_engine: Callable[[str], Local], tmp_path: Path) -> None:
    """The driver (the CLI and its JVM) is killed mid-run: `--resume` with the URL
    takes the recorded levels from the bucket alone (the driver's own copy went with
    it) and ends on the local engine's counterexample, without exploring level 1
    again."""
    url, trace = f"s3a://{BUCKET}/killed", tmp_path / "spark.itf.json"
    with Running(spark(FAILS, url, trace)) as running:
        running.wait_for(level_line(3) + " new")
        running.kill()
    assert running.proc.returncode == -signal.SIGKILL
    assert "level=3/_ctmc_level.json" in keys(s3, "killed/")
    done = run(spark(FAILS, url, trace, resume=True))
    out = assert_like_local(local_engine(FAILS), done, trace)
    assert out["violation"] is not None
    assert not re.search(level_line(1) + " new", done.stderr, re.MULTILINE), \
        "the resumed run explored level 1 again:\n" + done.stderr[-3000:]


def test_a_bucket_that_does_not_exist_is_one_line(s3: Any, tmp_path: Path) -> None:
    url = "s3a://no-such-bucket/run"
    done = run(spark(HOLDS, url, tmp_path / "spark.itf.json"))
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and url in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert done.stdout == ""
