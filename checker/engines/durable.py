"""Files that survive a crash and betray tampering: what checkpoints and run directories
are made of.

- `write_json` replaces a file atomically and synced: a reader sees the old file
  or the new one, never half of either; `write_bytes` does so for data files that
  several processes may write at once (each through its own temporary name).
- `seal` adds a SHA-256 of a record to the record; `unseal` refuses one whose
  contents no longer match it (edited by hand, damaged, truncated).
- `file_sha256` hashes a data file in chunks.
- What is read must be a regular file (a FIFO would block the reader, a link to
  /dev/zero never end it), and a JSON record at most `RECORD_LIMIT` bytes.
- `same_identity` refuses to resume a search that was started for something else,
  naming the first key that differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from checker.errors import CheckerError
from checker.outputs import file_kind

_CHUNK = 1 << 24
RECORD_LIMIT = 1 << 28  # bytes; ctmc's records are far smaller, so a bigger file is not one


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
        size = regular_file(path).st_size
        if size > RECORD_LIMIT:
            raise CheckerError(f"{path}: {size:,} bytes, too big for a ctmc record")
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckerError(f"{missing} (no {path.name})") from None
    except RecursionError:
        raise CheckerError(f"{path}: cannot read: JSON nested too deeply") from None
    except (OSError, ValueError) as exc:
        raise CheckerError(f"{path}: cannot read: {exc}") from None


def regular_file(path: Path) -> os.stat_result:
    """`path`'s status, if it is a regular file (through links: what a read would open);
    anything else is one CheckerError line, before a read that could block or not end."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise CheckerError(f"{path}: not a regular file ({file_kind(info.st_mode)})")
    return info


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
    regular_file(path)
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
