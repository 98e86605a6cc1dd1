"""The two versions `ctmc diff` compares: the user's files as they are (head) and BASE.

BASE is a git revision of the repository that holds the models, or a folder holding
an older copy of that repository. A revision is exported with `git archive` into a
temporary folder of ctmc's own, which is removed afterwards: the user's checkout, its
index and its `.git` are only read (decision 0025).

The checker is the one running: only the spec and its models come from BASE. A spec
registered in a package (`spec.SPECS`) is taken from BASE when the package lies inside
the repository; a spec module beside a model file comes with the model's folder.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.errors import CheckerError
from checker.registry import SPEC_PACKAGES


class VersionError(CheckerError):
    """BASE cannot be read: not a revision nor a folder, or git refused."""


@dataclass(frozen=True)
class Version:
    """Where one version's files are: `root` stands for the repository's top folder, and
    `import_path` holds the spec packages this version imports first ("" for none)."""

    root: Path
    import_path: str = ""
    exported: bool = False  # `root` is a temporary export, gone after the run

    def rehome(self, meta: dict[str, Any], head_root: Path) -> None:
        """Point a file's #meta (spec reference, model file) from an export, which is
        removed after the run, to the same path in the repository, where a checkout of
        BASE puts the file again."""
        if not self.exported:
            return
        for key in ("spec_ref", "model_file"):
            value = meta.get(key)
            if isinstance(value, str) and value.startswith(f"{self.root}{os.sep}"):
                meta[key] = str(head_root / value[len(f"{self.root}{os.sep}"):])

    def place(self, head_path: Path, head_root: Path) -> Path:
        """The file at `head_path` (under `head_root`) as this version has it."""
        return self.root / head_path.resolve().relative_to(head_root)


def repository_root(folder: Path) -> Path:
    """The top of the git repository holding `folder`; the current folder outside git."""
    try:
        done = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, check=False)
    except OSError:  # no git at all: the files are compared as folders
        return Path.cwd().resolve()
    if done.returncode != 0:
        return Path.cwd().resolve()
    return Path(done.stdout.strip()).resolve()


@contextmanager
def base_version(base: str, head_root: Path) -> Iterator[Version]:
    """BASE's files for the length of the `with`: the folder itself, or the revision
    exported into a temporary folder removed at the end."""
    if not base.strip():  # Path("") would be the current folder
        raise VersionError("BASE is empty: give a git revision or a folder")
    folder = Path(base)
    commit = None if folder.is_dir() else _commit(base, head_root)
    scratch = Path(tempfile.mkdtemp(prefix="ctmc-diff-"))
    try:
        tree = folder.resolve()
        if commit is not None:
            tree = scratch / "tree"
            tree.mkdir()
            _export(commit, head_root, tree)
        yield Version(tree, _import_path(tree, head_root, scratch / "imports"),
                      exported=commit is not None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _commit(base: str, head_root: Path) -> str:
    """BASE as a commit id, or one line saying why it is none."""
    if base.startswith("-"):
        raise VersionError(f"BASE {base!r} is not a git revision nor a folder")
    try:
        done = subprocess.run(["git", "-C", str(head_root), "rev-parse", "--verify", "--quiet",
                               f"{base}^{{commit}}"], capture_output=True, text=True,
                              check=False)
    except OSError as exc:
        raise VersionError(f"BASE {base!r} is not a folder, and git cannot run to read it as "
                           f"a revision: {exc.strerror or exc}") from None
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        where = (f" (git: {said[-1]})" if said else "") if (head_root / ".git").exists() \
            else f" ({head_root} is not a git repository)"
        raise VersionError(f"BASE {base!r} is not a git revision nor a folder{where}")
    return done.stdout.strip()


def _export(commit: str, head_root: Path, into: Path) -> None:
    """The revision's files (as `git archive` gives them) written under `into`."""
    done = subprocess.run(["git", "-C", str(head_root), "archive", "--format=tar", commit],
                          capture_output=True, check=False)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise VersionError(f"git archive {commit[:12]} failed: {why[-1] if why else 'no reason'}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(into, filter="data")


def _import_path(tree: Path, head_root: Path, links: Path) -> str:
    """A folder of links to this version's copy of each spec package that lies inside the
    repository, so a child process finds BASE's before the installed one (and nothing
    else of BASE: the checker stays the running one)."""
    entries: list[str] = []
    for package in SPEC_PACKAGES:
        found = importlib.util.find_spec(package)
        places = [] if found is None else list(found.submodule_search_locations or [])
        for place in places:
            try:
                inside = Path(place).resolve().relative_to(head_root)
            except ValueError:  # installed elsewhere: not part of the compared files
                continue
            old = tree / inside
            if not old.is_dir():
                continue
            links.mkdir(exist_ok=True)
            (links / package).symlink_to(old, target_is_directory=True)
            entries.append(str(links))
            break
    return os.pathsep.join(dict.fromkeys(entries))
