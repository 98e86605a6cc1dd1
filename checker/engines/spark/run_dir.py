"""The run directory of a Spark BFS: what is being run, and its levels with their records.

    DIR/run.json                   what the run explores (its identity), its
                                   bucket count and its exchange (files or shuffle,
                                   once chosen); marks the folder as a ctmc run
                                   directory
    DIR/level=K/part-B.parquet     level K's states in bucket B, sorted by fingerprint
    DIR/level=K/_ctmc_level.json   level K's record: each file's size, row count and
                                   SHA-256, the sizes of the visited runs it wrote, the
                                   level's counters and timings, and a SHA-256 of the
                                   record itself
    DIR/visited/bucket=B/L*.u64    bucket B's visited fingerprints (`visited_runs.py`)
    DIR/exchange/level=K/          the successors on their way to level K (`exchange.py`),
                                   deleted once level K is recorded

The last two are the file exchange's. With the shuffle exchange (`carried.py`) the
executors keep the visited set and the driver alone writes here.

A level is durable once its record is written, after every task wrote its files;
the run's progress is the sum of the records of levels 0..K. On resume every
durable level is verified against its record; a mismatch (a file missing, changed
or added, a record edited) is one line naming the file, and nothing is deleted. The
only things resume removes are what a killed run left unfinished: the one level
after the last durable one, which has no record, the visited runs not in the
durable levels' schedule, the exchange, and half-written temporary files; and of
those, only files by the names ctmc writes: any other file there (the user's) stops
the resume, with one line naming it, before anything is deleted. There is no separate
index to lose: the records are the bookkeeping.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow.parquet as pq

from checker.engines.durable import file_sha256, read_json, same_identity, seal, unseal, write_json
from checker.engines.spark import exchange, visited_runs
from checker.errors import CheckerError

RUN_FILE = "run.json"
RECORD = "_ctmc_level.json"
_LEVEL_DIR = re.compile(r"^level=(\d+)$")
_TEMPORARY = re.compile(r"^\..*\.tmp$")  # `durable.write_bytes`'s, before its rename


@dataclass
class LevelCounts:
    """What one level adds to the run's totals: its states, and the expansion of the
    level before it that made them (level 0 adds only its states)."""

    states: int
    generated: int = 0  # transitions out of the level before
    enabled: list[int] = field(default_factory=list)  # per action instance, in that expansion
    new_states: list[int] = field(default_factory=list)  # canonical generators of this level
    timings: dict[str, Any] = field(default_factory=dict)  # seconds, task-seconds, bytes
    moved: int | None = None  # successors moved to another representative (older: absent)


@dataclass
class Progress:
    """Totals up to the last durable level: the sum of the levels' records."""

    sizes: list[int] = field(default_factory=list)  # distinct states per level
    generated: int = 0  # transitions out of every level but the last
    enabled: list[int] = field(default_factory=list)  # per action instance
    new_states: list[int] = field(default_factory=list)  # per action instance
    moved: int | None = 0  # successors moved to another representative (None: not known)
    seconds: float = 0.0  # wall time of the runs that got here
    levels: list[dict[str, Any]] = field(default_factory=list)  # per level: timings, bytes

    @classmethod
    def none_yet(cls, n_actions: int) -> Progress:
        """Before level 0: nothing counted for any of the `n_actions` instances."""
        return cls(enabled=[0] * n_actions, new_states=[0] * n_actions)

    @property
    def durable(self) -> int:
        """The last durable level, -1 before level 0 is recorded."""
        return len(self.sizes) - 1

    def add(self, counts: LevelCounts) -> None:
        self.sizes.append(counts.states)
        self.generated += counts.generated
        self.moved = None if self.moved is None or counts.moved is None \
            else self.moved + counts.moved
        if counts.enabled:
            self.enabled = [a + b for a, b in zip(self.enabled, counts.enabled, strict=True)]
            self.new_states = [a + b for a, b in zip(self.new_states, counts.new_states,
                                                     strict=True)]
        self.seconds += float(counts.timings.get("seconds", 0.0))
        self.levels.append({"level": len(self.sizes) - 1, "states": counts.states,
                            **counts.timings})


def level_folder(root: Path, level: int) -> Path:
    return root / f"level={level}"


def level_file(root: Path, level: int, bucket: int) -> Path:
    return level_folder(root, level) / f"part-{bucket:05d}.parquet"


FILES, SHUFFLE = "files", "shuffle"  # how a run's executors exchange successors


class Publisher(Protocol):
    """Where a run directory's durable files are copied to (`remote.Remote`)."""

    url: str

    def publish(self, local: Path, rel: str) -> None: ...

    def abandon(self) -> None: ...


