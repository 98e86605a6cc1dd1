"""Hadoop filesystems other than the local one, for the Spark engine's run directory in
tests: an S3 bucket on moto's server (`s3a://`) and HDFS from a name node and a data
node of their own (`hdfs://`).

Neither is a dependency of the project, so each says why it cannot start here
(`s3_missing`, `hdfs_missing`). Each also writes the `spark-defaults.conf` a user
would write to reach it, in a folder to name in $SPARK_CONF_DIR.

    with hdfs_store(tmp_dir) as store:
        run([..., "--run-dir", store.url("run")], env={"SPARK_CONF_DIR": str(store.spark_conf)})
        store.files("run")  # ["run.json", "level=0/_ctmc_level.json", ...]
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.spark_cluster import HOST, READY_SECONDS, Daemon, free_ports, java_missing

S3A_JARS_ENV = "CTMC_S3A_JARS"  # the hadoop-aws jar and its AWS SDK bundle, comma-separated
HDFS_JARS_ENV = "CTMC_HDFS_JARS"  # a folder of Hadoop 2's HDFS jars and their dependencies
BUCKET = "ctmc"
# hadoop-aws 3.3.1 reads these as plain numbers, where Hadoop 3.4+ defaults carry units
# ("60s"): set them as numbers, or the client refuses to start (NumberFormatException)
S3A_PLAIN_NUMBERS = {"connection.establish.timeout": "30000",
                     "connection.timeout": "200000", "threads.keepalivetime": "60",
                     "multipart.purge.age": "86400"}


@dataclass(frozen=True)
class Store:
    """A filesystem ready for runs: where they go, a URL of its kind that Spark cannot
    open, the Spark configuration folder that reaches it, and a way to list a run."""

    root: str
    unreachable: str
    spark_conf: Path
    files: Callable[[str], list[str]]  # a run's files (by name), relative to its URL

    def url(self, run: str) -> str:
        return f"{self.root}/{run}"


def spark_defaults(folder: Path, settings: dict[str, str]) -> Path:
    """A new folder for $SPARK_CONF_DIR whose spark-defaults.conf holds `settings`."""
    folder.mkdir()
    (folder / "spark-defaults.conf").write_text(
        "".join(f"{key} {value}\n" for key, value in settings.items()))
    return folder


# --- S3 ------------------------------------------------------------------------------------

def _s3a_jars() -> list[str]:
    return [p for p in os.environ.get(S3A_JARS_ENV, "").split(",") if p]


def s3_missing() -> str | None:
    """Why `s3_store` cannot start here, or None."""
    jars = _s3a_jars()
    if len(jars) != 2 or not all(Path(p).is_file() for p in jars):
        return f"{S3A_JARS_ENV} does not name the hadoop-aws and AWS SDK jars (.ci/run sets it)"
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        return "moto's S3 server is not installed (pip install 'moto[server]')"
    return None


@contextlib.contextmanager
def s3_store(base: Path) -> Iterator[Store]:
    """An S3 endpoint (moto's server) holding one bucket, reached through S3A."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)

        def files(run: str) -> list[str]:
            prefix = f"{run}/"
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                      Prefix=prefix)
            return sorted(o["Key"][len(prefix):] for page in pages
                          for o in page.get("Contents", []))

        conf = spark_defaults(base / "spark-conf", {
            "spark.jars": ",".join(_s3a_jars()),
            "spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": "testing",
            "spark.hadoop.fs.s3a.secret.key": "testing",
            "spark.hadoop.fs.s3a.aws.credentials.provider":
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            **{f"spark.hadoop.fs.s3a.{k}": v for k, v in S3A_PLAIN_NUMBERS.items()}})
        yield Store(f"s3a://{BUCKET}", "s3a://no-such-bucket/run", conf, files)
    finally:
        server.stop()


# --- HDFS ----------------------------------------------------------------------------------

def _hdfs_jars() -> Path | None:
    folder = os.environ.get(HDFS_JARS_ENV)
    if folder and any(Path(folder).glob("hadoop-hdfs-*.jar")):
        return Path(folder)
    return None


