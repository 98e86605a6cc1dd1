"""A run directory on a Hadoop filesystem (hdfs://, s3a://, ...): a local copy, published.

On a rented cluster the driver's disk may go with the driver, so the run directory
must live on the cluster's own storage. The driver keeps the run in a local folder,
as any run (`run_dir.py` reads and writes only local paths), and publishes each
durable file to the URL through the Hadoop FileSystem of Spark's own JVM, which has
the cluster's configuration and credentials, as Spark's writers do. A level's files
are published before its record, so a level is durable at the URL once its record
is there. Resuming downloads the URL into a fresh local folder, runs the local
resume on it (which verifies every level and removes only what ctmc wrote), and then
removes at the URL what the local resume removed. The executors never see the URL:
such a run uses the shuffle exchange (`carried.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from checker.errors import CheckerError


class Remote:
    """The run directory `url`, reached through Spark's Hadoop filesystem client."""

    def __init__(self, spark: Any, url: str):
        self.url = url.rstrip("/")
        self._jvm = spark.sparkContext._jvm
        conf = spark.sparkContext._jsc.hadoopConfiguration()
        try:
            self._root = self._jvm.org.apache.hadoop.fs.Path(self.url)
            self._fs = self._root.getFileSystem(conf)
            self._fs.exists(self._root)
        except (Py4JError, PySparkException) as exc:  # PySpark converts some Java errors
            raise CheckerError(f"run directory {url}: Spark cannot open its filesystem "
                               f"({_java_cause(exc)})") from None
        self.made = False  # whether `start` made the folder

    def _path(self, rel: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(f"{self.url}/{rel}") if rel else self._root

    def _call(self, what: str, action: Any) -> Any:
        try:
            return action()
        except (Py4JError, PySparkException) as exc:
            raise CheckerError(f"run directory {self.url}: cannot {what} "
                               f"({_java_cause(exc)})") from None

    def files(self) -> list[str]:
        """Every file under the run directory, relative to it (none if it is missing)."""
        if not self._call("list it", lambda: self._fs.exists(self._root)):
            return []
        found = []
        listing = self._call("list it", lambda: self._fs.listFiles(self._root, True))
        prefix = self._call("list it", lambda: self._fs.makeQualified(self._root)).toString()
        while self._call("list it", listing.hasNext):
            path = listing.next().getPath().toString()
            found.append(path[len(prefix):].lstrip("/"))
        return sorted(found)

    def start(self) -> None:
        """Refuse a folder that is a file or holds anything, as a local --run-dir."""
        if self._call("read it", lambda: self._fs.exists(self._root)):
            if self._call("read it", lambda: self._fs.isFile(self._root)):
                raise CheckerError(f"run directory {self.url} is a file")
            present = self.files()
            if present:
                hint = " (to continue that run, use --resume)" if "run.json" in present else ""
                raise CheckerError(f"run directory {self.url} is not empty{hint}; choose "
                                   "another --run-dir")
        else:
            self.made = True

    def download(self, local: Path) -> None:
        """Copy the run directory into the empty folder `local`."""
        present = self.files()
        if "run.json" not in present:
            raise CheckerError(f"cannot resume {self.url}: not a Spark run directory "
                               "(no run.json)")
        for rel in present:
            target = local / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self._call(f"read {rel}", lambda rel=rel, target=target: self._fs.copyToLocalFile(
                False, self._path(rel), self._jvm.org.apache.hadoop.fs.Path(str(target)), True))

    def publish(self, local: Path, rel: str) -> None:
        """Copy the local file `local` to `rel`, replacing it: under a temporary name,
        then renamed, so a reader finds the old file or the new one."""
        target = self._path(rel)
        temporary = self._path(f"{rel.rpartition('/')[0]}/.{rel.rpartition('/')[2]}.tmp"
                               if "/" in rel else f".{rel}.tmp")
        source = self._jvm.org.apache.hadoop.fs.Path(str(local))

        def copy() -> None:
            self._fs.copyFromLocalFile(False, True, source, temporary)
            if self._fs.exists(target):
                self._fs.delete(target, False)
            if not self._fs.rename(temporary, target):
                raise CheckerError(f"run directory {self.url}: cannot rename to {rel}")

        self._call(f"write {rel}", copy)

    def remove(self, rel: str) -> None:
        self._call(f"delete {rel}", lambda: self._fs.delete(self._path(rel), False))

    def prune(self, local: Path) -> None:
        """Delete the files that are no longer in `local` (the local resume removed
        them: only files ctmc writes), and the folders they leave empty."""
        gone = [rel for rel in self.files() if not (local / rel).exists()]
        for rel in gone:
            self.remove(rel)
        remaining = self.files()
        for folder in sorted({rel.rpartition("/")[0] for rel in gone if "/" in rel},
                             reverse=True):
            if not (local / folder).exists() and not any(
                    f.startswith(folder + "/") for f in remaining):
                self.remove(folder)

    def abandon(self) -> None:
        """Undo `start` and the run.json published since, for a run refused before
        level 0."""
        self.remove("run.json")
        if self.made and not self.files():  # never a folder with anything in it
            self._call("delete it", lambda: self._fs.delete(self._root, False))


def _java_cause(exc: BaseException) -> str:
    """The Java exception's message, in one line."""
    java = getattr(exc, "java_exception", None)  # py4j's
    if java is None:
        java = getattr(exc, "_origin", None)  # PySpark's conversion keeps the original
    text = java.toString() if java is not None else str(exc)
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__