@dataclass
class RunDir:
    path: Path
    identity: dict[str, Any]
    partitions: int
    exchange: str | None = None  # FILES or SHUFFLE; None until the first run chooses
    made: list[Path] = field(default_factory=list)  # folders this run's `create` made
    remote: Publisher | None = None  # where durable files are published, if anywhere

    @property
    def location(self) -> str:
        """The run directory as the user named it: its URL, or its path."""
        return self.remote.url if self.remote is not None else str(self.path)

    def abandon(self) -> None:
        """Undo `create`, for a run refused before level 0: nothing of it is left."""
        _unmake(self.path, self.made)
        if self.remote is not None:
            self.remote.abandon()

    def _publish(self, *files: Path) -> None:
        if self.remote is not None:
            for file in files:
                self.remote.publish(file, file.relative_to(self.path).as_posix())

    def choose_exchange(self, exchange: str) -> None:
        """Record the exchange in run.json: a resumed run keeps it."""
        self.exchange = exchange
        write_json(self.path / RUN_FILE, {"identity": self.identity,
                                          "partitions": self.partitions,
                                          "exchange": exchange})
        self._publish(self.path / RUN_FILE)

    def level_path(self, level: int) -> Path:
        return level_folder(self.path, level)

    def record(self, level: int, counts: LevelCounts, files: dict[str, dict[str, Any]],
               runs: dict[int, int]) -> None:
        """Make `level` durable: its tasks wrote `files` (name -> description) and, per
        bucket, a visited run of `runs[bucket]` bytes; check they are there, then
        describe them."""
        folder = self.level_path(level)
        present = {f.name: f.stat().st_size for f in _data_files(folder)}
        if present != {name: f["bytes"] for name, f in files.items()}:
            raise CheckerError(f"{folder}: the files there are not those the tasks of level "
                               f"{level} reported writing ({len(present)} found, {len(files)} "
                               "reported)")
        if len(runs) != (self.partitions if self.exchange == FILES else 0):
            raise CheckerError(f"{folder}: the tasks of level {level} reported visited runs "
                               f"for {len(runs)} of {self.partitions} buckets")
        if sum(f["rows"] for f in files.values()) != counts.states:
            raise CheckerError(f"{folder}: the tasks wrote {sum(f['rows'] for f in files.values())}"
                               f" rows for level {level}, not the {counts.states} counted")
        write_json(folder / RECORD, seal({"level": level, "files": files,
                                          "runs": {str(b): size for b, size in runs.items()},
                                          "counts": counts.__dict__}))
        self._publish(*(folder / name for name in sorted(files)), folder / RECORD)

    def discard(self, level: int) -> None:
        """Delete what the tasks of an unrecorded `level` wrote: its files, its runs."""
        _remove_ours(self.level_path(level), _LEVEL_FILES)
        self.drop_exchange(level)
        for bucket in range(self.partitions):
            folder = visited_runs.bucket_folder(self.path, bucket)
            for run in folder.glob(f"L*-{level}.u64"):
                run.unlink()

    def drop_exchange(self, level: int) -> None:
        """Delete the successors exchanged to build a level (once it is recorded)."""
        _remove_ours(exchange.folder(self.path, level), _EXCHANGE_FILES)

    def drop_runs(self, runs: list[tuple[int, int]]) -> None:
        """Delete visited runs that a recorded level's runs replaced."""
        for bucket in range(self.partitions):
            folder = visited_runs.bucket_folder(self.path, bucket)
            for run in runs:
                (folder / visited_runs.run_name(run)).unlink(missing_ok=True)


def default_path(label: str) -> Path:
    """Where a run goes when no --run-dir is given: a new folder under runs/."""
    return Path("runs") / f"{label}-{time.strftime('%Y%m%d-%H%M%S')}"


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")


def local_folder(path: str | os.PathLike) -> Path:
    """The run directory as a path on the driver: a path, or a file:/// URL. Other URLs
    (hdfs://, s3a://) are published to by `remote.py` and never come here; anything
    else that looks like one is refused, since taken as a path it would become a local
    folder named after its scheme."""
    text = str(path)
    if text.startswith("file:///"):
        return Path(text[len("file://"):])
    if _URL.match(text):
        raise CheckerError(f"run directory {path}: neither a path nor a URL of the form "
                           "file:///PATH or SCHEME://HOST/PATH (hdfs://, s3a://)")
    return Path(path)


