"""The run directory of a Spark BFS: what is being run, how far it got, and its levels.

    DIR/run.json      what the run explores (model, spec, parameters, properties,
                      engine version) and its partition count; written once
    DIR/levels.json   the last durable level and the totals up to it; replaced
                      atomically after each level's Parquet is committed
    DIR/level=K/      level K's states as Parquet, one file per fingerprint bucket

A level is durable once levels.json names it. Anything beyond (a level whose
write or record was cut short, Spark's staging folders) is discarded on
resume, which then continues from the last durable level; a run is never
resumed into a directory written for something else, and nothing here ever
deletes a run directory or a durable level.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from checker.errors import CheckerError

RUN_FILE = "run.json"
LEVELS_FILE = "levels.json"
_LEVEL_DIR = re.compile(r"^level=(\d+)$")
_STAGING = re.compile(r"^(_temporary|\.spark-staging-.*)$")


@dataclass
class Progress:
    """Totals up to the last durable level (the contents of levels.json)."""

    sizes: list[int] = field(default_factory=list)  # distinct states per level
    generated: int = 0  # transitions out of every level but the last
    enabled: list[int] = field(default_factory=list)  # per action instance
    new_states: list[int] = field(default_factory=list)  # per action instance
    seconds: float = 0.0  # wall time of the runs that got here
    levels: list[dict[str, Any]] = field(default_factory=list)  # per level: timings, bytes

    @property
    def durable(self) -> int:
        """The last durable level, -1 before level 0 is committed."""
        return len(self.sizes) - 1


@dataclass
class RunDir:
    path: Path
    identity: dict[str, Any]
    partitions: int

    def level_path(self, level: int) -> Path:
        return self.path / f"level={level}"

    def commit(self, progress: Progress) -> None:
        """Record `progress` atomically: a crash leaves the previous record."""
        _write_json(self.path / LEVELS_FILE, asdict(progress))

    def parquet_bytes(self, level: int) -> int:
        folder = self.level_path(level)
        if not folder.is_dir():
            return 0
        return sum(f.stat().st_size for f in folder.iterdir()
                   if f.is_file() and not f.name.startswith((".", "_")))


def default_path(label: str) -> Path:
    """Where a run goes when no --run-dir is given: a new folder under runs/."""
    return Path("runs") / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"


def check_new(path: str | os.PathLike) -> None:
    """Refuse a folder that is a file or holds anything: it is never cleared."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise CheckerError(f"run directory {folder} is a file")
    if folder.is_dir() and any(folder.iterdir()):
        hint = " (to continue that run, use --resume)" if (folder / RUN_FILE).is_file() else ""
        raise CheckerError(f"run directory {folder} is not empty{hint}; choose another "
                           "--run-dir")


def create(path: str | os.PathLike, identity: dict[str, Any], partitions: int) -> RunDir:
    """A new run in `path` (see `check_new`), with its run.json."""
    folder = Path(path)
    check_new(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_json(folder / RUN_FILE, {"identity": identity, "partitions": partitions})
    except OSError as exc:
        raise CheckerError(f"cannot create run directory {folder}: "
                           f"{exc.strerror or exc}") from None
    return RunDir(folder, identity, partitions)


def inspect(path: str | os.PathLike, identity: dict[str, Any],
            partitions: int | None) -> tuple[RunDir, Progress]:
    """The run in `path` and its durable progress, if it explores the same thing and
    `partitions` (if given) is its partition count. Changes nothing."""
    folder = Path(path)
    record = _read_json(folder / RUN_FILE, f"cannot resume {folder}: not a Spark run directory")
    if not isinstance(record, dict) or not isinstance(record.get("identity"), dict) \
            or not isinstance(record.get("partitions"), int):
        raise CheckerError(f"cannot resume {folder}: {RUN_FILE} is malformed")
    _check_identity(folder, record["identity"], identity)
    if partitions is not None and partitions != record["partitions"]:
        raise CheckerError(f"cannot resume {folder} with --partitions {partitions}: its levels "
                           f"are split into {record['partitions']} partitions")
    progress = Progress()
    if (folder / LEVELS_FILE).exists():
        data = _read_json(folder / LEVELS_FILE, f"cannot resume {folder}")
        try:
            progress = Progress(**data)
        except TypeError:
            raise CheckerError(f"cannot resume {folder}: {LEVELS_FILE} is malformed") from None
    return RunDir(folder, identity, record["partitions"]), progress


def resume(path: str | os.PathLike, identity: dict[str, Any],
           partitions: int | None) -> tuple[RunDir, Progress]:
    """`inspect`, then discard whatever lies beyond the last durable level."""
    run, progress = inspect(path, identity, partitions)
    _discard_beyond(run.path, progress.durable)
    return run, progress


def _check_identity(folder: Path, recorded: dict[str, Any], identity: dict[str, Any]) -> None:
    expected = json.loads(json.dumps(identity))
    for key in sorted(set(recorded) | set(expected)):
        if recorded.get(key) != expected.get(key):
            raise CheckerError(
                f"cannot resume {folder}: it was written for another model, parameters or "
                f"engine version ({key} is {_show(recorded.get(key))} there, "
                f"{_show(expected.get(key))} here)")


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _discard_beyond(folder: Path, durable: int) -> None:
    """Remove levels past the last durable one and Spark's unfinished writes."""
    for entry in folder.iterdir():
        match = _LEVEL_DIR.match(entry.name)
        if (match and int(match.group(1)) > durable) or _STAGING.match(entry.name):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_json(path: Path, context: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckerError(f"{context} (no {path.name})") from None
    except (OSError, ValueError) as exc:
        raise CheckerError(f"{context}: cannot read {path.name}: {exc}") from None
