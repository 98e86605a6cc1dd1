"""Files that survive a crash and betray tampering: what checkpoints and run directories
are made of.

- `write_json` replaces a file atomically and synced: a reader sees the old file
  or the new one, never half of either; `write_bytes` does so for data files that
  several processes may write at once (each through its own temporary name).
- `seal` adds a SHA-256 of a record to the record; `unseal` refuses one whose
  contents no longer match it (edited by hand, damaged, truncated).
- `file_sha256` hashes a data file in chunks.
- `same_identity` refuses to resume a search that was started for something else,
  naming the first key that differs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from checker.errors import CheckerError

_CHUNK = 1 << 24


def write_json(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path`, atomically and durably."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_bytes(path: Path, data: bytes | memoryview | list[memoryview],
                sync: bool = True) -> None:
    """Replace `path` with `data` (or the concatenation of its parts) atomically (a
    process rewriting the same bytes under the same name, as a retried task does, harms
    no reader) and, if `sync`, synced to disk before it gets its name."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        for part in data if isinstance(data, list) else [data]:
            f.write(part)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def write_bytes_to_sync(path: Path, data: bytes | memoryview,
                        unsynced: list[Path] | None) -> None:
    """`write_bytes`, synced now when `unsynced` is None, else added to `unsynced` for
    `sync_files` to sync with the rest of its batch."""
    write_bytes(path, data, sync=unsynced is None)
    if unsynced is not None:
        unsynced.append(path)


def sync_files(paths: list[Path]) -> None:
    """Sync files written with `sync=False`. Writing a batch of small files and then
    syncing them costs less than syncing each as it is written: each sync commits the
    filesystem's journal, and creating the next file waits for that commit."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_json(path: Path, missing: str) -> Any:
    """The JSON in `path`; `missing` says what its absence means."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckerError(f"{missing} (no {path.name})") from None
    except (OSError, ValueError) as exc:
        raise CheckerError(f"{path}: cannot read: {exc}") from None


def seal(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with a `checksum` of its contents."""
    return {**body, "checksum": _checksum(body)}


def unseal(path: Path, record: Any) -> dict[str, Any]:
    """The sealed record read from `path`, without its checksum, if the checksum holds."""
    if not isinstance(record, dict):
        raise CheckerError(f"{path}: not a ctmc record")
    body = {k: v for k, v in record.items() if k != "checksum"}
    if record.get("checksum") != _checksum(body):
        raise CheckerError(f"{path}: checksum mismatch: the file was edited or damaged after "
                           "it was written")
    return body


def file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            sha.update(chunk)
    return sha.hexdigest()


def same_identity(folder: Path, recorded: Any, identity: dict[str, Any]) -> None:
    """Refuse to resume `folder`, written for `recorded`, for a search of `identity`."""
    expected = json.loads(json.dumps(identity))
    if not isinstance(recorded, dict):
        raise CheckerError(f"{folder}: records no identity; it cannot be resumed")
    for key in sorted(set(recorded) | set(expected)):
        if recorded.get(key) != expected.get(key):
            raise CheckerError(
                f"cannot resume {folder}: it was written for another search ({key} is "
                f"{_show(recorded.get(key))} there, {_show(expected.get(key))} here)")


def sync_folder(path: Path) -> None:
    """Make the renames in `path` durable (a no-op where folders cannot be synced)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