def check_new(path: str | os.PathLike) -> None:
    """Refuse a URL, or a folder that is a file or holds anything: it is never cleared."""
    folder = local_folder(path)
    if folder.exists() and not folder.is_dir():
        raise CheckerError(f"run directory {folder} is a file")
    if folder.is_dir() and any(folder.iterdir()):
        hint = " (to continue that run, use --resume)" if (folder / RUN_FILE).is_file() else ""
        raise CheckerError(f"run directory {folder} is not empty{hint}; choose another "
                           "--run-dir")


def create(path: str | os.PathLike, identity: dict[str, Any], partitions: int) -> RunDir:
    """A new run in `path` (see `check_new`), with its run.json."""
    folder = local_folder(path)
    check_new(folder)
    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / RUN_FILE, {"identity": identity, "partitions": partitions})
    except OSError as exc:  # a full disk, say: leave nothing of ours behind
        _unmake(folder, made)
        raise CheckerError(f"cannot create run directory {folder}: "
                           f"{exc.strerror or exc}") from None
    return RunDir(folder.resolve(), identity, partitions, made=made)


def _unmake(folder: Path, made: list[Path]) -> None:
    """Remove run.json (or its temporary file) and the folders `create` made, if empty."""
    for name in (RUN_FILE, f".{RUN_FILE}.tmp"):
        (folder / name).unlink(missing_ok=True)
    for made_folder in made:
        with contextlib.suppress(OSError):
            made_folder.rmdir()


def inspect(path: str | os.PathLike, identity: dict[str, Any],
            partitions: int | None) -> RunDir:
    """The run in `path`, if it explores the same thing and `partitions` (if given) is
    its partition count. Reads run.json only; changes nothing."""
    folder = local_folder(path)
    record = read_json(folder / RUN_FILE, f"cannot resume {folder}: not a Spark run directory")
    if not isinstance(record, dict) or not isinstance(record.get("identity"), dict) \
            or not isinstance(record.get("partitions"), int):
        raise CheckerError(f"{folder / RUN_FILE}: malformed; {folder} cannot be resumed")
    same_identity(folder, record["identity"], identity)
    if partitions is not None and partitions != record["partitions"]:
        raise CheckerError(f"cannot resume {folder} with --partitions {partitions}: its levels "
                           f"are split into {record['partitions']} partitions")
    exchange = record.get("exchange")
    if exchange not in (None, FILES, SHUFFLE):
        raise CheckerError(f"{folder / RUN_FILE}: unknown exchange {exchange!r}; {folder} "
                           "cannot be resumed")
    return RunDir(folder.resolve(), identity, record["partitions"], exchange)


def resume(path: str | os.PathLike, identity: dict[str, Any],
           partitions: int | None, n_actions: int) -> tuple[RunDir, Progress]:
    """`inspect`, verify every durable level against its record, then remove what a
    killed run left unfinished beyond them. Nothing is removed unless all verify."""
    run = inspect(path, identity, partitions)
    levels = _level_folders(run.path)
    progress = Progress.none_yet(n_actions)
    recorded = [k for k, folder in levels.items() if (folder / RECORD).exists()]
    durable = max(recorded, default=-1)
    run_sizes: dict[int, dict[str, int]] = {}
    for k in range(durable + 1):
        if k not in levels:
            raise CheckerError(f"{run.level_path(k)}: missing, but level {durable} is recorded; "
                               f"{run.path} cannot be resumed")
        counts, run_sizes[k] = _verify(levels[k], k, n_actions)
        progress.add(counts)
    keep = _verify_runs(run, durable, run_sizes)
    unfinished = [k for k in levels if k > durable]
    if any(k > durable + 1 for k in unfinished):
        k = min(k for k in unfinished if k > durable + 1)
        raise CheckerError(f"{run.level_path(k)}: a level after {run.level_path(durable + 1)}, "
                           f"which has no record; {run.path} cannot be resumed")
    buckets = [visited_runs.bucket_folder(run.path, b) for b in range(run.partitions)]
    exchanges = sorted((run.path / exchange.EXCHANGE).glob("level=*"))
    foreign = [f for k in unfinished for f in _not_ours(levels[k], _LEVEL_FILES)] \
        + [f for folder in exchanges for f in _not_ours(folder, _EXCHANGE_FILES)] \
        + [f for folder in buckets for f in _not_ours(folder, _RUN_FILES)] \
        + [f for f in _entries(run.path / exchange.EXCHANGE) if f not in exchanges]
    if foreign:  # resume deletes only what a run wrote: nothing is deleted
        raise CheckerError(f"{foreign[0]}: not written by ctmc, in a part of {run.path} that "
                           "resuming clears; move it out to resume (nothing was deleted)")
    for k in unfinished:  # written by the killed run, never recorded
        _remove_ours(levels[k], _LEVEL_FILES)
    for folder in exchanges:  # no level needs them
        _remove_ours(folder, _EXCHANGE_FILES)
    with contextlib.suppress(OSError):
        (run.path / exchange.EXCHANGE).rmdir()
    for folder in buckets:  # runs written by the killed run, or replaced
        for entry in _entries(folder):
            if entry.name not in keep or _TEMPORARY.match(entry.name):
                entry.unlink()
    for k in range(durable + 1):
        for entry in levels[k].iterdir():
            if _TEMPORARY.match(entry.name):
                entry.unlink()
    return run, progress


