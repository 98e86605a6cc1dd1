"""Files the user asked for (traces, HTML pages, graphs): refused before any work when
they could not be written, and replaced atomically, so a failed write never leaves
half a file nor destroys the file that was there."""

from __future__ import annotations

import os
from pathlib import Path

from checker.errors import CheckerError


class OutputError(CheckerError):
    """An output file that cannot be written (the CLI's exit 2)."""


def check_writable(path: str | os.PathLike, what: str, *, make_folders: bool = True) -> None:
    """Refuse an output path before the work that would write it: empty, a folder, under
    a regular file, in a missing folder (unless `make_folders`), or in a folder this
    user cannot write."""
    target = Path(path)
    if not str(path).strip() or target.name in ("", ".", ".."):
        raise OutputError(f"{what}: {str(path)!r} is not a file name")
    if target.is_dir():
        raise OutputError(f"{what}: {target} is a folder")
    folder = target.parent
    if not make_folders and not folder.exists():
        raise OutputError(f"{what}: the folder {folder} does not exist")
    while not folder.exists():  # the folders replace_text would create
        folder = folder.parent
    if not folder.is_dir():
        raise OutputError(f"{what}: {target} lies under {folder}, which is a file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: cannot write in {folder} (permission denied)")


def check_folder(path: str | os.PathLike, what: str) -> None:
    """Refuse a folder that outputs could not be written into (made if missing)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{what}: {folder} is a file, not a folder")
    check_writable(folder / "index", what)


def replace_text(path: str | os.PathLike, text: str, *, make_folders: bool = True) -> None:
    """Write `text` to `path` through a temporary file beside it and a rename, so a
    reader sees the old file or the new one, never half of either."""
    target = Path(path)
    if make_folders:
        target.parent.mkdir(parents=True, exist_ok=True)
    # a plain open, unlike mkstemp, gives the file the usual permissions (umask)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