def hdfs_missing() -> str | None:
    """Why `hdfs_store` cannot start here, or None."""
    if _hdfs_jars() is None:
        return (f"{HDFS_JARS_ENV} does not name a folder of Hadoop's HDFS jars "
                "(.ci/run sets it)")
    return java_missing()


def _site(properties: dict[str, str]) -> str:
    return "<configuration>\n" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>\n"
        for k, v in properties.items()) + "</configuration>\n"


@contextlib.contextmanager
def hdfs_store(base: Path) -> Iterator[Store]:
    """HDFS on this machine: a freshly formatted name node and one data node, each a
    JVM of its own on the jars in $CTMC_HDFS_JARS. Spark reaches it with Hadoop's own
    HDFS client (pyspark's), as on a cluster, told only to keep one replica."""
    jars = _hdfs_jars()
    assert jars is not None, hdfs_missing()
    java = shutil.which("java") or str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    conf = base / "hadoop-conf"
    for webapp in ("hdfs", "datanode"):  # the web servers want these on the class path
        (conf / "webapps" / webapp).mkdir(parents=True)
    (port,) = free_ports(1)
    root = f"hdfs://{HOST}:{port}"
    (conf / "core-site.xml").write_text(_site({"fs.defaultFS": root,
                                               "hadoop.tmp.dir": str(base / "hdfs")}))
    (conf / "hdfs-site.xml").write_text(_site({
        "dfs.replication": "1", "dfs.permissions.enabled": "false",
        "dfs.webhdfs.enabled": "false",  # it needs Jersey 1, which the jars lack
        **{key: f"{HOST}:0" for key in ("dfs.namenode.http-address", "dfs.datanode.address",
                                        "dfs.datanode.http.address",
                                        "dfs.datanode.ipc.address")}}))
    (conf / "log4j.properties").write_text(
        "log4j.rootLogger=WARN,console\n"
        "log4j.appender.console=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.console.layout.ConversionPattern=%d %p %c{1}: %m%n\n")

    def hadoop(main: str, *args: str) -> list[str]:
        return [java, "-Xmx384m", "-cp", f"{conf}:{jars}/*", main, *args]

    def output(main: str, *args: str) -> str:
        done = subprocess.run(hadoop(main, *args), capture_output=True, text=True,
                              timeout=READY_SECONDS)
        if done.returncode:
            raise RuntimeError(f"{main} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    def report() -> str:
        """The name node's report of its data nodes ("" while it cannot answer yet)."""
        with contextlib.suppress(RuntimeError):
            return output("org.apache.hadoop.hdfs.tools.DFSAdmin", "-report")
        return ""

    output("org.apache.hadoop.hdfs.server.namenode.NameNode", "-format", "-nonInteractive")
    daemons = [Daemon(name, hadoop(f"org.apache.hadoop.hdfs.server.{main}"), dict(os.environ),
                      base / f"{name}.log")
               for name, main in (("namenode", "namenode.NameNode"),
                                  ("datanode", "datanode.DataNode"))]
    try:
        deadline = time.monotonic() + READY_SECONDS
        while "Live datanodes (1)" not in report():
            if time.monotonic() > deadline or not all(d.alive() for d in daemons):
                raise RuntimeError("HDFS did not start:\n" +
                                   "\n".join(d.tail() for d in daemons))
            time.sleep(0.5)

        def files(run: str) -> list[str]:
            url = f"{root}/ctmc/{run}/"
            listed = output("org.apache.hadoop.fs.FsShell", "-ls", "-R", url)
            return sorted(line.split()[-1].split(url, 1)[1] for line in listed.splitlines()
                          if line.startswith("-"))

        (unused,) = free_ports(1)
        yield Store(f"{root}/ctmc", f"hdfs://{HOST}:{unused}/run",
                    spark_defaults(base / "spark-conf", {"spark.hadoop.dfs.replication": "1"}),
                    files)
    finally:
        for daemon in daemons:
            daemon.stop()

