"""Checkpoints of the local BFS: a folder from which a killed run resumes exactly.

    DIR/ctmc-checkpoint.json   the marker: this folder is a ctmc checkpoint, and of what
                               (written once, when the folder is taken)
    DIR/manifest.json          the last durable level: each level file's row count and
                               SHA-256, the counters up to that level, and a SHA-256 of
                               the manifest itself; replaced atomically
    DIR/level-K.fps.npy        level K's fingerprints, sorted
    DIR/level-K.parents.npy    each state's parent (index in level K-1)
    DIR/level-K.actions.npy    the action that made it
    DIR/level-K.words.npy      the last level's packed states (hashed fingerprints only):
                               the frontier to expand next

A level's files are written once, synced, and only then named by a new manifest,
so whatever instant the process dies, the folder holds the previous manifest and
every file it names. Saving costs the new levels only, not the whole visited set,
and runs beside the search (`BackgroundSaves`).

On resume every file is checked against the manifest (size in rows, checksum) and
the manifest against its own checksum and the identity of the run asking for it;
any mismatch is one line naming the file or the differing key, and nothing is
deleted. The search only ever writes into a folder it created or one holding its
own marker, and never outside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from checker.engines.durable import (
    file_sha256,
    read_json,
    same_identity,
    seal,
    sync_folder,
    unseal,
    write_json,
)
from checker.engines.explicit.records import LevelSteps
from checker.errors import CheckerError

MARKER = "ctmc-checkpoint.json"
MANIFEST = "manifest.json"
FORMAT = "ctmc-bfs-checkpoint"


@dataclass
class Saved:
    """What a checkpoint holds: the levels, the frontier and the counters up to them."""

    fps: list[np.ndarray]  # per level, sorted
    parents: list[np.ndarray]  # per level, uint32
    actions: list[np.ndarray]  # per level
    frontier: list[np.ndarray]  # the last level's packed words
    init_states: list[tuple[int, ...]]
    generated: int
    enabled: np.ndarray
    new_states: np.ndarray
    seconds: float
    complete: bool  # the last level was expanded and gave nothing new: the search is over
    moved: int | None = None  # successors moved to another representative (older: absent)


@dataclass
class Checkpoint:
    """A checkpoint folder owned by this run; `levels` of them are durable."""

    path: Path
    identity: dict[str, Any]
    levels: int = 0
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # the manifest's
    action_dtype: Any = np.uint16  # of the actions files

    # -- taking a folder ------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, identity: dict[str, Any]) -> Checkpoint:
        """Take a new or empty folder for a new run; anything else is refused."""
        folder = cls.check_new(path)
        made = [p for p in (folder, *folder.parents) if not p.exists()]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_json(folder / MARKER, {"format": FORMAT, "identity": identity})
        except OSError as exc:  # a full disk, say: leave nothing of ours behind
            (folder / f".{MARKER}.tmp").unlink(missing_ok=True)
            for made_folder in made:
                with contextlib.suppress(OSError):
                    made_folder.rmdir()
            raise CheckerError(f"cannot create checkpoint folder {folder}: "
                               f"{exc.strerror or exc}") from None
        return cls(folder, identity)

    @staticmethod
    def check_new(path: str | os.PathLike) -> Path:
        """Refuse a folder a new checkpoint may not take (see `create`); writes nothing."""
        folder = Path(path)
        if folder.exists() and not folder.is_dir():
            raise CheckerError(f"checkpoint folder {folder} is a file")
        if (folder / MARKER).exists():
            raise CheckerError(f"{folder} already holds a checkpoint: continue it with "
                               f"--resume {folder}, or choose another folder")
        leftover = f".{MARKER}.tmp"  # a creation killed before the marker was in place
        if folder.is_dir() and any(p.name != leftover for p in folder.iterdir()):
            raise CheckerError(f"checkpoint folder {folder} is not empty and holds no ctmc "
                               "checkpoint; choose a new or empty folder")
        return folder

    @staticmethod
    def check_identity(path: str | os.PathLike, identity: dict[str, Any]) -> None:
        """Refuse a folder that holds no checkpoint, or one of another search, reading
        only its marker (`open` verifies everything)."""
        folder = Path(path)
        marker = read_json(folder / MARKER, f"{folder} holds no ctmc checkpoint")
        if not isinstance(marker, dict) or marker.get("format") != FORMAT:
            raise CheckerError(f"{folder / MARKER}: not a ctmc BFS checkpoint marker")
        same_identity(folder, marker.get("identity"), identity)

    @classmethod
    def open(cls, path: str | os.PathLike, identity: dict[str, Any], action_dtype: Any
             ) -> tuple[Checkpoint, Saved | None]:
        """The checkpoint in `path`, verified, and what it holds (None: nothing durable
        yet, so the run starts over inside the same folder); action ids are read as
        `action_dtype`."""
        folder = Path(path)
        cls.check_identity(folder, identity)
        if not (folder / MANIFEST).exists():  # no save finished (or it was deleted)
            return cls(folder, identity), None
        manifest = _check_manifest(folder / MANIFEST,
                                   read_json(folder / MANIFEST, f"cannot resume {folder}"))
        same_identity(folder, manifest.get("identity"), identity)
        checkpoint = cls(folder, identity, manifest["levels"], manifest["files"], action_dtype)
        return checkpoint, checkpoint._load(manifest)

    # -- saving ---------------------------------------------------------------------
    def save(self, first: int, fps: list[np.ndarray],
             steps: Sequence[LevelSteps],
             frontier: Sequence[np.ndarray] | None, counters: dict[str, Any]) -> None:
        """Make levels first..first+len(fps)-1 durable, with `frontier` (the last level's
        packed words, one array per word, for hashed fingerprints) and the counters up to
        them. Each level's parents and actions come as chunks and every array is written
        from its own buffer, so a save needs little memory beyond what it writes."""
        last = first + len(fps) - 1
        files = dict(self.files)
        for k, (f, level) in enumerate(zip(fps, steps, strict=True), first):
            files[f"level-{k}.fps.npy"] = _write_array(self.path / f"level-{k}.fps.npy", f)
            with _NpyWriter(self.path / f"level-{k}.parents.npy", np.uint32, (len(f),)) as p, \
                    _NpyWriter(self.path / f"level-{k}.actions.npy", level.action_dtype,
                               (len(f),)) as a:
                for parents, actions in level:
                    p.write(parents)
                    a.write(actions)
            files[p.path.name], files[a.path.name] = p.entry, a.entry
        words = f"level-{last}.words.npy"
        stale = [n for n in files if n.endswith(".words.npy") and n != words]
        for name in stale:
            del files[name]
        if frontier is not None:
            n = len(frontier[0]) if len(frontier) else 0
            with _NpyWriter(self.path / words, np.uint64, (len(frontier), n)) as w:
                for column in frontier:
                    w.write(column)
            files[words] = w.entry
        body = {"format": FORMAT, "identity": self.identity, "levels": last + 1,
                "files": files, **counters}
        write_json(self.path / MANIFEST, seal(body))
        sync_folder(self.path)
        for name in stale:  # no longer named by the manifest: an older frontier
            (self.path / name).unlink(missing_ok=True)
        self.levels, self.files = last + 1, files

    # -- loading --------------------------------------------------------------------
    def _load(self, manifest: dict[str, Any]) -> Saved:
        levels = self.levels

        def array(name: str, dtype: Any) -> np.ndarray:
            entry = self.files.get(name)
            if entry is None:
                raise CheckerError(f"{self.path / MANIFEST}: names no file {name}")
            return _read_array(self.path / name, entry, dtype)

        fps = [array(f"level-{k}.fps.npy", np.uint64) for k in range(levels)]
        parents = [array(f"level-{k}.parents.npy", np.uint32) for k in range(levels)]
        actions = [array(f"level-{k}.actions.npy", self.action_dtype) for k in range(levels)]
        for k in range(levels):
            if not len(fps[k]) == len(parents[k]) == len(actions[k]):
                raise CheckerError(f"{self.path / f'level-{k}.fps.npy'}: level {k}'s files "
                                   "disagree on its size")
        words = f"level-{levels - 1}.words.npy"
        frontier = list(array(words, np.uint64)) if words in self.files else [fps[-1]]
        try:
            return Saved(fps, parents, actions, frontier,
                         [tuple(s) for s in manifest["init_states"]], int(manifest["generated"]),
                         np.array(manifest["enabled"], dtype=np.int64),
                         np.array(manifest["new_states"], dtype=np.int64),
                         float(manifest["seconds"]), bool(manifest["complete"]),
                         None if manifest.get("moved") is None else int(manifest["moved"]))
        except (KeyError, TypeError, ValueError):
            raise CheckerError(f"{self.path / MANIFEST}: malformed counters") from None


class BackgroundSaves:
    """Saves of one checkpoint, run one at a time on a background thread, so hashing,
    writing and syncing overlap the search instead of stopping it.

    The arrays handed to a save are never changed afterwards (each level's arrays are
    new), so the search goes on while they are written. `wait` joins the save in flight
    and re-raises whatever stopped it (a full disk, say), in the searching thread.
    """

    def __init__(self, checkpoint: Checkpoint):
        self.checkpoint = checkpoint
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.failed: tuple[Any, ...] = ()  # what the save that failed was saving

    @property
    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, *args: Any, here: bool = False) -> None:
        """`Checkpoint.save(*args)` in the background, or `here` in this thread (no
        thread to start when memory is short); the previous save must be done."""
        self.wait()
        if here:
            self._save(*args)
            return
        self.thread = threading.Thread(target=self._save, args=args, daemon=True,
                                       name="ctmc-checkpoint")
        try:
            self.thread.start()
        except RuntimeError:  # no memory left for a thread's stack: save here instead
            self.thread = None
            self._save(*args)

    def wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def retry(self) -> None:
        """Save again, here, what the save that failed was saving (once the memory it
        lacked is free, say); a save that fails again raises."""
        if self.failed:
            args, self.failed = self.failed, ()
            self.checkpoint.save(*args)

    def _save(self, *args: Any) -> None:
        try:
            self.checkpoint.save(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the searching thread
            self.error, self.failed = exc, args


# --- files ---------------------------------------------------------------------------

class _NpyWriter:
    """An .npy file of a known shape and dtype written as consecutive chunks, straight
    from their buffers, hashed as it goes; atomic and synced on a clean exit, after
    which `entry` is its manifest entry (a failed write leaves only a hidden .tmp)."""

    SLICE = 1 << 22  # bytes written at a time

    def __init__(self, path: Path, dtype: Any, shape: tuple[int, ...]):
        self.path, self.dtype, self.shape = path, np.dtype(dtype), shape
        self.tmp = path.with_name(f".{path.name}.tmp")
        self.sha = hashlib.sha256()
        self.entry: dict[str, Any] = {}
        self.written = 0

    def __enter__(self) -> _NpyWriter:
        self.f: BinaryIO = open(self.tmp, "wb")
        header = {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
                  "shape": self.shape}
        np.lib.format.write_array_header_1_0(self, header)  # type: ignore[arg-type]
        return self

    def write(self, data: Any) -> None:
        """Append `data`: header bytes, or an array of this file's dtype (a slice at a
        time: a column of a memory-mapped frontier is copied a slice at a time)."""
        if not isinstance(data, np.ndarray):
            self._write_bytes(memoryview(data).cast("B"))
            return
        if data.dtype != self.dtype:
            raise TypeError(f"{self.path.name}: a {data.dtype} chunk in a {self.dtype} file")
        flat = data.reshape(-1)
        step = max(1, self.SLICE // self.dtype.itemsize)
        for lo in range(0, len(flat), step):
            self._write_bytes(np.ascontiguousarray(flat[lo:lo + step]).data.cast("B"))
        self.written += flat.size

    def _write_bytes(self, view: memoryview) -> None:
        self.sha.update(view)
        self.f.write(view)

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            if kind is None:
                self.f.flush()
                os.fsync(self.f.fileno())
        finally:
            self.f.close()
        if kind is not None:
            return
        expected = int(np.prod(self.shape))
        if self.written != expected:
            raise ValueError(f"{self.path.name}: {self.written} values written of {expected}")
        os.replace(self.tmp, self.path)
        self.entry = {"rows": int(self.shape[-1]) if self.shape else 0,
                      "shape": list(self.shape), "dtype": self.dtype.str,
                      "sha256": self.sha.hexdigest()}


def _write_array(path: Path, array: np.ndarray) -> dict[str, Any]:
    """Write `array` as .npy, atomically and synced; its manifest entry."""
    with _NpyWriter(path, array.dtype, array.shape) as out:
        out.write(array)
    return out.entry


def _read_array(path: Path, entry: dict[str, Any], dtype: Any) -> np.ndarray:
    """The array in `path` if it is exactly what the manifest entry recorded."""
    try:
        if file_sha256(path) != entry.get("sha256"):
            raise CheckerError(f"{path}: checksum mismatch: the file changed since it was "
                               "written; this checkpoint cannot be resumed")
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CheckerError(f"{path}: missing (the manifest names it)") from None
    except (OSError, ValueError) as exc:
        raise CheckerError(f"{path}: cannot read: {exc}") from None
    if list(array.shape) != entry.get("shape") or array.dtype != np.dtype(dtype):
        raise CheckerError(f"{path}: holds {array.shape} {array.dtype}, the manifest "
                           f"recorded {entry.get('shape')} {np.dtype(dtype)}")
    return array


def _check_manifest(path: Path, record: Any) -> dict[str, Any]:
    manifest = unseal(path, record)
    files = manifest.get("files")
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("levels"), int) \
            or manifest["levels"] < 1 or not isinstance(files, dict) \
            or not all(isinstance(entry, dict) for entry in files.values()):
        raise CheckerError(f"{path}: not a ctmc BFS checkpoint manifest")
    return manifest
