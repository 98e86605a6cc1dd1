"""Files the user asked for (traces, HTML pages, graphs, reports): refused before any work
when they could not be written, and replaced atomically, so a failed write never leaves
half a file nor destroys the file that was there.

ctmc replaces only regular files it wrote itself: each output carries a mark, a line
of its own near its top or, in a Markdown report, its last line (`<!-- written by
ctmc -->` and its DOT and HTML forms); a trace opens as ctmc writes one (`#meta`'s
format, format-description, spec and spec_ref, in that order). A path holding anything
else (the user's file, a symbolic link, a device, a FIFO) is refused, never replaced
(decision 0021). A file that merely mentions the mark, such as a document about it,
is not ctmc's. Whether a missing folder can be made, and whether the folder
takes a file, is tried before the work, by writing a probe and removing it.
"""

from __future__ import annotations

import os
import re
import stat
from contextlib import suppress
from pathlib import Path

from checker.errors import CheckerError

MARK = "written by ctmc"  # what every output ctmc writes carries, on a line of its own
_MARK_LINES = {f"<!-- {MARK} -->".encode(), f"// {MARK}".encode(),
               f'<meta name="generator" content="{MARK}">'.encode()}
_MARK_WITHIN = 8  # first lines looked at: a page's generator tag is its fifth
_TRACE_HEAD = re.compile(  # how every ITF document ctmc writes opens
    rb'\{\s*"#meta"\s*:\s*\{\s*"format"\s*:\s*"ITF"\s*,\s*"format-description"\s*:\s*'
    rb'"[^"\\]*"\s*,\s*"spec"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"spec_ref"\s*:')
_HEAD = 4096  # bytes of an existing file looked at, from each end


class OutputError(CheckerError):
    """An output file that cannot be written (the CLI's exit 2)."""


def check_writable(path: str | os.PathLike, what: str, *, make_folders: bool = True,
                   reads: str | os.PathLike | None = None) -> None:
    """Refuse an output path before the work that would write it: empty, a folder, the
    file the command `reads` (a trace ctmc wrote is its to replace, but not while it is
    the input), an existing file ctmc did not write (or a link, a device, a FIFO), under
    a regular file, in a missing folder (unless `make_folders`), or in a folder where
    no file can be made (tried: permission, a read-only or full file system)."""
    target = Path(path)
    if not str(path).strip() or target.name in ("", ".", ".."):
        raise OutputError(f"{what}: {str(path)!r} is not a file name")
    if target.is_dir() and not target.is_symlink():
        raise OutputError(f"{what}: {target} is a folder")
    if reads is not None and _same_file(target, Path(reads)):
        raise OutputError(f"{what}: {target} is the file being read; choose another name")
    check_replaceable(target, what)
    folder = target.parent
    if not make_folders and not folder.exists():
        raise OutputError(f"{what}: the folder {folder} does not exist")
    existing = folder
    while not existing.exists() and not existing.is_symlink():  # the folders to make
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{what}: {target} lies under {existing}, which is a file")
    check_folder_takes_files(folder, what)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is missing (or unreadable): not one file
        return False


def check_replaceable(target: Path, what: str) -> None:
    """Refuse to replace anything but a regular file that ctmc wrote."""
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the caller says why)
        return
    except OSError as exc:
        raise OutputError(f"{what}: cannot use {target}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise OutputError(f"{what}: {target} is a symbolic link; ctmc replaces only files it "
                          "wrote (give the path it points to, or another name)")
    if not stat.S_ISREG(info.st_mode):
        raise OutputError(f"{what}: {target} is not a regular file ({file_kind(info.st_mode)}); "
                          "ctmc replaces only files it wrote")
    if not written_by_ctmc(target):
        raise OutputError(f"{what}: {target} exists and was not written by ctmc; ctmc "
                          "replaces only its own files (move it, or choose another name)")


def written_by_ctmc(path: Path) -> bool:
    """Whether the file at `path` carries ctmc's mark (module docstring). An empty
    file, such as one a user made with `touch` to reserve the name, counts as ctmc's
    to fill."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD)
            f.seek(max(0, os.fstat(f.fileno()).st_size - _HEAD))
            tail = f.read(_HEAD)
    except OSError:
        return False
    if not head or _TRACE_HEAD.match(head):
        return True
    lines = [line.strip() for line in head.splitlines()[:_MARK_WITHIN]]
    last = tail.rstrip().rpartition(b"\n")[2].strip()
    return last in _MARK_LINES or any(line in _MARK_LINES for line in lines)


def check_folder_takes_files(folder: Path, what: str) -> None:
    """Make `folder` (and its missing parents) and a file in it, then remove all that:
    whatever would stop the real write later (permission, a read-only or full file
    system, a name the system refuses) stops the command now."""
    made: list[Path] = []
    probe = folder / f".ctmc-probe-{os.getpid()}"
    try:
        for parent in reversed([folder, *folder.parents]):
            if not parent.exists():
                parent.mkdir()
                made.append(parent)
        with open(probe, "wb") as f:
            f.write(b"ctmc")
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise OutputError(f"{what}: cannot write in {folder}: {exc.strerror or exc}") from None
    finally:
        with suppress(OSError):  # never made (under a file, say): nothing to remove
            probe.unlink()
        for parent in reversed(made):
            parent.rmdir()


def check_folder(path: str | os.PathLike, what: str) -> None:
    """Refuse a folder of pages that could not be written into (made if missing), or
    whose index.html is not ctmc's to replace."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{what}: {folder} is a file, not a folder")
    check_writable(folder / "index.html", what)


def replace_text(path: str | os.PathLike, text: str, *, make_folders: bool = True) -> None:
    """Write `text` to `path` through a temporary file beside it and a rename, so a
    reader sees the old file or the new one, never half of either. The path is checked
    again (`check_replaceable`), in case something took its place since the work
    began; a failed write (a full disk) is one OutputError line and leaves no folder
    or file behind that was not there."""
    target = Path(path)
    check_replaceable(target, "cannot write")
    made: list[Path] = []
    if make_folders:
        for parent in reversed([target.parent, *target.parent.parents]):
            if not parent.exists():
                try:
                    parent.mkdir()
                except OSError as exc:
                    _remove(made)
                    raise OutputError(f"cannot write {target}: {exc.strerror}") from None
                made.append(parent)
    # a plain open, unlike mkstemp, gives the file the usual permissions (umask)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        _remove(made)
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        _remove(made)
        raise


def _remove(folders: list[Path]) -> None:
    """Remove folders this write made, innermost first (they hold nothing else)."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            pass


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for an error line."""
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"