def _verify_runs(run: RunDir, durable: int, sizes: dict[int, dict[str, int]]) -> set[str]:
    """The visited runs levels 0..durable need, each there with its recorded size (none
    with the shuffle exchange, whose executors keep the visited set)."""
    keep: set[str] = set()
    if run.exchange == SHUFFLE:
        return keep
    for lo, hi in visited_runs.schedule(durable + 1):
        name = visited_runs.run_name((lo, hi))
        keep.add(name)
        for bucket in range(run.partitions):
            path = visited_runs.bucket_folder(run.path, bucket) / name
            size = path.stat().st_size if path.is_file() else None
            if size != sizes[hi].get(str(bucket)):
                raise CheckerError(f"{path}: {'missing' if size is None else 'changed'} "
                                   f"(level {hi}'s record names it); {run.path} cannot be "
                                   "resumed")
    return keep


# --- what resuming may delete: only the names ctmc writes --------------------------------

_LEVEL_FILES = re.compile(r"^(part-\d+\.parquet|_ctmc_level\.json|\..*\.tmp)$")
_EXCHANGE_FILES = re.compile(r"^(from-\d+\.u64|\..*\.tmp)$")
_RUN_FILES = re.compile(r"^(L\d+-\d+\.u64|\..*\.tmp)$")


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _not_ours(folder: Path, ours: re.Pattern[str]) -> list[Path]:
    """What in `folder` ctmc did not write: a name it never uses, or a folder."""
    return [f for f in _entries(folder) if not (f.is_file() and ours.match(f.name))]


def _remove_ours(folder: Path, ours: re.Pattern[str]) -> None:
    """Delete the files in `folder` that ctmc writes, and the folder once it is empty;
    anything else stays (the folder too, then)."""
    for f in _entries(folder):
        if f.is_file() and ours.match(f.name):
            f.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


# --- verifying ---------------------------------------------------------------------

def _verify(folder: Path, level: int, n_actions: int) -> tuple[LevelCounts, dict[str, int]]:
    """Level `level`'s counts and its visited runs' sizes by bucket, if its files are
    exactly those its record describes."""
    path = folder / RECORD
    record = unseal(path, read_json(path, f"{folder}: level {level} has no record"))
    files, runs = record.get("files"), record.get("runs")
    if record.get("level") != level or not isinstance(files, dict) or not isinstance(runs, dict):
        raise CheckerError(f"{path}: malformed record")
    present = {f.name: f for f in _data_files(folder)}
    for name in sorted(set(files) | set(present)):
        if name not in present:
            raise CheckerError(f"{folder / name}: missing (level {level}'s record names it)")
        if name not in files:
            raise CheckerError(f"{folder / name}: not in level {level}'s record (a file added "
                               "after the level was written)")
        if _describe(present[name]) != files[name]:
            raise CheckerError(f"{folder / name}: checksum mismatch: the file changed after "
                               "the level was written")
    try:
        counts = LevelCounts(**record["counts"])
    except TypeError:
        raise CheckerError(f"{path}: malformed counts") from None
    if counts.states != sum(f["rows"] for f in files.values()) or (
            level and (len(counts.enabled) != n_actions or len(counts.new_states) != n_actions)):
        raise CheckerError(f"{path}: its counts do not match its files")
    return counts, runs


def _data_files(folder: Path) -> list[Path]:
    """The Parquet files of a level (not its record, not temporary files)."""
    return sorted(f for f in folder.iterdir()
                  if f.is_file() and not f.name.startswith((".", "_")))


def _describe(path: Path) -> dict[str, Any]:
    """A data file's size, row count (from its Parquet footer) and SHA-256."""
    sha = file_sha256(path)
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception:  # noqa: BLE001 - any unreadable footer is the same verdict
        raise CheckerError(f"{path}: not a readable Parquet file") from None
    return {"bytes": path.stat().st_size, "rows": rows, "sha256": sha}


def _level_folders(folder: Path) -> dict[int, Path]:
    found = {}
    for entry in folder.iterdir():
        match = _LEVEL_DIR.match(entry.name)
        if match and entry.is_dir():
            found[int(match.group(1))] = entry
    return dict(sorted(found.items()))
